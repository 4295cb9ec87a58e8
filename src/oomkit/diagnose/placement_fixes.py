"""The split-across-GPUs fix in the failing runtime's own spelling (pure; revfix20f).

:func:`oomkit.diagnose.rules_stated_alloc.stated_one_gpu_of_several` reads "everything went onto
one GPU of several"; its fix used to list vLLM's ``--tensor-parallel-size 2``,
``device_map="auto"`` and ``CUDA_VISIBLE_DEVICES=0,1`` whatever the runtime, the GPU count or what
the user already does. The levers differ by runtime:

* transformers / accelerate (a PyTorch message, or the text names ``device_map`` /
  ``from_pretrained``): a string ``device_map`` other than ``"sequential"`` runs accelerate's
  ``get_balanced_memory`` and then ``infer_auto_device_map``, which fills the devices in order up
  to each one's ``max_memory`` (accelerate@16cb6eb8 src/accelerate/big_modeling.py:614-633);
  ``"balanced_low_0"`` gives GPU 0 only what the other GPUs cannot hold
  (src/accelerate/utils/modeling.py:1060-1062, ``low_zero``), leaving it room for the
  activations and the generation buffers that land there. So the levers are a per-GPU
  ``max_memory`` budget over the GPUs the text counts and ``device_map="balanced_low_0"`` /
  ``"balanced"``; a ``device_map`` value the text already uses is not offered again;
* vLLM / SGLang: ``--tensor-parallel-size N`` (N a power of two within the GPUs counted: the
  attention heads must divide by it);
* Ollama: ``OLLAMA_SCHED_SPREAD=1`` (spread one model over all GPUs).

A GPU list (``CUDA_VISIBLE_DEVICES``) is only printed for the count the text gives.
"""

from __future__ import annotations

import re

from oomkit.diagnose.events import OomEvent
from oomkit.diagnose.fixes import Fix, generic

__all__ = ["gpus_stated", "not_in_use", "split_fix"]

_WORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "eight": 8, "dual": 2, "quad": 4}
_N = r"(\d{1,2}|two|three|four|five|six|eight|dual|quad)"
_COUNT = re.compile(
    r"(?i)\b" + _N + r"\s*[x×]\s*(?:nvidia\s+|geforce\s+)?(?:rtx|gtx|tesla|a|h|l|v|p)?\s*\d{2,4}\b"
    r"|\b" + _N + r"\s+(?:x\s+)?(?:[\w-]+\s+){0,2}?(?:gpus|cards|graphics\s+cards|devices)\b"
    r"|--num[-_]gpus[= ](\d{1,2})\b"
    r"|(\d{1,2})\s*(?:张|块)(?:卡|显卡|GPU)"
)
_DEVICE_MAP = re.compile(r"""(?i)\bdevice_map\s*=\s*['"](\w+)['"]""")


def gpus_stated(text: str) -> int | None:
    """The number of GPUs the text gives ("4x 3090", "four GPUs", "8张卡"), the largest."""
    found: list[int] = []
    for m in _COUNT.finditer(text):
        word = next(g for g in m.groups() if g is not None).lower()
        n = int(word) if word.isdigit() else _WORDS[word]
        if 2 <= n <= 64:
            found.append(n)
    return max(found) if found else None


def _visible(n: int) -> str:
    return "CUDA_VISIBLE_DEVICES=" + ",".join(str(i) for i in range(n))


def split_fix(e: OomEvent, text: str) -> Fix:
    """The split-across-the-GPUs fix for the runtime of ``e`` (module doc)."""
    n = gpus_stated(text)
    title, why = "Split (or replicate) the work across the GPUs", "one device holds everything"
    runtime = e.runtime.lower()
    if runtime in {"vllm", "sglang"}:
        tp = 1 << ((n or 2).bit_length() - 1)  # a power of two within the GPUs counted
        cmds = [f"--tensor-parallel-size {tp}"] + ([_visible(n)] if n else [])
        return generic(title, f"{why}; tensor parallelism shards the weights and KV cache.", cmds)
    if runtime == "ollama":
        cmds = ["OLLAMA_SCHED_SPREAD=1"] + ([_visible(n)] if n else [])
        return generic(title, f"{why}; Ollama spreads one model over all GPUs when told.", cmds)
    used = {m.group(1).lower() for m in _DEVICE_MAP.finditer(text)}
    budget = ", ".join(f'{i}: "<N>GiB"' for i in range(n or 2))
    cmds = [
        "model = AutoModelForCausalLM.from_pretrained("
        f'name, device_map="{v}", max_memory=max_memory)'
        for v in ("balanced_low_0", "balanced")
        if v not in used
    ][:1]
    per = "per GPU, GPU 0 lowest" if n else "one entry per GPU, GPU 0 lowest"
    cmds.insert(0, f"max_memory = {{{budget}}}   # {per}")
    return generic(
        title,
        f"{why}; accelerate fills the GPUs in order up to each one's max_memory, and "
        '"balanced_low_0" gives GPU 0 only what the others cannot hold.',
        cmds,
    )


def not_in_use(fixes: tuple[Fix, ...], text: str) -> tuple[Fix, ...]:
    """``fixes`` less those whose every line sets a ``device_map`` the text already uses."""
    used = {m.group(1).lower() for m in _DEVICE_MAP.finditer(text)}

    def repeats(f: Fix) -> bool:
        maps = [_DEVICE_MAP.search(c) for c in f.commands]
        return bool(f.commands) and all(m is not None and m.group(1).lower() in used for m in maps)

    return tuple(f for f in fixes if not repeats(f))
