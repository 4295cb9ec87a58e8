"""Random VALID option combinations for ``estimate``, ``plan`` and ``doctor``: no crash, no
self-contradicting answer.

:mod:`fuzz_cli` draws odd values, so most of its runs stop at validation (exit 2). This one draws
every value from what oomkit itself accepts: catalog models and GPUs (single, ``2x``, mixed
lists), the runtimes, each runtime's generation boundaries (``generation_rows_*``: the first day
of every generation, one day either side, its first release, llama.cpp builds), contexts (1,
small, the model's maximum, one above it, ``max``), the quants and KV types of each runtime, and
for every other option the values its click declaration allows (choices, ranges, counts; read
from the click group as fuzz_cli does, so new options are covered without edits). ``doctor``
gets OOM messages in the runtimes' own wording with drawn numbers.

A run fails when ``main`` raises, prints "internal error" or a traceback, exits outside 0-4, or
(with ``--json``) prints a document that does not parse, lacks a field /work/shared/DESIGN.md
promises, or contradicts itself (:func:`check_estimate`, :func:`check_plan`,
:func:`check_doctor`). Each distinct problem (an internal error grouped by the frame that
raised it) is printed once with a command line that reproduces it.

Usage (from the repository root)::

    python benchmarks/fuzz_valid.py --n 300 --seed 1
    python benchmarks/fuzz_valid.py --n 300 --seed 2 --commands estimate --why 10  # + refusals
    python benchmarks/fuzz_valid.py --n 40 --seed 3 --commands gpus,models  # ~1 s a run

Exit 1 when any problem is found.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import io
import json
import os
import random
import re
import shlex
import sys
import traceback
from collections.abc import Mapping, Sequence
from typing import Any

RUNTIMES = ("llama.cpp", "ollama", "vllm", "sglang", "transformers")
#: options never drawn: help text, a loop, and those set by :func:`draw` itself
SKIP = frozenset({"help", "watch", "offline", "as_json", "json", "enable_expert_parallel"})
GGUF_KV = ("f16", "bf16", "f32", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl")
KV = {
    "llama.cpp": GGUF_KV,
    "ollama": ("f16", "q8_0", "q4_0"),
    "vllm": ("auto", "fp8", "fp8_e4m3", "fp8_e5m2"),
    "sglang": ("auto", "fp8_e4m3", "fp8_e5m2"),
    "transformers": ("auto", "bf16", "fp16"),
}
SIZES = ("512MiB", "8GiB", "16GiB", "24GB", "24GiB", "48GiB", "80GiB", "192GiB")
#: values of free-text or count options, by click parameter name (others: :func:`pool`)
NAMED: Mapping[str, tuple[str, ...]] = {
    "n_gpu_layers": ("-1", "0", "1", "10", "999"),
    "draft_n_gpu_layers": ("0", "1", "99"),
    "n_cpu_moe": ("0", "1", "4", "99"),
    "parallel": ("1", "2", "4", "16", "64"),
    "max_num_seqs": ("1", "8", "64", "256", "1024"),
    "batch_size": ("32", "512", "2048", "8192"),
    "ubatch": ("1", "128", "512", "2048"),
    "block_size": ("1", "8", "16", "32", "256"),
    "max_num_batched_tokens": ("1", "512", "2048", "8192", "65536"),
    "max_new_tokens": ("1", "256", "4096"),
    "tp": ("1", "2", "4", "8"),
    "pp": ("1", "2", "4"),
    "gpu_memory_utilization": ("0.05", "0.5", "0.9", "0.95", "1"),
    "mem_fraction_static": ("0.05", "0.5", "0.88", "1"),
    "cpu_offload_gb": ("0", "1", "4", "64"),
    "fragmentation": ("0", "0.05", "0.3"),
    "tensor_split": ("1", "1,1", "3,1", "1,0"),
    "device": ("0", "0,1", "1,0", "CUDA1,CUDA0"),
    "draft_device": ("0", "1", "0,1"),
    "max_memory": ("20GiB", "0=10GiB,1=20GiB", "1GiB"),
    "override_tensor": ("exps=CPU", r"\.ffn_.*_exps\.=CPU", "blk\\.0\\.=CPU"),
    "draft_model": ("qwen2.5-0.5b", "llama-3.2-1b", "gemma-3-270m"),
    "draft_quant": ("Q4_K_M", "Q8_0", "F16"),
    "lora_targets": ("q_proj,v_proj", "all-linear", "q_proj"),
    "transformers_version": ("4.36", "4.45", "4.57", "5.0", "5.2"),
    "train_micro_batch": ("1", "2", "8", "64"), "train_seq": ("1", "512", "2048", "32768"),
    "train_gpus": ("1", "2", "8"), "train_nodes": ("1", "2"),
    "train_lora_rank": ("1", "16", "256"),
    "train_lora_targets": ("q_proj,v_proj", "all-linear"),
    "train_grad_accum": ("1", "8"),
    "train_transformers_version": ("4.45", "4.57", "5.0", "5.2"),
    "train_fragmentation": ("0", "0.1"),
    # data and expert parallelism are refused unless 1 (not modelled); a run with them drawn is
    # a refusal by design, which tests/test_hardening*.py cover
    "data_parallel_size": ("1",), "expert_parallel_size": ("1",),
    "speculative_config": (
        '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}',
        '{"method": "draft_model", "model": "qwen2.5-0.5b", "num_speculative_tokens": 4}',
    ),
    "speculative_model": ("[ngram]", "qwen2.5-0.5b"),
    "num_speculative_tokens": ("1", "3", "5"),
    "speculative_algorithm": ("NGRAM",),
    "speculative_draft_model_path": ("qwen2.5-0.5b", "llama-3.2-1b"),
    "speculative_num_steps": ("1", "3"), "speculative_eagle_topk": ("1", "4"),
    "speculative_num_draft_tokens": ("2", "4", "8"),
}  # fmt: skip
#: an option that needs another (the runtime refuses it alone): drawn with it
NEEDS: Mapping[str, str] = {
    "num_speculative_tokens": "speculative_model",
    "speculative_num_steps": "speculative_algorithm",
    "speculative_eagle_topk": "speculative_algorithm",
    "speculative_num_draft_tokens": "speculative_algorithm",
    "speculative_draft_model_path": "speculative_algorithm",
}


def options(command: str) -> list[tuple[str, str, Any]]:
    """(click name, an option spelling, the click parameter) of every option of ``command``."""
    from click import Context

    from oomkit.cli.group import cli

    cmd = cli.get_command(Context(cli), command)
    assert cmd is not None, command
    return [
        (str(p.name), max(p.opts, key=len), p)
        for p in cmd.params
        if p.param_type_name == "option" and p.name not in SKIP
    ]


def versions(runtime: str) -> list[str]:
    """Each generation's first day, one day either side, its first release; llama.cpp builds."""
    from oomkit.estimate.generation_builds import LLAMACPP_BUILD_DATES
    from oomkit.estimate.generation_table import ROWS

    out: list[str] = []
    for row in ROWS[runtime]:
        day = dt.date.fromisoformat(row[3])
        out += [str(day + dt.timedelta(days=d)) for d in (-1, 0, 1)]
        if row[4]:
            out.append(row[4])
    if runtime in ("llama.cpp", "ollama"):
        out += [f"b{n}" for n, _ in LLAMACPP_BUILD_DATES]
    return out


def quants(runtime: str) -> list[str]:
    from oomkit.quant.formats import list_quant_formats

    families = ("ggml_mix",) if runtime in ("llama.cpp", "ollama") else ("hf",)
    return [f.name for f in list_quant_formats() if f.family in families]


def gpu_specs(rng: random.Random, runtime: str, count: int | None = None) -> str:
    """A catalog GPU, ``Nx`` of one, or a mixed list; none the runtime cannot run on."""
    from oomkit.hardware.catalog import all_gpus

    keys = [
        g.key for g in all_gpus() if not (runtime in ("vllm", "sglang") and g.vendor == "apple")
    ]
    r = rng.random()
    if count is not None:
        return f"{count}x{rng.choice(keys)}" if count > 1 else rng.choice(keys)
    if r < 0.55:
        return rng.choice(keys)
    if r < 0.85:
        return f"{rng.choice((2, 4, 8))}x{rng.choice(keys)}"
    return ",".join(rng.sample(keys, rng.choice((2, 3))))


def max_ctx(model: str) -> int:
    from oomkit.catalog.models import find_model

    config = find_model(model).config
    text = config.get("text_config") or {}
    for c in (config, text):
        for key in ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length"):
            if isinstance(c.get(key), int):
                return int(c[key])
    return 4096


def contexts(model: str) -> tuple[str, ...]:
    top = max_ctx(model)
    return ("1", "256", "4096", "8k", str(top), str(top + 1), str(2 * top), "max")


def pool(name: str, param: Any, runtime: str, model: str) -> tuple[str, ...]:
    """Valid values of option ``name`` (a click parameter) for this runtime and model."""
    import click

    if name in NAMED:
        return NAMED[name]
    if name in ("quant", "min_quant"):
        return tuple(quants(runtime))
    if name in ("kv_dtype", "cache_type_k", "cache_type_v"):
        return KV[runtime]
    if name in ("draft_cache_type_k", "draft_cache_type_v"):
        return GGUF_KV
    if name in ("ctx", "min_ctx", "draft_ctx"):
        return contexts(model)
    if name == "emit":  # bare: the estimate's runtime; a runtime; or a training launcher
        from oomkit.cli.train_options import EMIT_CHOICES

        return ("same", *RUNTIMES, *EMIT_CHOICES)
    if name == "runtime_version":
        return tuple(versions(runtime))
    kind = param.type
    if isinstance(kind, click.Choice):
        return tuple(str(c) for c in kind.choices)
    lo, hi = getattr(kind, "min", None), getattr(kind, "max", None)
    if isinstance(lo, int) and isinstance(hi, int) and hi - lo < 16:
        return tuple(str(i) for i in range(lo, hi + 1))
    if kind.name == "SIZE":
        return SIZES
    if kind.name in ("integer", "integer range", "N", "N|max"):
        return ("1", "2", "4", "8")
    if kind.name in ("float", "float range"):
        return ("0.5", "0.9")
    return ()


#: runtime names as option help texts write them: an option whose help names some runtimes
#: is drawn for those (``--block-size``: "vLLM KV block size"), one that names none for all
RUNTIME_WORDS = {
    "llama.cpp": "llama.cpp", "ollama": "Ollama", "vllm": "vLLM", "sglang": "SGLang",
    "transformers": "transformers",
}  # fmt: skip


def affinity(name: str, param: Any) -> frozenset[str]:
    """The runtimes option ``name`` is for (all when its help names none)."""
    if name.startswith("draft_"):
        return frozenset({"llama.cpp"})  # llama-server's -md and friends
    text = str(getattr(param, "help", "") or "")
    named = frozenset(rt for rt, word in RUNTIME_WORDS.items() if word in text)
    return named or frozenset(RUNTIME_WORDS)


def draw(rng: random.Random, command: str, table: list[tuple[str, str, Any]]) -> list[str]:
    """One valid-looking command line for ``command`` (mostly valid: 1 in 10 runs mixes an
    option with a runtime it is not for, which must be refused cleanly)."""
    from oomkit.catalog.models import all_models

    model = rng.choice([m.key for m in all_models()])
    args = [command, model, "--offline"]
    names = {name: (spelling, p) for name, spelling, p in table}
    train = "train_method" in names and rng.random() < 0.25
    runtime = rng.choice(RUNTIMES)
    shown = runtime
    if train:
        method = rng.choice(("full", "lora", "qlora"))
        args += ["--train", method]
        extra = [n for n in names if n.startswith("train_") and n != "train_method"]
        extra += [n for n in ("emit",) if n in names]
        if method == "full":  # adapters' options size LoRA only
            extra = [n for n in extra if "lora" not in n and "kbit" not in n]
        chosen = rng.sample(extra, rng.randint(1, 5))
        if any("offload" in n for n in chosen) and not {"train_zero", "train_fsdp"} & {*chosen}:
            args += ["--zero", "3"]  # CPU offload is ZeRO's or FSDP's
    else:
        if command == "plan" and rng.random() < 0.15:
            shown = "any"
        if rng.random() < 0.9 or shown == "any":
            args += ["--runtime", shown]
        else:
            runtime = shown = "llama.cpp"  # the default
        mixed = rng.random() < 0.1
        extra = [
            n
            for n, (_, p) in names.items()
            if not n.startswith("train_")
            and n not in ("runtime", "gpu", "gpus")
            and (
                mixed
                or (runtime in affinity(n, p) and (shown != "any" or not n.startswith("draft")))
            )
        ]
        core = [n for n in ("runtime_version", "ctx", "quant", "kv_dtype") if n in extra]
        chosen = [n for n in core if rng.random() < 0.5]
        chosen += rng.sample(extra, min(rng.randint(0, 4), len(extra)))
        if any(n.startswith("draft_") for n in chosen) and "draft_model" in names:
            chosen.insert(0, "draft_model")
        chosen = [NEEDS[n] for n in chosen if n in NEEDS and NEEDS[n] in names] + chosen
        if "vulkan_driver" in chosen and "backend" in names:
            args += [names["backend"][0], "vulkan"]
            chosen = [n for n in chosen if n != "backend"]
    values: dict[str, str] = {}
    for name in dict.fromkeys(chosen):
        spelling, param = names[name]
        if getattr(param, "is_flag", False):
            second = list(getattr(param, "secondary_opts", ()) or ())
            args.append(rng.choice([spelling, *second]))
            continue
        vals = pool(name, param, "llama.cpp" if shown == "any" else runtime, model)
        if name == "runtime_version" and shown == "any":
            vals = tuple(v for v in vals if v[:1] == "2")  # a date: every runtime reads it
        if "max" in vals and str(param.type.name).lower() != "n|max":
            vals = tuple(v for v in vals if v != "max")
        if vals:
            values[name] = rng.choice(vals)
            args += [spelling, values[name]]
    parallel = int(values.get("tp", "1")) * int(values.get("pp", "1"))
    if rng.random() < 0.9 or parallel > 1:
        args += ["--gpu", gpu_specs(rng, runtime, parallel if parallel > 1 else None)]
    elif rng.random() < 0.5:
        args += ["--vram", rng.choice(SIZES)]
    if rng.random() < 0.85:
        args.append("--json")
    return args


def draw_listing(rng: random.Random, command: str, table: list[tuple[str, str, Any]]) -> list[str]:
    """``gpus --for MODEL`` or ``models --fits GPU`` with valid options (about a second each:
    not in the default mix, ``--commands gpus,models``)."""
    from oomkit.catalog.models import all_models

    model = rng.choice([m.key for m in all_models()])
    runtime = rng.choice(RUNTIMES)
    if command == "gpus":
        args = ["gpus", "--for", model]
    else:
        args = ["models", "--fits", gpu_specs(rng, runtime)]
    args += ["--runtime", runtime]
    for name, spelling, param in table:
        if name in ("runtime", "for_model", "fits_gpu", "catalog", "search", "vram"):
            continue
        if getattr(param, "is_flag", False) or rng.random() < 0.5:
            continue
        vals = pool(name, param, runtime, model)
        vals = tuple(v for v in vals if v != "max")
        if vals:
            args += [spelling, rng.choice(vals)]
    return [*args, "--json"]


#: OOM messages in the runtimes' own wording; {a} {b} {c} are drawn sizes
DOCTOR = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {a} MiB. GPU 0 has a total "
    "capacity of {b} GiB of which {c} MiB is free. Including non-PyTorch memory, this process "
    "has {d} GiB memory in use. Of the allocated memory {e} GiB is allocated by PyTorch, and "
    "{c} MiB is reserved by PyTorch but unallocated.",
    "ggml_backend_cuda_buffer_type_alloc_buffer: allocating {a}.00 MiB on device 0: cudaMalloc "
    "failed: out of memory\nllama_kv_cache_init: failed to allocate buffer for kv cache",
    "ValueError: The model's max seq len ({f}) is larger than the maximum number of tokens "
    "that can be stored in KV cache ({g}). Try increasing `gpu_memory_utilization` or "
    "decreasing `max_model_len` when initializing the engine.",
    "ValueError: No available memory for the cache blocks. Try increasing "
    "`gpu_memory_utilization` when initializing the engine.",
    "Error: model requires more system memory ({b}.{c} GiB) than is available ({d}.1 GiB)",
    "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
    "Current value: mem_fraction_static=0.{c}",
    "CUDA error: out of memory\n  current device: 0, in function alloc at ggml-cuda.cu:{f}",
)


def doctor_args(rng: random.Random) -> tuple[list[str], str]:
    n = {k: rng.choice((0, 1, 20, 512, 2048, 80000)) for k in "abcdefg"}
    text = rng.choice(DOCTOR).format(**n)
    return ["doctor", "-", *(["--json"] if rng.random() < 0.85 else [])], text


DEVICE_FIELDS = (
    "weights_bytes", "kv_cache_bytes", "activations_bytes", "overhead_bytes", "gradients_bytes",
    "optimizer_bytes",
)  # fmt: skip
HOST_FIELDS = ("weights_bytes", "kv_cache_bytes", "activations_bytes", "total_bytes")


def _int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def check_estimate(doc: Mapping[str, Any], code: int) -> str | None:
    """What is wrong with ``estimate --json``'s ``doc`` answered with exit ``code`` (None: ok).

    Fields: DESIGN.md's ``estimate --json`` contract. Numbers: every device total is the sum of
    its categories, the top total the sum of devices and host. Verdict: exit 0 means nothing is
    over its capacity and no blocker; exit 3 needs a stated reason (a blocker, a device or the
    host over capacity, a margin below zero, a ``--ctx max`` that found none); exit 4 is tight.
    """
    for key in ("schema_version", "model", "runtime", "settings", "devices", "host",
                "total_bytes", "fits", "runtime_details", "assumptions"):  # fmt: skip
        if key not in doc:
            return f"estimate JSON lacks '{key}'"
    model = doc["model"]
    if not isinstance(model, dict) or any(
        k not in model for k in ("name", "architecture", "params", "source")
    ):
        return "estimate JSON 'model' lacks name/architecture/params/source"
    if doc["fits"] not in (True, False, None):
        return f"estimate JSON 'fits' is {doc['fits']!r}"
    over: list[str] = []
    total = 0
    for d in [*doc["devices"], doc["host"]]:
        fields = DEVICE_FIELDS if d is not doc["host"] else HOST_FIELDS
        missing = [f for f in (*fields, "total_bytes") if not _int(d.get(f))]
        if missing:
            return f"estimate JSON {d.get('device', 'host')}: {missing[0]} missing or negative"
        if d is not doc["host"] and d["total_bytes"] != sum(d[f] for f in DEVICE_FIELDS):
            return "estimate JSON: a device total is not the sum of its categories"
        cap = d.get("capacity_bytes")
        if cap is not None and d["total_bytes"] > cap:
            over.append(str(d.get("device", "host")))
        total += d["total_bytes"]
    if total != doc["total_bytes"]:
        return "estimate JSON: total_bytes is not the sum of devices and host"
    blockers = list(doc.get("blockers") or ())
    level = doc.get("verdict")
    margins = (doc.get("verdict_details") or {}).get("margins") or ()
    negative = [m for m in margins if m.get("free_bytes", 0) < 0]
    if doc["fits"] is True and (over or blockers):
        return f"fits: true with {'over capacity: ' + over[0] if over else 'a blocker'}"
    if code == 0 and (over or blockers or negative or doc["fits"] is False):
        what = over[0] + " over capacity" if over else "a blocker" if blockers else "margin < 0"
        return f"exit 0 (fits) with {what}"
    if code == 0 and level not in (None, "fits", "unknown"):
        return f"exit 0 with verdict {level}"
    if code == 4 and level != "tight":
        return f"exit 4 (tight) with verdict {level}"
    if code == 3:
        said = any("not even" in str(a) for a in doc["assumptions"])
        if not (over or blockers or negative or said or doc["fits"] is False):
            return "exit 3 (does not fit) with everything inside capacity and no blocker"
        if level not in (None, "does_not_fit") and doc["fits"] is not False:
            return f"exit 3 with verdict {level}"
    if level == "fits" and any(m.get("level") != "fits" for m in margins):
        return "verdict fits with a margin that is not"
    return None


def check_plan(doc: Mapping[str, Any], code: int) -> str | None:
    """``plan --json``: exit 0 has a plan, exit 3 says nothing fits; every plan proposed fits
    (each device inside its capacity; a training plan's verdict is not "does_not_fit")."""
    for key in ("schema_version", "model", "fits", "plans"):
        if key not in doc:
            return f"plan JSON lacks '{key}'"
    if code == 0 and (doc["fits"] is not True or not doc["plans"]):
        return "plan exit 0 without a plan that fits"
    if code == 3 and doc["fits"] is not False:
        return "plan exit 3 with fits not false"
    for p in doc["plans"]:
        if p.get("verdict") == "does_not_fit":
            return "plan proposes a training setup whose verdict is does_not_fit"
        for d in p.get("devices") or ():
            cap = d.get("capacity_bytes")
            if cap is not None and d.get("total_bytes", 0) > cap:
                return f"plan proposes a {p.get('runtime')} setup with a device over capacity"
    return None


def check_doctor(doc: Mapping[str, Any], code: int) -> str | None:
    for key in ("schema_version", "events", "cause", "confidence", "explanation", "fixes"):
        if key not in doc:
            return f"doctor JSON lacks '{key}'"
    conf = doc["confidence"]
    if not isinstance(conf, (int, float)) or not 0 <= conf <= 1:
        return f"doctor confidence {conf!r}"
    for fix in doc["fixes"]:
        if any(k not in fix for k in ("title", "why", "commands", "expected_saving_bytes")):
            return "doctor fix lacks title/why/commands/expected_saving_bytes"
    return None


def check_listing(doc: Mapping[str, Any], code: int) -> str | None:
    """``gpus --for`` / ``models --fits``: the generic checks only (parses, no negative size)."""
    return None if "schema_version" in doc else "listing JSON lacks 'schema_version'"


#: ``*_bytes`` keys that may be negative (a margin below zero, a change that adds memory)
SIGNED = ("free", "margin", "delta", "change", "saving", "over", "diff", "available", "headroom")


def negative_bytes(doc: object, path: str = "") -> str | None:
    """The first ``*_bytes`` field anywhere in ``doc`` holding a negative size, as a path."""
    if isinstance(doc, dict):
        for key, value in doc.items():
            where = f"{path}.{key}"
            if (
                (str(key).endswith("_bytes") or key == "bytes")
                and isinstance(value, int)
                and value < 0
                and not any(w in str(key) for w in SIGNED)
            ):
                return f"negative {where.lstrip('.')}"
            found = negative_bytes(value, where)
            if found:
                return found
    elif isinstance(doc, list):
        for value in doc:
            found = negative_bytes(value, f"{path}[]")
            if found:
                return found
    return None


CHECKS = {"estimate": check_estimate, "plan": check_plan, "doctor": check_doctor,
          "gpus": check_listing, "models": check_listing}  # fmt: skip
#: a size below zero in text output (sizes print as "12.3 GiB"; a deficit says "over")
NEGATIVE_SIZE = re.compile(r"(?<![\w.-])-\d+(?:\.\d+)? (?:B|KiB|MiB|GiB|TiB|KB|MB|GB|TB)\b")
#: exit codes seen by :func:`run_one`
CODES: dict[object, int] = {}
#: (exit code, error line with digits folded) -> count, of the runs refused with 1 or 2
REFUSALS: dict[tuple[object, str], int] = {}


def _site(args: Sequence[str], stdin: str | None) -> str:
    """Where the internal error of ``args`` is raised: rerun with OOMKIT_DEBUG=1."""
    from oomkit.cli import main

    os.environ["OOMKIT_DEBUG"] = "1"
    try:
        with _io(stdin):
            main(list(args))
    except Exception as e:
        frames = [f for f in traceback.extract_tb(e.__traceback__) if "oomkit" in f.filename]
        f = frames[-1] if frames else traceback.extract_tb(e.__traceback__)[-1]
        where = f"{f.filename.split('src/')[-1]}:{f.lineno} {f.name}"
        return f"{type(e).__name__} at {where}: {str(e)[:120]}"
    finally:
        os.environ.pop("OOMKIT_DEBUG", None)
    return "internal error (not raised again under OOMKIT_DEBUG)"


@contextlib.contextmanager
def _io(stdin: str | None) -> Any:
    out, err = io.StringIO(), io.StringIO()
    old = sys.stdin
    if stdin is not None:
        sys.stdin = io.StringIO(stdin)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            yield out, err
    finally:
        sys.stdin = old


def run_one(args: Sequence[str], stdin: str | None = None) -> str | None:
    """``None`` when ``oomkit args`` answered cleanly and consistently, else the problem."""
    from oomkit.cli import main

    code: object
    with _io(stdin) as (out, err):
        try:
            code = main(list(args))
        except SystemExit as e:
            code = e.code
        except BaseException as e:  # the point is to catch anything
            return f"raised {type(e).__name__}: {e}"[:200]
    CODES[code] = CODES.get(code, 0) + 1
    text = err.getvalue()
    if code in (1, 2):  # a refusal: which one (digits folded), for --why
        line = next((x for x in text.splitlines() if x.startswith("Error")), "?")
        key = (code, re.sub(r"\d+", "N", line)[:110])
        REFUSALS[key] = REFUSALS.get(key, 0) + 1
    if "internal error" in text or "Traceback" in text:
        return _site(args, stdin)
    if code not in (0, 1, 2, 3, 4):
        return f"exit code {code!r}"
    check = CHECKS.get(args[0])
    if "--json" not in args:
        bad = NEGATIVE_SIZE.search(out.getvalue())
        return f"{args[0]} prints a negative size: {bad.group(0)}" if bad else None
    if code not in (0, 3, 4) or check is None:
        return None
    try:
        doc = json.loads(out.getvalue())
    except ValueError as e:
        return f"{args[0]} --json output does not parse: {e}"[:200]
    if not isinstance(doc, dict):
        return f"{args[0]} --json output is not an object"
    return negative_bytes(doc) or check(doc, int(code))


def fuzz(n: int, seed: int, commands: Sequence[str]) -> dict[str, str]:
    """Distinct problems over ``n`` random valid invocations: problem -> reproducing command."""
    rng = random.Random(seed)
    tables = {c: options(c) for c in commands if c != "doctor"}
    problems: dict[str, str] = {}
    for _ in range(n):
        command = rng.choice(list(commands))
        stdin = None
        if command == "doctor":
            args, stdin = doctor_args(rng)
        elif command in ("gpus", "models"):
            args = draw_listing(rng, command, tables[command])
        else:
            args = draw(rng, command, tables[command])
        problem = run_one(args, stdin)
        if problem is not None and problem not in problems:
            line = shlex.join(["oomkit", *args])
            problems[problem] = (
                line if stdin is None else f"printf %s {shlex.quote(stdin)} | {line}"
            )
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--commands", default="estimate,estimate,estimate,plan,doctor")
    ap.add_argument(
        "--why", type=int, default=0, help="also print the N most common refusals (exit 1/2)"
    )
    a = ap.parse_args()
    commands = [c.strip() for c in a.commands.split(",") if c.strip()]
    problems = fuzz(a.n, a.seed, commands)
    for problem, line in problems.items():
        print(f"{problem}\n    {line}")
    codes = ", ".join(f"{k}: {v}" for k, v in sorted(CODES.items(), key=lambda kv: str(kv[0])))
    print(f"{a.n} invocations (seed {a.seed}): {len(problems)} distinct problem(s)")
    print(f"exit codes: {codes} (0 fits, 4 tight, 3 does not fit, 1 error, 2 usage error)")
    for (code, line), count in sorted(REFUSALS.items(), key=lambda kv: -kv[1])[: a.why]:
        print(f"  {count:4d} x exit {code}: {line}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
