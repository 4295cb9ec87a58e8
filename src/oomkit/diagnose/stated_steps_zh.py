"""Completed steps stated in Chinese (docpost19), for ``rules_stated._stated_growth_match``.

The English reading (``rules_stated._AFTER_STEPS``: "after 3 epochs", "after a few runs") has
no Chinese sibling, so "大概十几个epoch之后就显存溢出" (overflow after a dozen-odd epochs) read as
a first-step failure. Chinese puts the count, an optional measure word 个, the unit and a
postposition 之后 / 以后 / 后 (after): "3个epoch后", "跑了几轮之后", "训练几十步以后". A numeral
counts as N completed; 几 / 十几 / 几十 / 数 / 若干 / 多 (a few, a dozen-odd, tens, several) as
several. As in English, a training step counts from two completed (the first step allocates
the optimizer's states), an epoch, run or request from one.
"""

from __future__ import annotations

import re

__all__ = ["AFTER_STEPS_ZH", "steps_done_zh"]

AFTER_STEPS_ZH = re.compile(
    r"(?i)(?P<n>\d{1,7}|十几|几十|几|数|若干|多)\s?(?:个|個)?\s?"
    r"(?P<unit>epochs?|steps?|iterations?|iters?|batch(?:es)?|轮|輪|步|次|个小时|個小時|小时|小時)"
    r"\s?(?:之后|之後|以后|以後|后|後)"
)
_STEP_UNITS = ("step", "iter", "batch", "步")


def steps_done_zh(text: str) -> str | None:
    """The Chinese words stating that enough steps completed before the failure, else None."""
    for m in AFTER_STEPS_ZH.finditer(text):
        n = m["n"]
        if n.isdigit() and int(n) < (2 if m["unit"].lower().startswith(_STEP_UNITS) else 1):
            continue
        return m.group(0)
    return None
