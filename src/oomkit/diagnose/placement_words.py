"""More ways a text says one GPU of several took the load (pure; docpost22, issue #9 item 1).

:func:`oomkit.diagnose.rules_stated_alloc.stated_one_gpu_of_several` reads a placement the message
cannot show: everything on the first device while the others are there. These are the forms it
did not read:

* the first device named in words as where everything went ("loads everything onto the first
  GPU", "all the weights go to the primary card");
* ``device_map`` said not to spread the model ("device_map='auto' does not split the model",
  "device_map is not distributing the layers across the GPUs"): accelerate's
  ``infer_auto_device_map`` fills devices in order, each up to its ``max_memory`` budget
  (``get_balanced_memory`` only when ``balanced``), so a budget as large as the card, or a
  single visible device, leaves every layer on the first;
* memory said to be uneven across the cards ("uneven memory across the GPUs", "显存不太均匀",
  "0号卡特别高": card 0 especially high): the imbalance itself.

A sentence that only names several GPUs ("training on 8 GPUs") states no placement and is not read.
"""

from __future__ import annotations

import re

__all__ = ["ONE_OF_SEVERAL_MORE"]

_FIRST = r"(?:the\s+)?(?:first|primary|main|0th)\s+(?:gpu|card|device)\b"
ONE_OF_SEVERAL_MORE = re.compile(
    r"(?i)\b(?:everything|all)(?:\s+(?:the\s+)?(?:tensors?|weights|data|layers|memory))?\s+"
    r"(?:is\s+|go\s+|goes\s+|went\s+|got\s+|gets\s+|are\s+|were\s+)?"
    r"(?:loaded\s+|sent\s+|put\s+|placed\s+|moved\s+|allocated\s+)?(?:on|onto|into|to)\s+" + _FIRST
    + r"|\bdevice_map\b[^.\n]{0,40}?\b(?:does\s*n[o']t|did\s*n[o']t|is\s*n[o']t|isn't|not|never"
    r"|fails?\s+to)\s+(?:\w+\s+)?(?:spread\w*|split\w*|distribut\w*|balanc\w*|shard\w*)\b"
    r"|\b(?:uneven|unbalanced|imbalanced)\s+(?:gpu\s+|vram\s+)?memory\s+(?:usage\s+|use\s+)?"
    r"(?:across|between|among|on)\s+(?:the\s+)?(?:\d+\s+|two\s+|multiple\s+)?(?:gpus|cards|devices)"
    r"|显存[^。\n]{0,6}不(?:太|很)?(?:均匀|均衡)"
    r"|(?:0|零)号(?:卡|显卡|GPU|gpu)[^。\n]{0,6}(?:特别|非常|很|最)(?:高|多|满)",
)  # fmt: skip
