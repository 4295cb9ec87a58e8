"""llama-quantize's k-quant mixes of MoE models before PR #4872 (2024-01-11).

Until PR #4872 the quantizer's ``ffn_down.weight`` match never reached the per-expert tensors
(``blk.N.ffn_down.E.weight``), so a ``_M`` mix of Mixtral was "mostly equivalent to" ``_S``.
Published sizes of Mixtral-8x7B: PR #4872's table ("Q2_K (Master)" 14.57 GiB, "Q3_K_M
(Master)" 18.96 GiB), TheBloke's December 2023 files (Q4_K_M 26.44 GB, Q5_K_M 32.23 GB).
"""

from __future__ import annotations

import pytest

from oomkit.api import estimate
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.generations import resolve_generation
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings

_GiB = 2**30


def _file_bytes(model: str, quant: str, version: str) -> int:
    s = InferenceSettings(runtime="llama.cpp", quant=quant, ctx=512, runtime_version=version)
    est = estimate(model, s, hardware_for(parse_gpu_list("a100-80gb-sxm"), n_devices=1))
    return sum(
        c.n_bytes
        for d in (*est.devices, est.host)
        for c in d.components
        if c.category == "weights" and c.label == "model buffers"
    )


@pytest.mark.parametrize(
    ("quant", "published", "unit", "tol"),
    [
        ("Q2_K", 14.57, _GiB, 0.01),  # PR #4872: Q2_K (Master)
        ("Q3_K_M", 18.96, _GiB, 0.01),  # PR #4872: Q3_K_M (Master)
        ("Q4_K_M", 26.44, 10**9, 0.01),  # TheBloke, mixtral-8x7b-v0.1.Q4_K_M.gguf
        ("Q5_K_M", 32.23, 10**9, 0.01),  # TheBloke, mixtral-8x7b-v0.1.Q5_K_M.gguf
    ],
)
def test_december_2023_mixtral_files(quant: str, published: float, unit: int, tol: float) -> None:
    assert resolve_generation("llama.cpp", "2023-12-20").effects["moe_mix"] == "pre-4872"
    got = _file_bytes("mixtral-8x7b", quant, "2023-12-20") / unit
    assert got == pytest.approx(published, abs=tol)


def test_after_pr_4872_the_m_mixes_bump_half_of_ffn_down() -> None:
    old = _file_bytes("mixtral-8x7b", "Q4_K_M", "2024-01-05")
    new = _file_bytes("mixtral-8x7b", "Q4_K_M", "2024-01-21")
    assert "moe_mix" not in resolve_generation("llama.cpp", "2024-01-21").effects
    # half of the 15.0 B ffn_down expert weights go Q4_K (4.5 bpw) -> Q6_K (6.5625 bpw): 1.94 GB;
    # attn_output (0.54 B) Q4_K -> Q5_K (PR #4906): 0.07 GB
    assert new - old == pytest.approx(1.94e9 + 0.067e9, rel=0.01)


def test_dense_models_and_legacy_types_are_unchanged() -> None:
    for quant in ("Q4_K_M", "Q8_0"):
        before = _file_bytes("llama-2-7b", quant, "2023-12-20")
        after = _file_bytes("llama-2-7b", quant, "2024-01-11")
        assert before == after
    # Q8_0 is no k-quant: the MoE file is the same in both generations
    assert _file_bytes("mixtral-8x7b", "Q8_0", "2023-12-20") == _file_bytes(
        "mixtral-8x7b", "Q8_0", "2024-01-21"
    )
