"""Errors raised with a library keyword's name (``seq``, ``micro_batch``, ``'ctx'``) re-worded
with the CLI flag that set it (``--seq``, ``--micro-batch``, ``--ctx``), so a usage error
names what the user typed."""

from __future__ import annotations

import re
from collections.abc import Mapping

from oomkit.errors import InvalidSettingError

__all__ = ["with_flag_names"]


def with_flag_names(err: InvalidSettingError, flags: Mapping[str, str]) -> InvalidSettingError:
    """``err`` with each whole-word mention of its ``setting`` (quoted or not) replaced by
    ``flags[setting]``; ``err`` itself when its setting has no flag in ``flags``.

    >>> e = InvalidSettingError("Invalid micro_batch 0: it must be at least 1.",
    ...                         setting="micro_batch", value=0)
    >>> str(with_flag_names(e, {"micro_batch": "--micro-batch"}))
    'Invalid --micro-batch 0: it must be at least 1.'
    >>> e = InvalidSettingError("Invalid context size for 'ctx' (0)", setting="ctx", value=0)
    >>> str(with_flag_names(e, {"ctx": "--ctx"}))
    'Invalid context size for --ctx (0)'
    """
    flag = flags.get(err.setting)
    if flag is None:
        return err
    pattern = re.compile(rf"(?<![\w-])'?{re.escape(err.setting)}'?(?![\w-])")
    message, n = pattern.subn(lambda _: flag, str(err))
    if n == 0:
        message = f"{flag}: {message}"
    out = InvalidSettingError(message, setting=flag, value=err.value)
    out.__cause__ = err.__cause__
    return out
