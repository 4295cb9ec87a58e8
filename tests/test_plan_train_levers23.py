"""Review 23, the training planner's missing levers (real catalog configs, no mocks).

1. The attention kernel: Gemma-2 runs eager in transformers (``_supports_sdpa = False  # sdpa
   does not support softcapping``), whose S x S scores (16 GiB a layer at 8k) made
   ``plan gemma-2-9b --train lora --seq 8192`` on a 4090 answer "Nothing fits ... 8 GPUs";
   flash_attention_2 (flash-attn >= 2.6, Ampere+) fits one card. A run asked with eager gets
   sdpa, with the size it saves.
2. A full fine-tune that falls to LoRA says what full fine-tuning needs (ZeRO-3 + optimizer
   offload and its host RAM) and the plan line names the method change.
3. An MoE QLoRA: transformers 4.57 (per-expert Linears quantized) as a lever when no
   ``--transformers-version`` is pinned.
4. An optimizer-offload suggestion states the host RAM it needs, and one ``--ram`` refuses is
   said with that RAM.
"""

from __future__ import annotations

import json

import pytest

from conftest import run_cli


def test_gemma2_long_sequence_gets_flash_attention_not_more_gpus(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ("plan", "gemma-2-9b", "--train", "lora", "--gpu", "rtx-4090", "--seq", "8192")
    code, out, err = run_cli(capsys, *argv, "--offline")
    assert code == 0, err
    assert "Nothing fits" not in out
    plan = next(x for x in out.splitlines() if x.startswith("Plan: "))
    assert "flash_attention_2 in place of eager" in plan
    assert "flash-attn >= 2.6" in plan
    check = next(x for x in out.splitlines() if x.startswith("  check: "))
    assert "--attn-implementation flash_attention_2" in check
    assert '  set: from_pretrained(..., attn_implementation="flash_attention_2")' in out


def test_no_flash_attention_lever_on_a_pre_ampere_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    # Turing (7.5): flash-attn refuses it ("FlashAttention only supports Ampere GPUs or newer")
    argv = ("plan", "gemma-2-9b", "--train", "lora", "--gpu", "titan-rtx", "--seq", "8192")
    _, out, _ = run_cli(capsys, *argv, "--offline")
    assert "flash_attention_2" not in out


def test_no_flash_attention_lever_for_attention_sinks() -> None:
    # gpt-oss: _supports_sdpa = False for its sinks, which flash-attn 2 has no argument for
    from oomkit.planner.training_runtime_levers import attention_lever
    from oomkit.spec.settings import TrainingSettings

    s = TrainingSettings(method="lora", seq=8192)
    assert attention_lever("gpt_oss", True)(s) is None
    assert attention_lever("gemma2", False)(s) is None  # pre-Ampere
    step = attention_lever("gemma2", True)(s)
    assert step is not None
    assert step[1].attn_implementation == "flash_attention_2"


def test_estimate_with_eager_suggests_sdpa_with_its_saving(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ("estimate", "llama-3.1-8b", "--train", "qlora", "--seq", "8192",
            "--grad-checkpointing", "--attn-implementation", "eager",
            "--gpu", "rtx-4090")  # fmt: skip
    _, out, _ = run_cli(capsys, *argv, "--offline")
    assert "more GPUs would not" not in out
    line = next(x for x in out.splitlines() if "sdpa attention in place of eager" in x)
    assert "peak 19.6" in line
    assert "(saves 14.2" in line


def test_full_fine_tuning_dropped_for_lora_says_what_full_needs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ("plan", "llama-3.1-70b", "--train", "full", "--gpu", "8xh100", "--seq", "4096",
            "--ram", "512GiB", "--offline")  # fmt: skip
    _, out, _ = run_cli(capsys, *argv)
    lines = out.splitlines()
    why = next(x for x in lines if x.startswith("full fine-tuning does not fit: it needs"))
    assert "ZeRO-3 (--zero 3)" in why
    assert "optimizer states on the CPU" in why
    assert "1182.75 GiB of host RAM, over --ram 512.00 GiB" in why
    assert next(x for x in lines if x.startswith("Plan")).startswith(
        "Plan (LoRA, not full fine-tuning): "
    )
    _, out, _ = run_cli(capsys, *argv, "--json")
    doc = json.loads(out)
    assert doc["method_change"]["asked"] == "full"
    assert doc["method_change"]["needs"]["host_bytes"] > 512 << 30
    assert doc["plans"][0]["method"] == "lora"


def test_moe_qlora_gets_transformers_4_as_a_lever(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ("plan", "qwen3-30b-a3b", "--train", "qlora", "--gpu", "rtx-4090", "--seq", "2048",
            "--offline")  # fmt: skip
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    plan = next(x for x in out.splitlines() if x.startswith("Plan: "))
    assert "transformers 4.57" in plan
    assert "peak 20.53 GiB" in plan
    # pinned by the user: the release is not a lever
    _, out, _ = run_cli(capsys, *argv, "--transformers-version", "5.2")
    assert "transformers 4.57" not in out


def test_offload_suggestion_states_host_ram_and_ram_refusal(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ("estimate", "llama-3.1-70b", "--train", "full", "--gpu", "h100", "--gpus", "8",
            "--zero", "3", "--seq", "4096", "--grad-checkpointing", "--offline")  # fmt: skip
    _, out, _ = run_cli(capsys, *argv)
    line = next(x for x in out.splitlines() if "optimizer states on the CPU" in x)
    assert "host RAM 1182.75 GiB (not checked: pass --ram SIZE)" in line
    _, out, _ = run_cli(capsys, *argv, "--ram", "512GiB")
    refused = next(x for x in out.splitlines() if x.startswith("Not offered: "))
    assert "optimizer states on the CPU" in refused
    assert "1182.75 GiB of host RAM, over --ram 512.00 GiB" in refused
    _, out, _ = run_cli(capsys, *argv, "--ram", "512GiB", "--json")
    doc = json.loads(out)
    assert doc["refused_for_host_ram"]["host_bytes"] > 512 << 30
