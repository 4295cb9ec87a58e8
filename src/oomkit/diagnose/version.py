"""The runtime release a log was written by, from its version line (for the generation table).

A failing run was made with the runtime of its day: the doctor sizes its fixes with that
generation (:mod:`oomkit.estimate.generations`) when the log says which release it was.
"""

from __future__ import annotations

import re

__all__ = ["runtime_version_from_log"]

_HEAD = 1 << 20
_TAIL = 256 << 10

#: (runtime, pattern with the version in group 1, literals one of which every match holds),
#: most specific first
_PATTERNS: tuple[tuple[str, re.Pattern[str], tuple[str, ...]], ...] = (
    # vLLM: "vLLM API server version 0.6.3", "Initializing a V1 LLM engine (v0.8.5)"; a
    # post-release kept (0.5.3.post1 runs Llama 3.1, 0.5.3 cannot: oomkit.estimate.vllm_rope)
    (
        "vllm",
        re.compile(r"vLLM API server version v?(\d+\.\d+\.\d+(?:\.post\d+)?)"),
        ("vLLM API server version",),
    ),
    (
        "vllm",
        re.compile(r"Initializing an? (?:V1 )?LLM engine \(v(\d+\.\d+\.\d+(?:\.post\d+)?)"),
        ("LLM engine (v",),
    ),
    (
        "vllm",
        re.compile(r"\bvllm[ =]+(?:version[ :]+)?v?(\d+\.\d+\.\d+(?:\.post\d+)?)", re.I),
        ("vllm",),
    ),
    # Ollama: "ollama version is 0.5.7", server "(version 0.12.3)"
    ("ollama", re.compile(r"ollama version (?:is )?v?(\d+\.\d+\.\d+)", re.I), ("ollama version ",)),
    (
        "ollama",
        re.compile(r"Listening on .{0,200}?\(version v?(\d+\.\d+\.\d+)"),
        ("Listening on ",),
    ),
    # SGLang: "sglang==0.4.6", "sglang version: 0.4.6"
    ("sglang", re.compile(r"\bsglang(?:==| version:? ?)v?(\d+\.\d+\.\d+)", re.I), ("sglang",)),
    # transformers (collect_env / transformers-cli env): "`transformers` version: 4.40.2"
    (
        "transformers",
        re.compile(r"`?transformers`? version: (\d+\.\d+(?:\.\d+)?)"),
        ("transformers",),
    ),
    ("transformers", re.compile(r"\btransformers==(\d+\.\d+(?:\.\d+)?)"), ("transformers==",)),
    # llama.cpp: "build: 4500 (abc1234) with ...", "version: 4500 (abc1234)"
    (
        "llama.cpp",
        re.compile(r"^(?:main: )?(?:build|version): (\d{3,6}) \(", re.M),
        ("build: ", "version: "),
    ),
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
    # a case-insensitive pattern's literal is looked for in the lower-cased text, which for
    # ASCII text is exactly what re.IGNORECASE compares ("K"/"k"); other text runs the pattern
    low = text.lower() if text.isascii() else None
    for runtime, pattern, needles in _PATTERNS:
        if pattern.flags & re.IGNORECASE:
            if low is not None and not any(n in low for n in needles):
                continue
        elif not any(n in text for n in needles):
            continue  # no match can lack all its literals: skip a pattern that costs ms a MB
        m = pattern.search(text)
        if m:
            version = m.group(1)
            return runtime, f"b{version}" if runtime == "llama.cpp" else version
    return None
