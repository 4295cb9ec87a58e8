"""The runtime release a log was written by, from its version line (for the generation table).

A failing run was made with the runtime of its day: the doctor sizes its fixes with that
generation (:mod:`oomkit.estimate.generations`) when the log says which release it was.
"""

from __future__ import annotations

import re

__all__ = ["runtime_version_from_log"]

_HEAD = 1 << 20
_TAIL = 256 << 10

#: (runtime, pattern with the version in group 1), most specific first
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    # vLLM: "vLLM API server version 0.6.3", "Initializing a V1 LLM engine (v0.8.5)"; a
    # post-release kept (0.5.3.post1 runs Llama 3.1, 0.5.3 cannot: oomkit.estimate.vllm_rope)
    ("vllm", re.compile(r"vLLM API server version v?(\d+\.\d+\.\d+(?:\.post\d+)?)")),
    ("vllm", re.compile(r"Initializing an? (?:V1 )?LLM engine \(v(\d+\.\d+\.\d+(?:\.post\d+)?)")),
    ("vllm", re.compile(r"\bvllm[ =]+(?:version[ :]+)?v?(\d+\.\d+\.\d+(?:\.post\d+)?)", re.I)),
    # Ollama: "ollama version is 0.5.7", server "(version 0.12.3)"
    ("ollama", re.compile(r"ollama version (?:is )?v?(\d+\.\d+\.\d+)", re.I)),
    ("ollama", re.compile(r"Listening on .{0,200}?\(version v?(\d+\.\d+\.\d+)")),
    # SGLang: "sglang==0.4.6", "sglang version: 0.4.6"
    ("sglang", re.compile(r"\bsglang(?:==| version:? ?)v?(\d+\.\d+\.\d+)", re.I)),
    # transformers (collect_env / transformers-cli env): "`transformers` version: 4.40.2"
    ("transformers", re.compile(r"`?transformers`? version: (\d+\.\d+(?:\.\d+)?)")),
    ("transformers", re.compile(r"\btransformers==(\d+\.\d+(?:\.\d+)?)")),
    # llama.cpp: "build: 4500 (abc1234) with ...", "version: 4500 (abc1234)"
    ("llama.cpp", re.compile(r"^(?:main: )?(?:build|version): (\d{3,6}) \(", re.M)),
)


def runtime_version_from_log(text: str) -> tuple[str, str] | None:
    """(runtime, version) from the first version line the log holds, else None.

    llama.cpp builds come back as ``b<build>``.

    >>> runtime_version_from_log("INFO 10-14 vLLM API server version 0.6.3\\n")
    ('vllm', '0.6.3')
    >>> runtime_version_from_log("build: 4500 (abc1234) with cc for x86_64")
    ('llama.cpp', 'b4500')
    """
    if len(text) > _HEAD + _TAIL:
        # version banners are printed at start-up (head) or quoted with the error (tail);
        # scanning a 100 MB log in full with every pattern would dominate the doctor's time
        text = text[:_HEAD] + "\n" + text[-_TAIL:]
    for runtime, pattern in _PATTERNS:
        m = pattern.search(text)
        if m:
            version = m.group(1)
            return runtime, f"b{version}" if runtime == "llama.cpp" else version
    return None
