"""transformers' MXFP4 checkpoints (gpt-oss): kept 4-bit only when the kernels are installed.

``Mxfp4HfQuantizer.validate_environment`` (huggingface/transformers
src/transformers/quantizers/quantizer_mxfp4.py, read at 0001b3ee; the same branches since the
``kernels``-hub rewrite of the 4.56/4.57 releases) decides, for a pre-quantized checkpoint on a
CUDA GPU::

    compute_capability = torch.cuda.get_device_capability()
    gpu_is_supported = compute_capability >= (7, 5)
    kernels_available = is_triton_available("3.4.0") and is_kernels_available()
    if self.pre_quantized:
        if not gpu_is_supported:   ... self.quantization_config.dequantize = True
        if not kernels_available:  ... self.quantization_config.dequantize = True

("MXFP4 quantization requires Triton and kernels installed: CUDA requires Triton >= 3.4.0, ...
we will default to dequantizing the model to bf16"). With ``dequantize`` the
``Mxfp4Dequantize`` weight converter turns every ``*_blocks``/``*_scales`` pair into the bf16
expert tensor: gpt-oss-20b's experts go from ~17 bytes per 32 values to 64.

``kernels`` (the Hub-kernel loader) is not a transformers dependency and Triton 3.4 only ships
with torch 2.8+, so a plain ``pip install transformers`` on a supported GPU still dequantizes:
oomkit cannot see the user's environment: the extra bytes are the risk of a missing package, a
band term of the verdict (never part of the total), named with the one install that removes it.
Below compute capability 7.5 (V100, P100...) the dequantization is certain: the weights are
planned in bf16 (:func:`mxfp4_effective_quant`)
(:data:`oomkit.estimate.verdict_runtime.MXFP4_DEQUANT`; p-e-w/heretic#21: gpt-oss-20b on
an RTX 3090, CUDA OOM at shard 2/3 of a ~13 GB checkpoint).
"""

from __future__ import annotations

from collections.abc import Sequence

from oomkit.errors import UnknownNameError
from oomkit.estimate.breakdown import DeviceUsage
from oomkit.quant.hf_formats import hf_format, hf_weights_bytes
from oomkit.spec.hardware import Hardware
from oomkit.spec.model import TensorInfo

__all__ = [
    "mxfp4_dequant_detail",
    "mxfp4_dequant_extra_bytes",
    "mxfp4_effective_quant",
]


def mxfp4_dequant_extra_bytes(quant: str | None, tensors: Sequence[TensorInfo]) -> int:
    """Bytes the weights grow by when the MXFP4 experts are dequantized to bf16 (0: not MXFP4)."""
    if not quant:
        return 0
    try:
        method = hf_format(quant).method
    except UnknownNameError:  # an unknown name is reported by the weights planner, not here
        return 0
    if method != "mxfp4":
        return 0
    packed = hf_weights_bytes(quant, tensors, dtype="bf16")
    plain = hf_weights_bytes("bf16", tensors, dtype="bf16")
    return max(0, plain - packed)


def mxfp4_dequant_detail(
    quant: str | None, tensors: Sequence[TensorInfo], usages: Sequence[DeviceUsage]
) -> dict[str, dict[str, int]]:
    """``runtime_details`` entry ``mxfp4_dequant_bytes``: per GPU, its share (by the weights it
    holds) of the bytes the bf16 experts would add; empty when the weights are not MXFP4."""
    extra = mxfp4_dequant_extra_bytes(quant, tensors)
    total = sum(u.weights_bytes for u in usages)
    if not extra or total <= 0:
        return {}
    return {"mxfp4_dequant_bytes": {u.device: extra * u.weights_bytes // total for u in usages}}


def mxfp4_effective_quant(quant: str | None, hardware: Hardware) -> str | None:
    """``bf16`` for an MXFP4 ``quant`` when every GPU is below compute capability 7.5
    (``gpu_is_supported = compute_capability >= (7, 5)`` fails: always dequantized); else
    ``quant`` unchanged."""
    if not quant or _method(quant) != "mxfp4":
        return quant
    gpus = [d for d in hardware.devices if d.backend == "cuda"]
    caps = [_capability(d.compute_capability) for d in gpus]
    if gpus and all(c is not None and c < (7, 5) for c in caps):
        return "bf16"
    return quant


def _method(quant: str) -> str | None:
    try:
        return hf_format(quant).method
    except UnknownNameError:
        return None


def _capability(text: str | None) -> tuple[int, int] | None:
    major, _, minor = (text or "").partition(".")
    if not major.isdigit():
        return None
    return int(major), int(minor) if minor.isdigit() else 0
