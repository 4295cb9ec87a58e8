"""Pure fp16 training (fp16 weights, no fp32 master copy) is refused wherever it is asked.

An fp16 run needs loss scaling, and loss scaling needs fp32 parameters: the HF Trainer's
``torch.amp.GradScaler`` refuses fp16 parameters' gradients (torch/amp/grad_scaler.py
``_unscale_grads_``: "Attempting to unscale FP16 gradients."), and torchtune refuses an fp16
``dtype`` (torchtune/training/precision.py ``get_dtype``). The one check serves the CLI
(``--mixed-precision fp16 --no-master-weights``), the web/JSON API that runs it, and the Python
API (:func:`oomkit.estimate.training.estimate_training`).
"""

from __future__ import annotations

from oomkit.errors import InvalidSettingError

__all__ = ["check_pure_fp16"]

_WHY = (
    'pure fp16 training fails (GradScaler: "Attempting to unscale FP16 gradients"; torchtune '
    "refuses fp16): keep the fp32 master weights or use bf16."
)


def check_pure_fp16(mixed_precision: str | None, master_weights: bool, *, flags: bool) -> None:
    """Refuse fp16 without fp32 master weights (``flags``: name the CLI's options).

    Raises:
        InvalidSettingError: ``mixed_precision`` is fp16 and ``master_weights`` is False.
    """
    if mixed_precision != "fp16" or master_weights:
        return
    asked = (
        "--no-master-weights with --mixed-precision fp16"
        if flags
        else "master_weights=False with mixed_precision='fp16'"
    )
    raise InvalidSettingError(f"Invalid {asked}: {_WHY}", setting="master_weights")
