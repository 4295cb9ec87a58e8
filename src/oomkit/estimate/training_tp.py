"""Tensor-parallel size of a training run checked against the model: the trainer shards the
attention heads over the ``tp`` ranks as the inference runtimes do, so the same rule
(:func:`oomkit.estimate.checks.tp_refusal`: heads, KV heads, dense MLP, padded vocabulary)
refuses a size the model cannot be split by.

Megatron-Core ``megatron/core/transformer/attention.py`` (``Attention.__init__``):
``self.num_attention_heads_per_partition = divide(self.config.num_attention_heads, world_size)``
and ``self.num_query_groups_per_partition = divide(self.config.num_query_groups, world_size)``
(``world_size`` = the tensor-parallel size; ``megatron/core/utils.py`` ``divide`` asserts
"{numerator} is not divisible by {denominator}"), so Llama-3.1-8B's 32 heads / 8 KV heads
refuse ``--tp 3`` at start-up.
"""

from __future__ import annotations

from oomkit.errors import InvalidSettingError
from oomkit.spec.model import ModelSpec

__all__ = ["check_training_tp"]


def check_training_tp(spec: ModelSpec, tp: int, n_gpus: int) -> None:
    """Refuse a training ``tp`` the model's heads (or MLP / vocabulary) cannot be split by,
    listing the sizes that divide both the model and the ``n_gpus`` GPUs (gpus x nodes).

    Raises:
        InvalidSettingError: the trainer would refuse ``tp`` for this model.
    """
    if tp <= 1:
        return
    from oomkit.estimate.checks import tp_refusal, valid_tp_sizes

    why = tp_refusal(spec, tp)
    if why is None:
        return
    sizes = [t for t in valid_tp_sizes(spec, n_gpus) if n_gpus % t == 0]
    raise InvalidSettingError(
        f"--tp {tp}: tensor parallelism shards the attention heads over the ranks and {why} "
        f"(Megatron-Core divide(num_attention_heads, tp)); valid sizes on the {n_gpus} "
        f"GPU{'s' * (n_gpus > 1)}: " + ", ".join(map(str, sizes)),
        setting="tp",
        value=tp,
    )
