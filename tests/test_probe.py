"""The FakeTensor probe on small real transformers configs: exact model-state bytes, and
activations that behave like the mechanisms (seq/batch growth, checkpointing, LoRA)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from oomkit.errors import InvalidSettingError, UnknownNameError, UnsupportedModelError  # noqa: E402
from oomkit.inprocess.probe import probe  # noqa: E402
from oomkit.inprocess.probe_tracker import cuda_block_bytes  # noqa: E402

LLAMA: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 160,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_hidden_layers": 2,
    "vocab_size": 512,
    "max_position_embeddings": 1024,
    "tie_word_embeddings": False,
}
QWEN2 = {
    **LLAMA,
    "architectures": ["Qwen2ForCausalLM"],
    "model_type": "qwen2",
    "tie_word_embeddings": True,
}
MIXTRAL = {
    **LLAMA,
    "architectures": ["MixtralForCausalLM"],
    "model_type": "mixtral",
    "num_local_experts": 4,
    "num_experts_per_tok": 2,
}
GPT2 = {
    "architectures": ["GPT2LMHeadModel"],
    "model_type": "gpt2",
    "n_embd": 64,
    "n_head": 4,
    "n_layer": 2,
    "n_positions": 512,
    "vocab_size": 512,
}
BERT = {
    "architectures": ["BertForMaskedLM"],
    "model_type": "bert",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "num_hidden_layers": 2,
    "vocab_size": 512,
    "max_position_embeddings": 512,
}
CONFIGS = {"llama": LLAMA, "qwen2": QWEN2, "mixtral": MIXTRAL, "gpt2": GPT2, "bert": BERT}


def _meta_model(cfg: dict[str, Any], dtype: Any) -> Any:
    """The same transformers model on the meta device (an independent parameter count)."""
    import transformers

    c = dict(cfg)
    config = transformers.AutoConfig.for_model(c.pop("model_type"), **c)
    cls = getattr(transformers, cfg["architectures"][0])
    with torch.device("meta"):
        return cls._from_config(config, dtype=dtype)


def _unique_params(model: Any) -> list[Any]:
    seen: dict[int, Any] = {}
    for p in model.parameters():
        seen.setdefault(id(p), p)
    return list(seen.values())


@pytest.mark.parametrize("arch", sorted(CONFIGS))
def test_parameter_bytes_equal_count_times_dtype(arch: str) -> None:
    cfg = CONFIGS[arch]
    r = probe(cfg, seq=32, round_to_cuda_blocks=False)
    n = sum(p.numel() for p in _unique_params(_meta_model(cfg, torch.bfloat16)))
    assert r.parameter_count == n
    assert r.parameters_bytes == 2 * n
    assert r.peak_by_category["parameters"] == 2 * n
    assert r.peak_bytes > r.parameters_bytes  # the forward allocates on top


def test_catalog_llama_count_matches_oomkit_spec() -> None:
    from oomkit.catalog.models import find_model
    from oomkit.spec.tensors import count_params

    # the real SmolLM2-135M architecture with 2 of its 30 layers (tied embeddings)
    cfg = dict(find_model("smollm2-135m").config)
    cfg["num_hidden_layers"] = 2
    r = probe(cfg, seq=16, round_to_cuda_blocks=False)
    from oomkit.loaders.hf_config import parse_config

    assert r.parameter_count == count_params(parse_config(cfg, name="smollm2-2l"))


def test_inference_kv_cache_is_exact() -> None:
    r = probe(LLAMA, seq=96, batch=3, round_to_cuda_blocks=False)
    # 2 layers x (K + V) x batch 3 x 96 tokens x 2 KV heads x head_dim 16 x 2 bytes
    assert r.peak_by_category["kv_cache"] == 2 * 2 * 3 * 96 * 2 * 16 * 2
    assert r.mode == "inference"
    assert r.peak_phase == "forward"


@pytest.mark.parametrize("arch", ["llama", "mixtral", "bert"])
def test_full_training_states(arch: str) -> None:
    cfg = CONFIGS[arch]
    r = probe(cfg, train="full", seq=32, round_to_cuda_blocks=False)
    params = _unique_params(_meta_model(cfg, torch.float32))
    n = sum(p.numel() for p in params)
    assert r.trainable_parameter_count == n
    # mixed precision: fp32 parameters and gradients
    assert r.parameters_bytes == 4 * n
    assert r.gradients_bytes == 4 * n
    # AdamW: exp_avg + exp_avg_sq in fp32, plus one fp32 scalar 'step' per tensor
    assert r.optimizer_state_bytes == 2 * 4 * n + 4 * len(params)
    assert set(r.phase_peaks) >= {"forward", "backward", "optimizer_step"}


def test_pure_bf16_training_halves_gradients() -> None:
    r = probe(LLAMA, train="full", seq=32, mixed_precision=False, round_to_cuda_blocks=False)
    n = r.trainable_parameter_count
    assert r.gradients_bytes == 2 * n
    assert r.parameters_bytes == 2 * n


def test_sgd_has_no_state_and_momentum_one() -> None:
    sgd = probe(LLAMA, train="full", seq=16, optimizer="sgd", round_to_cuda_blocks=False)
    mom = probe(LLAMA, train="full", seq=16, optimizer="sgd_momentum", round_to_cuda_blocks=False)
    assert sgd.optimizer_state_bytes == 0
    assert mom.optimizer_state_bytes == 4 * mom.trainable_parameter_count


def test_adamw8bit_state_layout() -> None:
    r = probe(LLAMA, train="full", seq=16, optimizer="adamw8bit", round_to_cuda_blocks=False)
    expected = 0
    for p in _unique_params(_meta_model(LLAMA, torch.float32)):
        n = p.numel()
        expected += 4  # step
        if n < 4096:
            expected += 2 * 4 * n
        else:
            expected += 2 * n + 2 * 4 * math.ceil(n / 256)
    assert r.optimizer_state_bytes == expected


def test_activations_grow_with_seq_and_batch() -> None:
    def acts(**kw: Any) -> int:
        r = probe(LLAMA, train="full", round_to_cuda_blocks=False, **kw)
        return r.saved_activations_bytes

    a128, a256 = acts(seq=128), acts(seq=256)
    b2 = acts(seq=128, batch=2)
    assert a256 > a128
    assert b2 > a128
    # fused SDPA keeps no seq x seq matrix: doubling the tokens about doubles the bytes
    assert 1.8 < a256 / a128 < 2.1
    assert 1.8 < b2 / a128 < 2.1


def test_eager_attention_adds_a_quadratic_term() -> None:
    def acts(seq: int, attn: str) -> int:
        r = probe(
            LLAMA, train="full", seq=seq, attn_implementation=attn, round_to_cuda_blocks=False
        )
        return r.saved_activations_bytes

    assert acts(256, "eager") / acts(128, "eager") > acts(256, "sdpa") / acts(128, "sdpa")


def test_checkpointing_lowers_activations() -> None:
    cfg = {**LLAMA, "num_hidden_layers": 4}
    plain = probe(cfg, train="full", seq=256, round_to_cuda_blocks=False)
    ckpt = probe(cfg, train="full", seq=256, grad_checkpointing=True, round_to_cuda_blocks=False)
    assert ckpt.saved_activations_bytes < plain.saved_activations_bytes / 2
    assert ckpt.peak_bytes < plain.peak_bytes
    assert ckpt.gradients_bytes == plain.gradients_bytes


def test_lora_trains_only_adapters() -> None:
    r = probe(LLAMA, train="lora", seq=32, lora_rank=8, round_to_cuda_blocks=False)
    h, kv = 64, 2 * 16
    # PEFT default for llama: q_proj (64 -> 64) and v_proj (64 -> 32), A: r x in, B: out x r
    per_layer = 8 * (h + h) + 8 * (h + kv)
    assert r.trainable_parameter_count == 2 * per_layer
    assert r.gradients_bytes == 4 * r.trainable_parameter_count  # fp32 adapters
    n_tensors = 2 * 2 * 2  # layers x (q, v) x (A, B)
    assert r.optimizer_state_bytes == 2 * 4 * r.trainable_parameter_count + 4 * n_tensors
    full = probe(LLAMA, train="full", seq=32, round_to_cuda_blocks=False)
    assert r.peak_bytes < full.peak_bytes


def test_lora_all_linear_and_bad_targets() -> None:
    r = probe(LLAMA, train="lora", seq=16, lora_targets=["all-linear"], lora_rank=4)
    assert any("7" in n or "14" in n for n in r.notes)  # 7 linears x 2 layers
    with pytest.raises(InvalidSettingError, match=r"^lora_targets 'nope_proj'.*q_proj"):
        probe(LLAMA, train="lora", seq=16, lora_targets=["nope_proj"])


def test_qlora_base_is_nf4_layout() -> None:
    lora = probe(LLAMA, train="lora", seq=32, round_to_cuda_blocks=False)
    q = probe(LLAMA, train="qlora", seq=32, round_to_cuda_blocks=False)
    assert q.trainable_parameter_count == lora.trainable_parameter_count
    model = _meta_model(LLAMA, torch.bfloat16)
    quantized = [
        m
        for name, m in model.named_modules()
        if isinstance(m, torch.nn.Linear) and name != "lm_head"
    ]
    n4 = sum(m.weight.numel() for m in quantized)
    blocks = [math.ceil(m.weight.numel() / 64) for m in quantized]
    other = sum(p.numel() for p in model.parameters()) - n4
    adapters = 4 * lora.trainable_parameter_count
    # packed 4-bit weights + embeddings/norms/head in bf16 + fp32 adapters
    assert q.parameters_bytes == n4 // 2 + 2 * other + adapters
    # uint8 absmax per 64 + fp32 absmax per 256 of those (double quant)
    assert q.peak_by_category["buffers"] >= sum(b + 4 * math.ceil(b / 256) for b in blocks)
    assert q.parameters_bytes < lora.parameters_bytes


def test_custom_module_factory() -> None:
    def factory() -> Any:
        return torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU())

    r = probe(factory, lambda: torch.randn(8, 256), train="full", round_to_cuda_blocks=False)
    n = 256 * 512 + 512
    assert r.parameters_bytes == 4 * n
    assert r.gradients_bytes == 4 * n
    assert r.peak_by_category["inputs"] == 8 * 256 * 4
    inf = probe(factory(), torch.randn(8, 256), round_to_cuda_blocks=False)
    assert inf.peak_by_category["outputs"] == 8 * 512 * 4


def test_top_modules_and_cuda_rounding() -> None:
    exact = probe(LLAMA, seq=64, round_to_cuda_blocks=False)
    rounded = probe(LLAMA, seq=64)
    assert rounded.peak_bytes > exact.peak_bytes
    assert rounded.peak_bytes % 512 == 0
    names = [m for m, _, _ in exact.top_modules]
    assert "model.layers.0" in names or "model" in names


def test_cuda_block_rounding_rules() -> None:
    assert cuda_block_bytes(0) == 0
    assert cuda_block_bytes(1) == 512
    assert cuda_block_bytes(512) == 512
    assert cuda_block_bytes(513) == 1024
    mib = 1 << 20
    # under 10 MiB: a split block of the 512-rounded size
    assert cuda_block_bytes(5 * mib + 1) == 5 * mib + 512
    # >= 10 MiB: a fresh 2 MiB-rounded segment, kept whole when <= 1 MiB would remain
    assert cuda_block_bytes(21 * mib + 512) == 22 * mib
    assert cuda_block_bytes(11 * mib) == 12 * mib
    # ... and split (block = the 512-rounded request) when more than 1 MiB would remain
    assert cuda_block_bytes(20 * mib + 1) == 20 * mib + 512
    assert cuda_block_bytes(21 * mib - 512) == 21 * mib - 512


def test_errors() -> None:
    with pytest.raises(UnknownNameError):
        probe("no-such-model-zz")
    with pytest.raises(InvalidSettingError):
        probe(LLAMA, train="half")
    with pytest.raises(InvalidSettingError):
        probe(LLAMA, dtype="int3")
    with pytest.raises(UnsupportedModelError, match="trust_remote_code"):
        probe({"architectures": ["FooForCausalLM"], "model_type": "foo", "auto_map": {"A": "b"}})


def _cli(*args: str, block: str | None = None) -> subprocess.CompletedProcess[str]:
    pre = f"sys.modules[{block!r}] = None\n" if block else ""
    code = f"import sys\n{pre}from oomkit.cli import main\nsys.exit(main({list(args)!r}))"
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )


def test_cli_probe_json_and_text(tmp_path: Any) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLAMA))
    r = _cli("probe", str(path), "--train", "lora", "--seq", "64", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["mode"] == "lora"
    assert doc["peak_phase"] in ("forward", "backward", "optimizer_step")
    assert doc["peak_bytes"] == sum(doc["peak_by_category"].values())
    t = _cli("probe", str(tmp_path), "--seq", "32")
    assert t.returncode == 0, t.stderr
    assert "Peak allocated" in t.stdout


def test_cli_probe_clear_errors(tmp_path: Any) -> None:
    rc = tmp_path / "rc.json"
    rc.write_text(json.dumps({"architectures": ["X"], "model_type": "x", "auto_map": {"a": "b"}}))
    r = _cli("probe", str(rc))
    assert r.returncode == 1
    assert "trust_remote_code" in r.stderr
    assert "Traceback" not in r.stderr
    r = _cli("probe", "gpt2", block="torch")
    assert r.returncode == 1
    assert r.stderr.strip().count("\n") <= 1
    assert "pip install" in r.stderr
    assert "Traceback" not in r.stderr
    r = _cli("probe", "gpt2", block="transformers")
    assert r.returncode == 1
    assert "transformers" in r.stderr
    assert "Traceback" not in r.stderr


def test_cli_probe_module_is_light() -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, oomkit.cli.probe; print('torch' in sys.modules)",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.strip() == "False"


def test_cuda_autocast_policy_casts_like_cuda_and_restores() -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode

    from oomkit.inprocess.probe_autocast import cuda_autocast_policy

    def dtypes() -> list[Any]:
        with FakeTensorMode():
            x = torch.empty(4, 8)
            w = torch.empty(16, 8)
            with torch.autocast("cpu", dtype=torch.bfloat16):
                y = torch.nn.functional.linear(x, w)
                return [
                    y.dtype,
                    torch.nn.functional.layer_norm(y, (16,)).dtype,
                    torch.softmax(y, -1).dtype,
                    y.sum().dtype,
                    torch.nn.functional.gelu(y).dtype,
                ]

    bf, f32 = torch.bfloat16, torch.float32
    assert dtypes() == [bf, bf, bf, bf, bf]  # the CPU lists
    with cuda_autocast_policy():
        # CUDA: matmuls in bf16; layer_norm (fp32 list), softmax and sum (fp32_set_opt_dtype)
        # in fp32; gelu is on no list and follows its input
        assert dtypes() == [bf, f32, f32, f32, bf]
    assert dtypes() == [bf, bf, bf, bf, bf]


def test_layernorm_model_keeps_fp32_norm_outputs_under_mixed_precision(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import contextlib

    from oomkit.inprocess import probe_autocast

    cuda = probe(BERT, train="full", seq=128, round_to_cuda_blocks=False)
    monkeypatch.setattr(probe_autocast, "cuda_autocast_policy", contextlib.nullcontext)
    cpu = probe(BERT, train="full", seq=128, round_to_cuda_blocks=False)
    # CUDA autocast runs layer_norm in fp32: the normalised hidden states the next layer saves
    # are fp32 on a GPU, bf16 under the CPU lists
    assert cuda.saved_activations_bytes > cpu.saved_activations_bytes


def test_qlora_converts_gpt2_conv1d_like_transformers() -> None:
    # transformers' replace_with_bnb_linear converts nn.Linear and GPT-2's Conv1D: 4 per block
    r = probe(GPT2, train="qlora", seq=16, round_to_cuda_blocks=False)
    assert r.notes[0].startswith("8 linear layers")
    lora = probe(GPT2, train="lora", seq=16, round_to_cuda_blocks=False)
    assert r.parameters_bytes < lora.parameters_bytes
    assert r.trainable_parameter_count == lora.trainable_parameter_count


def test_steady_state_step_holds_optimizer_states_through_forward() -> None:
    later = probe(LLAMA, train="full", seq=64, round_to_cuda_blocks=False)
    first = probe(LLAMA, train="full", seq=64, steady_state=False, round_to_cuda_blocks=False)
    states = later.optimizer_state_bytes
    assert states == first.optimizer_state_bytes
    # every step after the first runs its forward and backward with the AdamW states allocated
    assert later.phase_peaks["forward"] - first.phase_peaks["forward"] == states
    assert later.phase_peaks["backward"] - first.phase_peaks["backward"] == states
    assert later.peak_by_category["optimizer_state"] == states
    assert later.phase_peaks["optimizer_step"] == first.phase_peaks["optimizer_step"]


def test_sdpa_dropout_is_traced_like_the_cuda_fused_kernels() -> None:
    # BERT trains with attention dropout 0.1: on CUDA the flash/mem-efficient kernels drop
    # inside the kernel; nothing seq x seq is saved, so sdpa activations stay linear in seq
    def saved(seq: int) -> int:
        r = probe(BERT, train="full", seq=seq, round_to_cuda_blocks=False)
        return r.saved_activations_bytes

    assert saved(512) / saved(256) < 2.1
    eager = probe(BERT, train="full", seq=512, attn_implementation="eager")
    assert eager.saved_activations_bytes > 1.2 * saved(512)


def test_lora_dropout_saves_a_mask_per_adapted_layer() -> None:
    plain = probe(LLAMA, train="lora", seq=128, round_to_cuda_blocks=False)
    drop = probe(LLAMA, train="lora", seq=128, lora_dropout=0.05, round_to_cuda_blocks=False)
    # 2 layers x (q, v): CUDA's fused native_dropout saves a 1-byte bool mask (128 x 64) per
    # adapted layer, and lora_A then saves the dropped-out bf16 input (2 bytes) where without
    # dropout it shares the base layer's input (PEFT casts to the adapter dtype only outside
    # autocast); the CPU path would save a 4-byte fp32 noise tensor per element instead
    extra = drop.saved_activations_bytes - plain.saved_activations_bytes
    assert 4 * 128 * 64 < extra <= 4 * 3 * 128 * 64


def _main(capsys: Any, *args: str) -> tuple[int, str, str]:
    from oomkit.cli import main

    rc = main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize(
    ("args", "expect"),
    [
        (("--seq", "99999999999999"), "--seq must be an integer in [1, 268435456]"),
        (("--seq", "99999999999999999999999"), "--seq must be an integer"),
        (("--seq", "1025"), "--seq 1025 is longer than "),
        (("--batch", "99999999999"), "--batch must be an integer"),
        (("--batch", "1048577", "--seq", "1024"), "--batch 1048577 x seq 1024 must be at most"),
        (("--train", "lora", "--lora-dropout", "nan"), "--lora-dropout must be a probability"),
        (("--train", "lora", "--lora-targets", "bogus_proj"), "--lora-targets 'bogus_proj'"),
        (("--train", "lora", "--lora-targets", ","), "--lora-targets must be module names"),
        (("--train", "lora", "--lora-targets", "q_proj,,v_proj"), "--lora-targets must be"),
        (("--offload-activations",), "--offload-activations needs --train"),
        (("--chunked-loss",), "--chunked-loss needs --train"),
        (("--held-logits", "fp32"), "--held-logits needs --train"),
        (("--optimizer-impl", "fused"), "--optimizer-impl needs --train"),
        (("--train", "full", "--lora-rank", "4"), "--lora-rank needs --train lora|qlora"),
    ],
)
def test_cli_probe_refuses_hostile_input_naming_the_flag(
    tmp_path: Any, capsys: Any, args: tuple[str, ...], expect: str
) -> None:
    """Usage errors: exit 2, one line that names the flag, never a (nonsense) peak."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLAMA))  # max_position_embeddings 1024
    rc, out, err = _main(capsys, "probe", str(path), "--seq", "16", *args)
    assert rc == 2, err
    assert out == ""
    assert err.startswith("Error: "), err
    assert err.count("\n") == 1, err
    assert expect in err
    assert "Traceback" not in err
    assert "internal error" not in err


def test_probe_seq_limit_follows_rope_scaling_and_gpt2_positions() -> None:
    from oomkit.inprocess.probe import max_positions

    assert max_positions(LLAMA) == 1024
    assert max_positions(GPT2) == 512
    yarn = {**LLAMA, "rope_scaling": {"rope_type": "yarn", "factor": 4.0,
                                      "original_max_position_embeddings": 1024}}  # fmt: skip
    assert max_positions(yarn) == 4096
    assert max_positions({"model_type": "x"}) is None
    with pytest.raises(InvalidSettingError, match=r"^seq 513 is longer than"):
        probe(GPT2, seq=513)
    probe(GPT2, seq=512)  # the limit itself is a valid probe


def test_cli_probe_header_names_the_step_options(tmp_path: Any, capsys: Any) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLAMA))
    rc, out, err = _main(
        capsys, "probe", str(path), "--train", "full", "--seq", "16", "--optimizer-impl",
        "fused", "--chunked-loss", "--held-logits", "fp32", "--offload-activations",
    )  # fmt: skip
    assert rc == 0, err
    head = out.splitlines()[0]
    for flag in ("--optimizer-impl fused", "--chunked-loss", "--held-logits fp32",
                 "--offload-activations"):  # fmt: skip
        assert flag in head, head
    rc, out, err = _main(capsys, "probe", str(path), "--train", "full", "--seq", "16")
    assert rc == 0, err
    assert "--" not in out.splitlines()[0]


GEMMA3_VLM: dict[str, Any] = {
    "architectures": ["Gemma3ForConditionalGeneration"],
    "model_type": "gemma3",
    "text_config": {
        "model_type": "gemma3_text", "hidden_size": 64, "intermediate_size": 128,
        "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
        "num_hidden_layers": 2, "vocab_size": 512, "max_position_embeddings": 1024,
        "sliding_window": 32,
    },
    "vision_config": {
        "model_type": "siglip_vision_model", "hidden_size": 32, "intermediate_size": 64,
        "num_attention_heads": 2, "num_hidden_layers": 1, "image_size": 28, "patch_size": 14,
    },
    "mm_tokens_per_image": 4,
}  # fmt: skip


def test_multimodal_gemma3_probes_with_tied_weights() -> None:
    """Gemma 3's SigLIP tower initialises with trunc_normal_, whose rejection sampling calls
    .item() (DataDependentOutputException on fake tensors: `oomkit probe gemma-3-4b` was an
    internal error); its vocab_size is in text_config. The probe's parameters equal the real
    model's (lm_head tied to the embedding, as init_weights ties it)."""
    import transformers

    r = probe(GEMMA3_VLM, seq=16)
    cfg = transformers.AutoConfig.for_model(
        "gemma3", **{k: v for k, v in GEMMA3_VLM.items() if k != "model_type"}
    )
    real = transformers.Gemma3ForConditionalGeneration(cfg)
    assert r.parameter_count == sum(p.numel() for p in real.parameters())
    assert r.parameters_bytes >= 2 * r.parameter_count  # bf16, in CUDA blocks
