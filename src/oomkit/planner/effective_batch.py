"""A smaller micro-batch that keeps the effective batch: the divisor rule.

The effective batch of a data-parallel step is ``micro-batch x gradient accumulation x GPUs``
(HF Trainer's ``total_train_batch_size`` is ``per_device_train_batch_size *
gradient_accumulation_steps * world_size``: transformers ``trainer.py``, ``_inner_training_loop``
"Total train batch size (w. parallel, distributed & accumulation)"; DeepSpeed's
``train_batch_size = train_micro_batch_size_per_gpu * gradient_accumulation_steps * world_size``:
``deepspeed/runtime/config.py`` ``_batch_assertion``). Accumulation is a whole number of
micro-batches, so with the GPUs unchanged a new micro-batch keeps the effective batch only when
it divides ``micro-batch x accumulation``; the accumulation that restores it is the quotient
(4 x 1 -> 2 x 2, never 4 x 1 -> 3 x 1). Micro-batch 1 divides every batch, so a divisor exists
whenever any smaller micro-batch does.

>>> smaller_divisors(4, 1)
(2, 1)
>>> smaller_divisors(6, 2)
(4, 3, 2, 1)
>>> accumulation_for(6, 2, 4)
3
>>> accumulation_for(4, 1, 3) is None
True
>>> next_divisor(6, 1), next_divisor(3, 2), next_divisor(1, 6)
(3, 2, None)
"""

from __future__ import annotations

__all__ = ["accumulation_for", "next_divisor", "smaller_divisors"]


def smaller_divisors(micro_batch: int, grad_accum: int) -> tuple[int, ...]:
    """The micro-batches below ``micro_batch`` that divide ``micro_batch x grad_accum``,
    largest first (empty when ``micro_batch`` is 1)."""
    total = micro_batch * grad_accum
    return tuple(d for d in range(micro_batch - 1, 0, -1) if total % d == 0)


def accumulation_for(micro_batch: int, grad_accum: int, new_micro_batch: int) -> int | None:
    """The accumulation that keeps ``micro_batch x grad_accum`` at ``new_micro_batch``, or
    None when ``new_micro_batch`` does not divide it (the effective batch would change)."""
    total = micro_batch * grad_accum
    if new_micro_batch < 1 or total % new_micro_batch:
        return None
    return total // new_micro_batch


def next_divisor(micro_batch: int, grad_accum: int) -> int | None:
    """The largest micro-batch below ``micro_batch`` that keeps the effective batch (the
    planner's step, repeated until a step fits, so the one it stops at is the largest divisor
    that fits: 6 x 1 -> 3 x 2 -> 2 x 3 -> 1 x 6, never 3 x 2 -> 1 x 4), or None at 1."""
    divisors = smaller_divisors(micro_batch, grad_accum)
    return divisors[0] if divisors else None
