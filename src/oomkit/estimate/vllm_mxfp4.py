"""vLLM's MXFP4 MoE weights (gpt-oss) once the backend has laid them out: more than the checkpoint.

``Mxfp4MoEMethod`` (vllm/model_executor/layers/quantization/mxfp4.py) picks a backend per GPU
(``get_mxfp4_backend``) and the backend decides what stays resident after
``process_weights_after_loading``:

* **Marlin** (GPUs before Hopper, consumer Blackwell, and Hopper while ``triton_kernels`` was not
  shipped with vLLM, 0.10.x): ``create_weights`` pads for the Marlin MoE kernel ("n % 256 == 0
  and k % 128 == 0"): ``hidden_size`` to a multiple of 256 and the per-rank expert intermediate
  size to a multiple of 128; values and their e8m0 scales (one byte per 32 values) take the
  padded shapes, biases too. gpt-oss-120b on H100: 2880 -> 3072 and 2880 -> 2944, +5.1 GiB
  ("Model loading took 65.9651 GiB", vllm#23278, 0.10.1, "leveraging the Marlin kernel").
* **Triton** (``triton_kernels`` on SM90/SM100 with torch >= 2.8, vendored in
  vllm/third_party from 0.11): ``create_weights`` pads the per-rank expert intermediate size to a
  multiple of 64 ("pad the intermediate size to be a multiple of 2 * mxfp4_block",
  ``round_up(intermediate_size_per_partition, 64)``): nothing on one GPU for gpt-oss (2880),
  but 1440 -> 1472, 720 -> 768 and 360 -> 384 at TP 2/4/8. ``_swizzle_mxfp4`` then makes
  swizzled copies of the scales for ``PrecisionConfig`` while ``layer.w13_weight_scale``/
  ``w2_weight_scale`` are never deleted (only the weight values are), so the padded scales are
  resident twice; the padded biases are upcast to fp32. gpt-oss-120b on H100: +3.4 GiB ("Model
  loading took 64.38 GiB", vllm#33155, 0.14.1, "Using Triton backend").
* **FlashInfer** (datacenter Blackwell, SM100, when FlashInfer is installed:
  ``get_mxfp4_backend``: ``is_device_capability(100) and has_flashinfer()`` ->
  ``SM100_FI_MXFP4_BF16``, "Using FlashInfer MXFP4 BF16 backend for SM100"): ``create_weights``
  pads both the per-rank intermediate size and ``hidden_size`` to a multiple of 256;
  ``process_weights_after_loading`` replaces the values and scales by their shuffled copies
  (same padded shapes) and the biases by fp32 shuffled copies. gpt-oss-120b: 2880 -> 3072 on
  both dims, +7.9 GiB. Without FlashInfer SM100 takes Triton; oomkit assumes FlashInfer (the vllm
  wheel pins it as a dependency in current releases, e.g. 0.21.0 requires
  ``flashinfer-python==0.6.8.post1``, and the vllm-openai image ships it) and says so.

ROCm (its own ``get_padding_alignment``) is not modelled: the checkpoint size is used and a note
says so.
"""

from __future__ import annotations

from collections.abc import Sequence

from oomkit.spec.hardware import DeviceTarget
from oomkit.spec.model import ModelSpec

__all__ = ["mxfp4_backend", "mxfp4_layout_extra_bytes", "mxfp4_weights_extra"]

_MX_BLOCK = 32  # values per e8m0 scale byte


def _round_up(x: int, m: int) -> int:
    return -(-x // m) * m


def mxfp4_backend(device: DeviceTarget, *, hopper: str) -> str | None:
    """``"marlin"``, ``"triton"``, ``"flashinfer"`` or None (not modelled) for ``device``.

    ``hopper`` is the generation's choice on SM90 (``"marlin"`` before ``triton_kernels`` came
    with vLLM, ``"triton"`` after). ``get_mxfp4_backend``: SM100 takes FlashInfer when
    installed (assumed); Triton needs compute capability 9.0 <= cc < 11.0; everything else on
    CUDA is Marlin.
    """
    if device.backend != "cuda" or not device.compute_capability:
        return None
    try:
        major = int(device.compute_capability.split(".")[0])
    except ValueError:
        return None
    if major == 9:
        return hopper
    if major == 10:
        return "flashinfer"
    return "marlin"


def mxfp4_layout_extra_bytes(spec: ModelSpec, *, n_moe_layers: int, tp: int, backend: str) -> int:
    """Bytes per rank above the checkpoint's MXFP4 expert tensors for ``backend``."""
    moe = spec.moe
    if moe is None or n_moe_layers <= 0:
        return 0
    e, h = moe.num_experts, spec.hidden_size
    i = moe.expert_intermediate_size // max(1, tp)

    def tensors(ip: int, hp: int, bias_bytes: int) -> tuple[int, int, int]:
        """(values, scales, biases) bytes of one layer's experts in the shapes [ip, hp]:
        w13 [E, 2I, H/2] + w2 [E, H, I/2] (two fp4 per byte), one e8m0 byte per 32 values,
        biases [E, 2I] + [E, H]."""
        return e * 3 * ip * hp // 2, e * 3 * ip * hp // _MX_BLOCK, e * (2 * ip + hp) * bias_bytes

    values_c, scales_c, bias_c = tensors(i, h, 2)  # checkpoint: bias bf16
    if backend == "marlin":
        values, scales, bias = tensors(_round_up(i, 128), _round_up(h, 256), 2)
    elif backend == "triton":
        values, scales, bias = tensors(_round_up(i, 64), h, 4)
        scales *= 2  # the padded scales and their swizzled copies
    elif backend == "flashinfer":
        values, scales, bias = tensors(_round_up(i, 256), _round_up(h, 256), 4)
    else:
        return 0
    return n_moe_layers * ((values - values_c) + (scales - scales_c) + (bias - bias_c))


def mxfp4_weights_extra(
    spec: ModelSpec,
    quant: str | None,
    device: DeviceTarget,
    *,
    hopper: str,
    layers: Sequence[int],
    tp: int,
) -> tuple[int, tuple[str, ...]]:
    """(bytes per rank above the checkpoint, notes) for an MXFP4 MoE model on ``device``
    (``quant`` the user's format, else the checkpoint's ``quantization_config``)."""
    fmt = (quant or (spec.quantization.method if spec.quantization else "")).lower()
    if fmt != "mxfp4" or spec.moe is None:
        return 0, ()
    backend = mxfp4_backend(device, hopper=hopper)
    if backend is None:
        return 0, (
            f"MXFP4 expert layout on {device.backend} not modelled (vLLM pads it for its own "
            "kernels there): checkpoint size used",
        )
    n_moe = sum(1 for i in layers if i not in spec.moe.dense_layers)
    extra = mxfp4_layout_extra_bytes(spec, n_moe_layers=n_moe, tp=tp, backend=backend)
    how = {
        "marlin": "padded to 256/128 for the Marlin MoE kernel",
        "triton": "intermediate padded to 64 per rank, scales kept twice, fp32 biases",
        "flashinfer": "both dims padded to 256, fp32 biases; assumes FlashInfer is installed, "
        "without it vLLM takes Triton",
    }[backend]
    return extra, (
        f"MXFP4 experts laid out by the {backend} backend: +{extra / 2**30:.2f} GiB over the "
        f"checkpoint ({how})",
    )
