"""Which top-k/top-p path vLLM's profile run samples through, when it depends on the install.

From PR #15777 ("[Sampler] Adapt to FlashInfer 0.2.3 sampler API", spring 2025) until PR #26859
("Disable FlashInfer sampler by default", merged 2025-10-15, after v0.11.0) the V1 sampler
(vllm/v1/sample/ops/topk_topp_sampler.py ``TopKTopPSampler.__init__``) took FlashInfer's
kernel whenever FlashInfer was importable: ``if is_flashinfer_available: ... elif
envs.VLLM_USE_FLASHINFER_SAMPLER is not False: logger.info_once("Using FlashInfer for top-p &
top-k sampling.")``, ``VLLM_USE_FLASHINFER_SAMPLER`` unset meaning yes ("In V1, None means
True"). Whether FlashInfer was importable was the install's: the ``vllm/vllm-openai`` image
ships it, while the PyPI wheel did not require it between PR #21959 ("Move flashinfer-python
to optional extra ``vllm[flashinfer]``", 2025-07-30) and PR #26443 ("Add FlashInfer as default
CUDA dependency", merged 2025-10-08, after v0.11.0). vLLM 0.10.1.1 users see the FlashInfer
path chosen ("FlashInfer 0.2.3+ does not support per-request generators. Falling back",
vllm#23621), while pip installs log the sort path's peak (vllm#23278, 0.10.1 in a conda env:
"Available KV cache memory: -2.14 GiB" for gpt-oss-120b at 1024 sequences; vllm#21429's 5.62
GiB torch peak for Qwen3-235B).

The profile's ``_dummy_sampler_run`` passes no per-request generators, so it samples through
whichever path was chosen: the sort path holds ~3x the FlashInfer path's working set over
``[max_num_seqs, vocab]``. For these releases oomkit models the FlashInfer path (the image's)
and carries the sort path's extra peak as ``sampler_sort_extra_bytes``: the verdict counts it
against the KV pool, so a run that fits one way and not the other is "tight".
``VLLM_USE_FLASHINFER_SAMPLER=0`` (the sort path, as a pip install without FlashInfer) or ``=1``
(FlashInfer) settles it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from oomkit.estimate.hf_activations import sampler_peak_bytes
from oomkit.estimate.vllm_engines import VllmEngine
from oomkit.spec.model import ModelSpec

__all__ = ["SamplerPath", "sampler_path", "sampler_peaks"]

_ENV = "VLLM_USE_FLASHINFER_SAMPLER"


@dataclass(frozen=True, slots=True)
class SamplerPath:
    """The sampler path modelled, and whether the sort path remains possible."""

    flashinfer: bool
    #: FlashInfer modelled, but an install without it sorts (the verdict counts the difference)
    sort_possible: bool
    note: str | None


def sampler_path(engine: VllmEngine) -> SamplerPath:
    """The profile run's sampler path for ``engine`` (reads ``VLLM_USE_FLASHINFER_SAMPLER``)."""
    if not engine.flashinfer_if_installed:
        return SamplerPath(flashinfer=engine.flashinfer_sampler, sort_possible=False, note=None)
    raw = os.environ.get(_ENV, "").strip()
    if raw in ("0", "1"):
        how = "FlashInfer's top-k/top-p kernel" if raw == "1" else "the PyTorch sort path"
        return SamplerPath(flashinfer=raw == "1", sort_possible=False, note=f"{_ENV}={raw}: {how}")
    return SamplerPath(
        flashinfer=True,
        sort_possible=True,
        note=(
            "profile sampler through FlashInfer's top-k/top-p kernel, as in the vllm-openai "
            "image; this release uses it only when FlashInfer is installed (a pip install "
            f"without it sorts: a larger peak, counted in the verdict; {_ENV}=0/1 settles it)"
        ),
    )


def sampler_peaks(
    spec: ModelSpec, engine: VllmEngine, *, rows: int, tp: int, elem_bytes: int, hidden_bytes: int
) -> tuple[int, int, str | None]:
    """(the modelled sampler peak, the sort path's peak or 0 when it cannot happen, note) for
    the profile's dummy sampler over ``rows`` rows, ``hidden_bytes`` of hidden states held."""
    path = sampler_path(engine)

    def peak(flashinfer: bool) -> int:
        return hidden_bytes + sampler_peak_bytes(
            spec,
            n_seqs=rows,
            tp=tp,
            logits_elem_bytes=elem_bytes,
            flashinfer=flashinfer,
            triton=engine.triton_sampler,
        )

    return peak(path.flashinfer), peak(False) if path.sort_possible else 0, path.note
