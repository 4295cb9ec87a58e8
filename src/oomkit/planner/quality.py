"""Quality cost of a weight format: published perplexity / KL-divergence deltas vs 16-bit weights.

The table lives in ``oomkit/data/quant_quality.json``, one row per format with its source:

* GGUF file types: llama.cpp's "LLaMA 3 8b Scoreboard" (``tools/perplexity/README.md``,
  ``llama-perplexity --kl-divergence`` on Llama-3-8B base over WikiText-2, CUDA, build
  f364eb6f): mean KL divergence of the token distribution vs the F16 model, and the perplexity
  increase. Rows without an importance matrix are used where the table has them (what
  ``llama-quantize`` does by default); i-quants and ``Q2_K_S`` need one and use the table's
  "WT 10m" rows.
* Hugging Face formats: AWQ and GPTQ (INT4 and INT3, group 128) from the AWQ paper's Llama-2-7B
  WikiText-2 perplexities (arXiv 2306.00978, Table 4).

Ranking (:func:`quality_rank_key`, lower is better) is on the KL-divergence scale:

1. ``kld`` when the table has it;
2. else the KLD that the llama.cpp rows pair with the same perplexity increase (monotone
   interpolation), for rows that publish only perplexity (AWQ, GPTQ);
3. else a fallback from bits per weight (oomkit's quant table): log-KLD interpolated over the
   published GGUF rows by their nominal bits, made non-increasing in bits; 16-bit and wider
   formats scale the F16 row by ``16 / bits``. ``rank_basis`` says which one was used.

Perplexity deltas are model-dependent (Llama 3 loses more than Llama 2 at the same type, see the
README's comparison table); the numbers rank formats, they do not predict a given model's loss.

>>> quant_quality("Q4_K_M").kld
0.031273
>>> quality_rank_key("Q8_0") < quality_rank_key("Q4_K_M") < quality_rank_key("Q2_K")
True
"""

from __future__ import annotations

import bisect
import json
import math
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from oomkit.quant.formats import quant_format

__all__ = [
    "KV_KLD_INCREASE",
    "RANK_BASES",
    "QuantQuality",
    "kv_quality_text",
    "quality_rank_key",
    "quality_table",
    "quant_quality",
]

#: how a rank key was obtained, best first
RANK_BASES: tuple[str, ...] = ("kld", "ppl", "bits")


@dataclass(frozen=True, slots=True, kw_only=True)
class QuantQuality:
    """Quality cost of one weight format. ``None``: not published for this format."""

    name: str  # canonical oomkit quant name ("Q4_K_M", "awq")
    family: str  # "ggml_mix" | "ggml" | "hf"
    bits_per_weight: float  # nominal, from oomkit's quant table (display only)
    ppl_increase_pct: float | None  # perplexity increase, percent of the 16-bit model's
    kld: float | None  # mean KL divergence vs the 16-bit model (nats)
    model_measured_on: str  # the model and eval the published figure comes from
    source: str  # URL of the published table ("" for a bits fallback)
    rank_basis: str  # one of RANK_BASES
    rank_key: float  # KLD scale, lower is better

    @property
    def published(self) -> bool:
        return self.rank_basis != "bits"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "family": self.family,
            "bits_per_weight": self.bits_per_weight,
            "ppl_increase_pct": self.ppl_increase_pct,
            "kld": self.kld,
            "model_measured_on": self.model_measured_on,
            "source": self.source,
            "rank_basis": self.rank_basis,
            "rank_key": self.rank_key,
            "published": self.published,
        }


@cache
def quality_table() -> dict[tuple[str, str], dict[str, Any]]:
    """Published rows keyed by (family, name), as stored in ``data/quant_quality.json``."""
    text = resources.files("oomkit").joinpath("data/quant_quality.json").read_text("utf-8")
    return {(r["family"], r["name"]): r for r in json.loads(text)["rows"]}


def _bits(name: str, family: str) -> float:
    return float(quant_format(name, family=family).bits)


@cache
def _gguf_points() -> tuple[tuple[float, float, float], ...]:
    """(nominal bits, ppl %, KLD) of the published GGUF rows."""
    return tuple(
        (_bits(r["name"], "ggml_mix"), float(r["ppl_increase_pct"]), float(r["kld"]))
        for r in quality_table().values()
        if r["family"] == "ggml_mix" and r["kld"] is not None
    )


def _interp(xs: list[float], ys: list[float], x: float) -> float:
    """Piecewise-linear interpolation, clamped at both ends; ``xs`` ascending."""
    if x <= xs[0]:
        return ys[0]
    if x >= xs[-1]:
        return ys[-1]
    i = bisect.bisect_right(xs, x)
    x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0)


@cache
def _bits_curve() -> tuple[list[float], list[float]]:
    """Nominal bits -> log KLD: median per distinct bits, then non-increasing in bits."""
    by_bits: dict[float, list[float]] = {}
    for bits, _, kld in _gguf_points():
        by_bits.setdefault(bits, []).append(math.log(kld))
    xs = sorted(by_bits)
    ys = [sorted(by_bits[b])[len(by_bits[b]) // 2] for b in xs]
    for i in range(len(ys) - 2, -1, -1):  # more bits never costs more quality
        ys[i] = max(ys[i], ys[i + 1])
    return xs, ys


def _kld_from_bits(bits: float) -> float:
    xs, ys = _bits_curve()
    if bits >= xs[-1]:
        return math.exp(ys[-1]) * xs[-1] / bits
    if bits < xs[0]:  # below the lowest published type: halve quality per bit lost
        return math.exp(ys[0]) * 2 ** (xs[0] - bits)
    return math.exp(_interp(xs, ys, bits))


def _kld_from_ppl(ppl_pct: float) -> float:
    pts = sorted((p, k) for _, p, k in _gguf_points())
    xs = [p for p, _ in pts]
    ys = [math.log(k) for _, k in pts]
    for i in range(1, len(ys)):  # a larger perplexity increase never means a smaller KLD
        ys[i] = max(ys[i], ys[i - 1])
    return math.exp(_interp(xs, ys, ppl_pct))


def quant_quality(name: str) -> QuantQuality:
    """The published quality cost of weight format ``name`` (any spelling ``--quant`` accepts).

    Raises:
        UnknownNameError: ``name`` is not a format oomkit knows (suggestions included).
    """
    fmt = quant_format(name)
    row = quality_table().get((fmt.family, fmt.name))
    if row is not None:
        kld = None if row["kld"] is None else float(row["kld"])
        ppl = None if row["ppl_increase_pct"] is None else float(row["ppl_increase_pct"])
        if kld is not None:
            basis, key = "kld", kld
        elif ppl is not None:
            basis, key = "ppl", _kld_from_ppl(ppl)
        else:  # pragma: no cover - the data test forbids rows with neither figure
            basis, key = "bits", _kld_from_bits(fmt.bits)
        return QuantQuality(
            name=fmt.name,
            family=fmt.family,
            bits_per_weight=fmt.bits,
            ppl_increase_pct=ppl,
            kld=kld,
            model_measured_on=str(row["model_measured_on"]),
            source=str(row["source"]),
            rank_basis=basis,
            rank_key=key,
        )
    return QuantQuality(
        name=fmt.name,
        family=fmt.family,
        bits_per_weight=fmt.bits,
        ppl_increase_pct=None,
        kld=None,
        model_measured_on="",
        source="",
        rank_basis="bits",
        rank_key=_kld_from_bits(fmt.bits),
    )


def quality_rank_key(name: str) -> float:
    """Sort key for weight format ``name``: lower is better quality (KL-divergence scale).

    Raises:
        UnknownNameError: ``name`` is not a format oomkit knows.
    """
    return quant_quality(name).rank_key


#: KL divergence a quantized K and V cache adds, from llama.cpp PR #7412 ("CUDA: quantized KV
#: cache demo", JohannesGaessler's table of 2024-05-20, LLaMA-3-8B F16 weights, WikiText-2,
#: ``llama-perplexity --kl-divergence``): f16/q8_0/q8_0 has KLD 0.000980 vs the F16 model,
#: f16/f16/f16 0.000189, so a q8_0 cache adds 0.000791. oomkit holds no q4_0 row of that
#: table (the part read ends at q5_1), so a q4_0 cache is named without a figure.
KV_KLD_INCREASE: dict[str, float] = {"q8_0": 0.000980 - 0.000189}
_KV_SOURCE = "llama.cpp PR #7412, LLaMA-3-8B"


def kv_quality_text(cache_type: str | None) -> str | None:
    """The KV cache's part of the plan's quality line: its type and published cost, or None
    for a 16-bit cache (no cost).

    >>> kv_quality_text("q8_0")
    'KV q8_0 +0.0008 KLD (llama.cpp PR #7412, LLaMA-3-8B)'
    >>> kv_quality_text("f16") is None
    True
    """
    kv = (cache_type or "f16").strip().lower()
    if kv in ("f16", "bf16", "f32", "auto", "f16+fa"):
        return None
    cost = KV_KLD_INCREASE.get(kv)
    if cost is not None:
        return f"KV {kv} +{cost:.4f} KLD ({_KV_SOURCE})"
    return f"KV {kv}: a further quality cost (no published figure held by oomkit)"
