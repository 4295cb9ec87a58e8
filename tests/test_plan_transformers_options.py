"""``oomkit plan --runtime transformers`` end to end: estimate's transformers options, the
JSON contract, one-line usage errors, and the printed snippet fed back to ``estimate``."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

#: the plan --json fields other tools read (kept stable; new ones may only be added)
_TOP = {
    "schema_version", "model", "request", "hardware", "target_ctx", "fits", "plans",
    "rejected", "impossible", "notes", "n_estimates",
}  # fmt: skip
_PLAN = {
    "runtime", "settings", "level", "changes", "margin_bytes", "command", "prepare", "devices",
    "host", "runtime_details", "speed", "quality",
}  # fmt: skip


def _oomkit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "oomkit", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _plan(*args: str) -> dict[str, Any]:
    res = _oomkit("plan", "--runtime", "transformers", *args, "--json")
    assert res.returncode == 0, res.stderr
    doc: dict[str, Any] = json.loads(res.stdout)
    assert set(doc) >= _TOP
    assert doc["plans"]
    assert all(set(p) >= _PLAN for p in doc["plans"])
    return doc


def snippet_flags(code: str) -> list[str]:
    """The ``oomkit estimate`` flags of a plan's transformers snippet, read from its Python
    (``ast``): from_pretrained's dtype / quantization_config / device_map / max_memory /
    attn_implementation, the batch of prompts, the tokenizer's max_length (the prompt) and
    generate()'s max_new_tokens."""
    tree = ast.parse(code)
    flags: list[str] = []
    device_map = "none"  # no device_map: from_pretrained, then model.to("cuda")
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            kw = {k.arg: k.value for k in node.keywords if k.arg}
            if node.func.attr == "from_pretrained" and (
                "dtype" in kw or "quantization_config" in kw
            ):
                dtype = kw.get("dtype")
                if isinstance(dtype, ast.Attribute):
                    flags += ["--quant", {"bfloat16": "bf16", "float16": "fp16"}.get(
                        dtype.attr, "fp32")]  # fmt: skip
                cfg = kw.get("quantization_config")
                if isinstance(cfg, ast.Call):
                    bnb = {
                        k.arg: k.value.value
                        for k in cfg.keywords
                        if isinstance(k.value, ast.Constant)
                    }
                    q = "int8" if bnb.get("load_in_8bit") else bnb["bnb_4bit_quant_type"]
                    flags += ["--quant", str(q)]
                if "device_map" in kw:  # {"": 0}: every module on GPU 0, as .to("cuda")
                    dm = ast.literal_eval(kw["device_map"])
                    device_map = "none" if dm == {"": 0} else dm
                caps = kw.get("max_memory")
                if isinstance(caps, ast.DictComp):
                    flags += ["--max-memory", f"{ast.literal_eval(caps.value)}B"]
                elif isinstance(caps, ast.Dict):
                    pairs = zip(caps.keys, caps.values, strict=True)
                    flags += ["--max-memory", ",".join(
                        f"{ast.literal_eval(k)}={ast.literal_eval(v)}B" for k, v in pairs  # type: ignore[arg-type]
                    )]  # fmt: skip
                if "attn_implementation" in kw:
                    attn = ast.literal_eval(kw["attn_implementation"])
                    flags += ["--attn-implementation", str(attn)]
            if node.func.attr == "generate":
                flags += ["--max-new-tokens", str(ast.literal_eval(kw["max_new_tokens"]))]
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "tokenizer":
            kw = {k.arg: k.value for k in node.keywords if k.arg}
            flags += ["--ctx", str(ast.literal_eval(kw["max_length"]))]
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "prompts":
            assert isinstance(node.value, ast.BinOp)
            flags += ["--batch", str(ast.literal_eval(node.value.right))]
    return [*flags, "--device-map", device_map]


def test_batch_and_new_tokens_plan_keeps_the_prompt_and_lowers_the_batch() -> None:
    doc = _plan("llama-3.1-8b", "--gpu", "rtx-4090", "--ctx", "8k", "--parallel", "8",
                "--max-new-tokens", "512")  # fmt: skip
    best = doc["plans"][0]
    s = best["settings"]
    assert s["max_new_tokens"] == 512
    assert s["ctx"] == 8192  # the prompt before the batch
    assert 1 <= s["batch"] < 8
    assert f"batch {s['batch']} (--batch {s['batch']}; asked 8" in " ".join(best["changes"])
    assert "max_new_tokens=512" in best["command"]
    assert f'prompts = ["..."] * {s["batch"]}' in best["command"]


def test_eager_attention_is_planned_as_sdpa_when_eager_does_not_fit() -> None:
    doc = _plan("llama-3.1-8b", "--gpu", "rtx-4090", "--ctx", "8k",
                "--attn-implementation", "eager")  # fmt: skip
    best = doc["plans"][0]
    assert best["settings"]["attn_implementation"] == "sdpa"
    assert best["settings"]["ctx"] == 8192
    assert "attn_implementation='sdpa'" in best["command"]
    assert any("asked eager" in c for c in best["changes"])
    # eager at the asked prompt was tried and does not fit (it is why sdpa is proposed)
    assert any("ctx 8192" in r["description"] for r in doc["rejected"])


def test_device_map_none_keeps_every_weight_on_the_gpu() -> None:
    doc = _plan("llama-3.1-8b", "--gpu", "rtx-4060", "--ctx", "4k", "--device-map", "none")
    assert doc["plans"][0]["settings"]["quant"] != "bf16"  # 16 GB of bf16 weights on 8 GB
    for p in doc["plans"]:
        assert p["host"]["weights_bytes"] == 0
        bnb = p["settings"]["quant"] in ("int8", "nf4")  # bitsandbytes refuses .to()
        assert ('device_map={"": 0}' if bnb else 'model = model.to("cuda")') in p["command"]


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["--max-new-tokens", "0"], "--max-new-tokens"),
        (["--max-memory", "0=x"], "--max-memory"),
        (["--max-memory", "24GiB,"], "--max-memory"),
        (["--device-map", "balanced"], "--device-map"),
    ],
)
def test_bad_values_are_one_line_usage_errors_as_in_estimate(args: list[str], flag: str) -> None:
    common = ["llama-3.1-8b", "--runtime", "transformers", "--gpu", "rtx-4090", *args]
    planned = _oomkit("plan", *common)
    estimated = _oomkit("estimate", *common)
    for res in (planned, estimated):
        assert res.returncode == 2, res.stderr
        assert "Traceback" not in res.stderr
        assert flag in res.stderr
    if flag != "--device-map":  # (click names its own command in the usage lines)
        assert planned.stderr.strip().splitlines()[-1] == estimated.stderr.strip().splitlines()[-1]
        assert len(planned.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "args",
    [
        ["--device-map", "auto"],
        ["--max-memory", "20GiB"],
        ["--max-new-tokens", "64"],
        ["--attn-implementation", "eager"],
    ],
)
def test_transformers_options_with_another_runtime_are_refused(args: list[str]) -> None:
    res = _oomkit("plan", "llama-3.1-8b", "--runtime", "llama.cpp", "--gpu", "rtx-4090", *args)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert "Traceback" not in res.stderr
    assert args[0] in lines[-1]
    assert "transformers" in lines[-1]


@pytest.mark.parametrize(
    "args",
    [
        ("llama-3.1-8b", "--gpu", "rtx-4090", "--ctx", "8k", "--parallel", "8",
         "--max-new-tokens", "512"),
        ("llama-3.1-8b", "--gpu", "rtx-4090", "--ctx", "8k", "--attn-implementation", "eager"),
        ("llama-3.1-8b", "--gpu", "rtx-4060", "--ctx", "4k"),  # bitsandbytes, device_map none
        ("llama-3.1-8b", "--gpu", "rtx-4060", "--ctx", "4k", "--device-map", "auto"),
        ("llama-3.1-70b", "--gpu", "rtx-4090", "--ram", "128GiB", "--ctx", "2k",
         "--max-memory", "20GiB"),  # device_map="auto" offload under a max_memory cap
    ],
)  # fmt: skip
def test_the_printed_snippet_estimates_to_the_plan(args: tuple[str, ...]) -> None:
    """Every plan's snippet, read back as estimate flags, estimates to the plan's memory and
    to a clear "fits" (a plan is never tight)."""
    _check_roundtrip(_plan(*args), args[0], args[args.index("--gpu") + 1])


def test_a_gptq_checkpoint_loads_as_saved_and_estimates_to_the_plan(tmp_path: Path) -> None:
    """A pre-quantized checkpoint (its config.json's quantization_config) is planned as it
    ships: the snippet passes dtype="auto", no BitsAndBytesConfig, and estimates back."""
    config = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
        "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072,
        "torch_dtype": "float16", "tie_word_embeddings": False, "hidden_act": "silu",
        "quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128},
    }  # fmt: skip
    (tmp_path / "config.json").write_text(json.dumps(config))
    doc = _plan(str(tmp_path), "--gpu", "rtx-4060", "--ctx", "4k", "--offline")
    for p in doc["plans"]:
        assert 'dtype="auto"' in p["command"]
        assert "BitsAndBytesConfig" not in p["command"]
    _check_roundtrip(doc, str(tmp_path), "rtx-4060", "--offline")


def _check_roundtrip(doc: dict[str, Any], model: str, gpu: str, *extra: str) -> None:
    for p in doc["plans"]:
        flags = snippet_flags(p["command"])
        res = _oomkit("estimate", model, "-r", "transformers", "--gpu", gpu, *flags, *extra,
                      "--json")  # fmt: skip
        assert res.returncode == 0, (flags, res.stderr)
        est = json.loads(res.stdout)
        assert est["verdict"] == "fits", flags
        assert [d["total_bytes"] for d in est["devices"]] == [
            d["total_bytes"] for d in p["devices"]
        ], flags
        assert est["host"]["weights_bytes"] == p["host"]["weights_bytes"]
        for key in ("quant", "ctx", "batch", "max_new_tokens", "attn_implementation"):
            assert est["settings"].get(key) == p["settings"].get(key), key


def test_plan_help_lists_the_transformers_options() -> None:
    out = _oomkit("plan", "--help").stdout
    for flag in ("--device-map", "--max-memory", "--max-new-tokens", "--attn-implementation"):
        assert flag in out


@pytest.mark.parametrize("command", ["plan", "estimate"])
def test_transformers_inference_options_are_refused_with_train(command: str) -> None:
    res = _oomkit(command, "llama-3.1-8b", "--train", "lora", "--gpu", "rtx-4090",
                  "--device-map", "auto")  # fmt: skip
    assert res.returncode == 2
    assert "--device-map is an inference option" in res.stderr
    assert "Traceback" not in res.stderr
