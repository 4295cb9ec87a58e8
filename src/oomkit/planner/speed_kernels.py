"""Weight formats whose decode speed the bandwidth model cannot predict.

:mod:`oomkit.planner.speed` rates a token as the bytes it reads over the memory bandwidth, with
factors fitted on llama.cpp records, whose quantized matmuls are dequantize-in-register GEMV
kernels that stay bandwidth-bound. transformers runs quantized weights through other kernels
whose cost is not the bytes they read, and for which no record fits a factor:

* bitsandbytes LLM.int8() (``int8``): every linear layer splits the activations into outlier
  columns (fp16 matmul) and the rest (row-wise int8 quantization of the activations, int8
  matmul, dequantization of the result), so a token costs several kernels per layer on top of
  the bytes. Measured slower than 16-bit although it reads half the bytes: BLOOM-176B on A100s,
  batch 1, accelerate bf16 230.38 ms/token vs int8 286.56 ms/token (HF blog "Incredibly Fast
  BLOOM Inference with DeepSpeed and Accelerate", huggingface.co/blog/bloom-inference-pytorch-
  scripts); the LLM.int8() paper (Dettmers et al. 2022, arXiv:2208.07339, appendix on inference
  speed) reports a slowdown against fp16 for models of 13B parameters and below, a speed-up
  only above. A bandwidth figure would rate it about twice as fast as bf16: the opposite.
* bitsandbytes 4-bit (``nf4``/``fp4``): the batch-1 inference kernels (bitsandbytes 0.40.0
  release notes) speed up the matmul itself 2.2x (Turing), 3.4x (Ampere), 4.0x (Ada/Hopper)
  over 16-bit for inner dimensions of 4096 and more; batches above one dequantize the whole
  weight to 16-bit first (slower than bf16). End-to-end generate() figures per GPU are not in
  the source, and the kernel depends on the batch: not modelled.
* GPTQ / AWQ / FP8 / MXFP4 / NVFP4 checkpoints in transformers: the kernel depends on the
  backend the install picks (exllama v1/v2, marlin, triton, cuda-old for GPTQ; gemm/gemv/
  exllama for AWQ; fbgemm or a dequantizing fallback for FP8) and no record fits a factor for
  any of them.

16-bit and fp32 weights run plain cuBLAS matmuls: the bandwidth model applies (with the note
that its factors were fitted on llama.cpp).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from oomkit.estimate.breakdown import Estimate
    from oomkit.spec.model import ModelSpec

__all__ = ["NOT_MODELLED", "speed_unknown", "unmodelled_kernel"]

#: HF weight-format method (:func:`oomkit.quant.hf_formats.hf_format`) -> why its transformers
#: decode speed is not modelled (the sources are in the module docstring)
NOT_MODELLED: dict[str, str] = {
    "bnb_int8": (
        "bitsandbytes LLM.int8() is not bandwidth-bound (outlier decomposition, int8 matmul "
        "and dequantization per layer); measured slower than bf16 (BLOOM-176B, batch 1: "
        "286.6 vs 230.4 ms/token, HF blog bloom-inference-pytorch-scripts; LLM.int8() paper: "
        "slower than fp16 up to 13B)"
    ),
    "bnb_4bit": (
        "bitsandbytes 4-bit runs its own kernels (batch 1: matmul 2.2-4.0x faster than 16-bit "
        "by GPU generation, bitsandbytes 0.40.0 notes; larger batches dequantize first); no "
        "end-to-end figure to fit"
    ),
    "gptq": "GPTQ's transformers kernel depends on the installed backend; no fitted factor",
    "awq": "AWQ's transformers kernel depends on the installed backend; no fitted factor",
    "fp8": "FP8 weights in transformers (fbgemm or a dequantizing fallback): no fitted factor",
    "fbgemm_fp8": "fbgemm FP8 kernels in transformers: no fitted factor",
    "mxfp4": "MXFP4 in transformers (triton kernels or a dequantizing fallback): no fitted factor",
    "nvfp4": "NVFP4 in transformers: no fitted factor",
}


#: ``quantization_config.quant_method`` values that name a bitsandbytes format
_CHECKPOINT_METHODS = {"bitsandbytes_4bit": "nf4", "bitsandbytes_8bit": "int8"}


def unmodelled_kernel(spec: ModelSpec, est: Estimate) -> str | None:
    """Why ``est``'s decode speed is not modelled (a transformers run whose weights are not
    plain fp32/16-bit matmuls), else None."""
    if est.runtime != "transformers":
        return None
    from oomkit.errors import UnknownNameError
    from oomkit.quant.hf_formats import hf_format

    quant = est.settings.get("quant")
    names = [quant] if isinstance(quant, str) and quant else []
    if spec.quantization is not None:  # a pre-quantized checkpoint loads as it ships
        method = spec.quantization.method.lower()
        names.append(_CHECKPOINT_METHODS.get(method, method))
    for name in names:
        try:
            method = hf_format(name).method
        except UnknownNameError:
            continue  # a torch dtype name transformers accepts ("float16"): plain matmuls
        reason = NOT_MODELLED.get(method)
        if reason is not None:
            return f"{name}: {reason}"
    return None


_PREFIX = "Decode speed not modelled: "


def speed_unknown(speed: object) -> str:
    """The plan line's speed text when a :class:`~oomkit.planner.speed.SpeedEstimate` is not
    modelled for its weight kernel: ``"  (decode speed not modelled: <reason's first clause>)"``,
    else ``""`` (an unknown bandwidth prints nothing, as before)."""
    basis = getattr(speed, "basis", "")
    if not isinstance(basis, str) or not basis.startswith(_PREFIX):
        return ""
    reason = basis.removeprefix(_PREFIX).rstrip(".").split(" (")[0].split(";")[0]
    return f"  (decode speed not modelled: {reason})"
