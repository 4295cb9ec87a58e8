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
  vllm/third_party from 0.11): no padding on Hopper (intermediate to a multiple of 64), but
  ``_swizzle_mxfp4`` makes swizzled copies of the scales for ``PrecisionConfig`` while
  ``layer.w13_weight_scale``/``w2_weight_scale`` are never deleted (only the weight values are),
  so the scales are resident twice; the biases are upcast to fp32. gpt-oss-120b on H100: +3.4
  GiB ("Model loading took 64.38 GiB", vllm#33155, 0.14.1, "Using Triton backend").

FlashInfer backends (datacenter Blackwell, SM100) and ROCm pad differently and are not
modelled here (0 extra, noted).
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
    """``"marlin"``, ``"triton"`` or None (not modelled) for ``device``.

    ``hopper`` is the generation's choice on SM90 (``"marlin"`` before ``triton_kernels`` came
    with vLLM, ``"triton"`` after). ``get_mxfp4_backend``: Triton needs compute capability
    9.0 <= cc < 11.0; SM100 takes FlashInfer when installed; everything else on CUDA is Marlin.
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
        return None  # FlashInfer MXFP4 backends (padding to 256 on both dims)
    return "marlin"


def mxfp4_layout_extra_bytes(spec: ModelSpec, *, n_moe_layers: int, tp: int, backend: str) -> int:
    """Bytes per rank above the checkpoint's MXFP4 expert tensors for ``backend``."""
    moe = spec.moe
    if moe is None or n_moe_layers <= 0:
        return 0
    e, h = moe.num_experts, spec.hidden_size
    i = moe.expert_intermediate_size // max(1, tp)
    ckpt_values = e * 3 * i * h // 2  # w13 [E, 2I, H/2] + w2 [E, H, I/2], two fp4 per byte
    ckpt_scales = e * 3 * i * h // _MX_BLOCK
    ckpt_bias = e * (2 * i + h) * 2  # bf16
    if backend == "marlin":
        hp, ip = _round_up(h, 256), _round_up(i, 128)
        values = e * 3 * ip * hp // 2
        scales = e * 3 * ip * hp // _MX_BLOCK
        bias = e * (2 * ip + hp) * 2
        per_layer = (values - ckpt_values) + (scales - ckpt_scales) + (bias - ckpt_bias)
    elif backend == "triton":
        per_layer = ckpt_scales + ckpt_bias  # scales kept twice; biases bf16 -> fp32
    else:
        return 0
    return n_moe_layers * per_layer


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
    backend = mxfp4_backend(device, hopper=hopper) if fmt == "mxfp4" else None
    if backend is None or spec.moe is None:
        return 0, ()
    n_moe = sum(1 for i in layers if i not in spec.moe.dense_layers)
    extra = mxfp4_layout_extra_bytes(spec, n_moe_layers=n_moe, tp=tp, backend=backend)
    how = "padded shapes" if backend == "marlin" else "scales kept twice"
    return extra, (
        f"MXFP4 experts laid out by the {backend} backend: +{extra / 2**30:.2f} GiB over the "
        f"checkpoint ({how})",
    )
