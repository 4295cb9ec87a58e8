"""Review 21 finding 13: on a Mac the ``-nkvo`` fix said "every token reads it over PCIe".
Apple Silicon has unified memory: llama.cpp's -nkvo (offload_kqv = false) puts the cache in a
CPU buffer of the same RAM, outside the Metal working set, and pins the attention ops to the CPU
backend (llm_graph_context::build_attn_mha). The CUDA wording stays for a discrete GPU."""

from __future__ import annotations

from pathlib import Path

from oomkit.diagnose.doctor import diagnose_text

LOGS = Path(__file__).parent / "fixtures" / "oom_logs"


def _nkvo(name: str) -> tuple[str, str]:
    d = diagnose_text((LOGS / name).read_text(encoding="utf-8"))
    (fix,) = [f for f in d.fixes if f.commands == ("-nkvo",)]
    return fix.title, fix.why


def test_metal_says_what_nkvo_really_does() -> None:
    title, why = _nkvo("constructed-review21-metal-kv.txt")
    assert "PCIe" not in why
    assert "Metal working set" in title
    assert "same unified memory" in why
    assert "attention on the CPU cores" in why


def test_cuda_keeps_the_pcie_wording() -> None:
    title, why = _nkvo("constructed-review16-llamacpp-kv-laptop.txt")
    assert title == "Keep the KV cache in host RAM: -nkvo"
    assert "over PCIe" in why
