"""Errors raised with a library keyword's name (``seq``, ``micro_batch``, ``'ctx'``) re-worded
with the CLI flag that set it (``--seq``, ``--micro-batch``, ``--ctx``), so a usage error
names what the user typed."""

from __future__ import annotations

import re
from collections.abc import Mapping

from oomkit.errors import InvalidSettingError

__all__ = ["SETTING_FLAGS", "with_flag_names"]

#: library setting names -> the flag that sets them, for errors that reach ``oomkit.cli.main``
#: (``TrainingSettings``, ``PlanRequest``, ``InferenceSettings`` fields, runtime checks)
SETTING_FLAGS: dict[str, str] = {
    "ctx": "--ctx",
    "min_ctx": "--min-ctx",
    "parallel": "--parallel",
    "headroom": "--headroom",
    "prefer": "--prefer",
    "micro_batch": "--micro-batch",
    "seq": "--seq",
    "lora_rank": "--lora-rank",
    "lora_targets": "--lora-targets",
    "gpus": "--gpus",
    "nodes": "--nodes",
    "zero": "--zero",
    "grad_accum": "--grad-accum",
    "fragmentation_fraction": "--fragmentation",
    "expandable_segments": "--expandable-segments",
    "kbit_prep": "--kbit-prep",
    "optimizer_impl": "--optimizer-impl",
    "runtime_version": "--runtime-version",
    "tp": "--tp",
    "pp": "--pp",
    "overhead_bytes": "--overhead",
    "max_num_seqs": "--max-num-seqs",
    "max_num_batched_tokens": "--max-num-batched-tokens",
    "enable_lora": "--enable-lora",
    "max_loras": "--max-loras",
    "max_lora_rank": "--max-lora-rank",
    "max_cpu_loras": "--max-cpu-loras",
    "lora_dtype": "--lora-dtype",
    "batch_size": "--batch-size",
    "ubatch": "--ubatch",
    "n_gpu_layers": "-ngl",
    "n_cpu_moe": "--n-cpu-moe",
    "gpu_memory_utilization": "--gpu-memory-utilization",
    "mem_fraction_static": "--mem-fraction-static",
    "block_size": "--block-size",
    "cache_type_k": "-ctk/--kv-dtype",
    "cache_type_v": "-ctv/--kv-dtype",
    "min_tps": "--tps",
    "kv": "--kv-dtype",
    # TrainingSettings fields named in its own errors ("Invalid mixed_precision 'no' ...")
    "mixed_precision": "--mixed-precision",
    "sp": "--sp",
    "offload_optimizer": "--offload-optimizer",
    "offload_params": "--offload-params",
    "optimizer_in_backward": "--optimizer-in-backward",
}


def with_flag_names(err: InvalidSettingError, flags: Mapping[str, str]) -> InvalidSettingError:
    """``err`` with each whole-word mention of its ``setting`` (quoted or not) replaced by
    ``flags[setting]``; ``err`` itself when its setting has no flag in ``flags``.

    >>> e = InvalidSettingError("Invalid micro_batch 0: it must be at least 1.",
    ...                         setting="micro_batch", value=0)
    >>> str(with_flag_names(e, {"micro_batch": "--micro-batch"}))
    'Invalid --micro-batch 0: it must be at least 1.'
    >>> e = InvalidSettingError("'min_ctx' (9) is larger than 'ctx' (2)", setting="min_ctx")
    >>> str(with_flag_names(e, SETTING_FLAGS))
    '--min-ctx (9) is larger than --ctx (2)'
    >>> e = InvalidSettingError("Invalid context size for 'ctx' (0)", setting="ctx", value=0)
    >>> str(with_flag_names(e, {"ctx": "--ctx"}))
    'Invalid context size for --ctx (0)'
    """
    flag = flags.get(err.setting)
    if flag is None:
        return err
    # a whole word: not part of a longer name, a path or a pair such as "zero/fsdp"
    pattern = re.compile(rf"(?<![\w/.-])'?{re.escape(err.setting)}'?(?![\w/-])")
    message, n = pattern.subn(lambda _: flag, str(err))
    if n == 0 and flag not in message:  # ("--tp 3 x --pp 1 needs ..." names it already)
        message = f"{flag}: {message}"
    # other settings the message quotes ("'min_ctx' (9) is larger than 'ctx' (2)")
    message = re.sub(r"'([a-z_]+)'", lambda m: flags.get(m.group(1), m.group(0)), message)
    out = InvalidSettingError(message, setting=flag, value=err.value)
    out.__cause__ = err.__cause__
    return out
