"""A card named by its model, with the one memory size that model ships with (docpost21).

``rules_stated_size`` compares a stated model size with the card's memory when the text writes
the memory ("24GB 4090", "my GPU (24GB)"). A report as often names only the card: "Out of memory
on 4090 with VACE 14b" (ComfyUI-WanVideoWrapper issue 562, the retired heldout43). A card model
that NVIDIA ships in one memory size states that size as surely as the figure would; models sold
in two sizes (RTX 3060 8/12 GB, 3080 10/12 GB, 4060 Ti 8/16 GB, A100 40/80 GB, V100 16/32 GB,
H100 80/94 GB) are not read. The one-size models are those of NVIDIA's product specifications
(GeForce RTX 50/40/30 series "Specs" pages, RTX 2080 Ti / GTX 1080 Ti, RTX A6000, L40S, A40
data sheets); their memory is the package's GPU catalog's (``oomkit.hardware.catalog``, which
cites each vendor page and driver-reported total).

A bare number is a card only beside a GPU word or after "on / with / using / my / a" ("on
4090"): "port 4090", "4090 tokens" and a year are not cards.
"""

from __future__ import annotations

import re

from oomkit.hardware.catalog import find_gpu

__all__ = ["ONE_SIZE_CARDS", "named_card"]

#: card model as written (lower case, single spaces) -> its key in the package's GPU catalog
#: (``oomkit/data/gpus.json``), whose ``memory_bytes`` is the driver-reported total (NVML
#: ``memory.total``: the 4090's 24564 MiB, an A40's 46068 MiB with ECC on)
ONE_SIZE_CARDS: dict[str, str] = {
    "5090": "rtx-5090",
    "5080": "rtx-5080",
    "5070 ti": "rtx-5070-ti",
    "5070": "rtx-5070",
    "4090": "rtx-4090",
    "4080 super": "rtx-4080-super",
    "4080": "rtx-4080",
    "4070 ti super": "rtx-4070-ti-super",
    "4070 ti": "rtx-4070-ti",
    "4070 super": "rtx-4070-super",
    "4070": "rtx-4070",
    "4060": "rtx-4060",
    "3090 ti": "rtx-3090-ti",
    "3090": "rtx-3090",
    "3080 ti": "rtx-3080-ti",
    "3070 ti": "rtx-3070-ti",
    "3070": "rtx-3070",
    "3060 ti": "rtx-3060-ti",
    "2080 ti": "rtx-2080-ti",
    "1080 ti": "gtx-1080-ti",
    "a6000": "rtx-a6000",
    "l40s": "l40s",
    "a40": "a40",
}

_NUM = r"(?P<num>(?:[2345]0[6-9]0|1080)(?:\s*(?:ti\s*super|ti|super))?)"
_PRO = r"(?P<pro>a6000|l40s|a40)"
_NAMED = re.compile(
    r"(?i)(?:\b(?:rtx|geforce(?:\s+rtx)?|gtx)\s*"
    + _NUM
    + r"|\b(?:on|with|using|my|a|an|one|single)"
    r"\s+" + r"(?P<num2>(?:[2345]0[6-9]0|1080)(?:\s*(?:ti\s*super|ti|super))?)"
    r"|(?<![\w.])" + r"(?P<num3>(?:[2345]0[6-9]0|1080)(?:\s*(?:ti\s*super|ti|super))?)"
    r"\s*(?:gpu|card|graphics)|\b" + _PRO + r")(?![\w.-])"
)


def named_card(sentence: str) -> tuple[int, int, int] | None:
    """``(card bytes, start, end)`` of the first one-size card model named in ``sentence``,
    else ``None`` (no card named, or a model sold in several sizes)."""
    for m in _NAMED.finditer(sentence):
        raw = m["num"] or m["num2"] or m["num3"] or m["pro"]
        key = " ".join(raw.lower().replace("ti", " ti ").replace("super", " super ").split())
        catalog_key = ONE_SIZE_CARDS.get(key)
        if catalog_key is not None:
            return find_gpu(catalog_key).memory_bytes, m.start(), m.end()
    return None
