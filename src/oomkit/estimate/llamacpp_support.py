"""The first llama.cpp build that loads an architecture (data for ``--runtime-version``).

A llama.cpp build that does not know a GGUF's ``general.architecture`` fails while loading it,
before any memory is sized: ``llm_arch_from_string`` (src/llama-arch.cpp) returns
``LLM_ARCH_UNKNOWN`` and ``llama_model_loader`` raises "error loading model architecture:
unknown model architecture: 'qwen3moe'" (llama.cpp#13200 on build 3687; llama-cpp-python#2008
on its 0.3.8 binding). As for vLLM (:mod:`oomkit.estimate.vllm_support`), an estimate or a plan
of such a run would size a server that never starts, so ``estimate`` and ``plan`` refuse it with
one line (exit 2) naming the first build that loads the model.

Rows are the architectures of the catalog whose llama.cpp support is dated, each with the first
release tag cited to hold the PR that added it to src/llama-arch.cpp, and the PR's merge date
(for ``--runtime-version 2025-04`` forms):

* ``gemma3`` (Gemma 3, text and 270M/1B): PR #12343 "llama : Add Gemma 3 support", merged
  2025-03-12 as commit 7841fc72, release b4875 (llama.cpp#12345: "I just tested b4875
  (7841fc723e05 / #12343) ... it seems to be working").
* ``llama4``: PR #12791 "llama : Support llama 4 text-only", merged 2025-04-07, release b5074
  (llama-cpp-python#1994 answers "unknown model architecture: 'llama4'" with "update to ...
  releases/tag/b5074").
* ``qwen3`` / ``qwen3moe``: PR #12828 "Support Qwen3 and Qwen3MoE", merged 2025-04-09, release
  b5092 (guinmoon/LLMFarm#126: "llama.cpp b5092 have supported Qwen3").
* ``glm4moe`` (GLM-4.5, 4.5-Air): PR #14939 "model : add GLM 4.5 support", release b6085, commit
  ef0144c0 (oobabooga/textgen#7177, 2025-08-05: "Support for GLM 4.5 has been added to llama.cpp
  in b6085").
* ``gpt-oss``: PR #15091 "llama : add gpt-oss", merged 2025-08-05; release b6097 "includes the
  recent changes to support GPT OSS (#15091)" (utilityai/llama-cpp-rs#797). The merge is after
  PR #15077 (b6089, ``--n-cpu-moe``), so the first build lies in b6090-b6097, and a real run
  loaded gpt-oss-20b on b6096 (verdict run lcpp-geer21-gptoss20b-mxfp4-aimax395-ngl125,
  tests/fixtures/verdict_runs/heldout6.jsonl); b6090 is kept as the first build so that no build
  that may load it is refused (b6090-b6095 are answered, not refused, until the exact one is read
  from llama.cpp's history).
* ``qwen3next`` (Qwen3-Next): PR #16095, merged 2025-11-28, release b7186 (ollama#12349: "The
  next vendor sync after b7186 will make support available in ollama").

Ollama: ``--runtime-version bNNNN`` names the llama.cpp build Ollama vendors
(:func:`oomkit.estimate.generations.parse_runtime_version`); its llama runner loads what that
build loads (ollama#12349: Qwen3-Next comes to Ollama with "the next vendor sync after b7186").
The architectures Ollama runs on its own Go engine (``OllamaEngineRequired``,
:data:`oomkit.estimate.ollama_runner.OLLAMA_ENGINE_REQUIRED`: gemma3, qwen3, qwen3moe, llama4,
gpt-oss) do not depend on the vendored build (gemma3 and gpt-oss shipped there the day
llama.cpp got them), so they are not checked; nor is an Ollama release number.
"""

from __future__ import annotations

from dataclasses import dataclass

from oomkit.errors import InvalidSettingError
from oomkit.spec.model import ModelSpec

__all__ = ["LLAMACPP_FIRST_BUILD", "LlamaCppSupport", "check_llamacpp_support"]


@dataclass(frozen=True, slots=True, kw_only=True)
class LlamaCppSupport:
    """The first llama.cpp release that loads one GGUF architecture."""

    arch: str  # GGUF general.architecture (llama-arch.cpp LLM_ARCH_NAMES)
    build: int  # first release tag bNNNN cited to hold it
    merged: str  # the PR's merge date (ISO), for date forms of --runtime-version
    source: str


#: (GGUF architecture, first build, the PR's merge date, the PR): the module doc cites each row
_ROWS = (
    ("gemma3", 4875, "2025-03-12", "llama.cpp PR #12343"),
    ("llama4", 5074, "2025-04-07", "llama.cpp PR #12791"),
    ("qwen3", 5092, "2025-04-09", "llama.cpp PR #12828"),
    ("qwen3moe", 5092, "2025-04-09", "llama.cpp PR #12828"),
    ("glm4moe", 6085, "2025-08-04", "llama.cpp PR #14939"),
    ("gpt-oss", 6090, "2025-08-05", "llama.cpp PR #15091"),
    ("qwen3next", 7186, "2025-11-28", "llama.cpp PR #16095"),
)

LLAMACPP_FIRST_BUILD: dict[str, LlamaCppSupport] = {
    arch: LlamaCppSupport(arch=arch, build=build, merged=merged, source=source)
    for arch, build, merged, source in _ROWS
}


def _build_number(version: str) -> int | None:
    """``b5092`` / ``5092`` -> 5092; None for a date or a release number."""
    value = version.strip().lower().removeprefix("b")
    return int(value) if value.isdigit() and len(value) <= 6 else None


def check_llamacpp_support(spec: ModelSpec, runtime: str, version: str | None) -> None:
    """Refuse ``runtime`` at ``--runtime-version`` ``version`` when that llama.cpp build
    cannot load ``spec``'s architecture (see the module doc).

    Only ``llama.cpp`` (a build or a date) and ``ollama`` given a vendored build ``bNNNN`` are
    checked; no version (the newest build) passes.

    Raises:
        InvalidSettingError: the build predates the architecture.
    """
    if version is None or not version.strip() or runtime not in ("llama.cpp", "ollama"):
        return
    from oomkit.estimate.llamacpp import gguf_arch

    sup = LLAMACPP_FIRST_BUILD.get(gguf_arch(spec))
    if sup is None:
        return
    build = _build_number(version)
    if runtime == "ollama":
        from oomkit.estimate.ollama_runner import (
            OLLAMA_ENGINE_REQUIRED,
            OLLAMA_ENGINE_REQUIRED_HF,
        )

        if not version.strip().lower().startswith("b"):
            return  # an Ollama release number: not mapped to its vendored build
        if (
            spec.model_type in OLLAMA_ENGINE_REQUIRED
            or spec.architecture in OLLAMA_ENGINE_REQUIRED_HF
        ):
            return  # Ollama's own engine runs it, whatever llama.cpp it vendors
    if build is not None:
        older = build < sup.build
    else:
        from datetime import date

        from oomkit.estimate.generations import parse_runtime_version

        when = parse_runtime_version(runtime, version)
        merged = date.fromisoformat(sup.merged)
        if isinstance(when, date) and version.strip().count("-") == 1:
            # a month (``2025-03``) may mean any day of it: refused only when all of it is older
            older = (when.year, when.month) < (merged.year, merged.month)
        else:
            older = isinstance(when, date) and when < merged
    if older:
        who = "llama.cpp" if runtime == "llama.cpp" else "Ollama's vendored llama.cpp"
        raise InvalidSettingError(
            f"{who} {version.strip()} cannot load {spec.name} (GGUF architecture "
            f"'{sup.arch}' first in build b{sup.build}, {sup.source}); it needs a llama.cpp "
            f"build from b{sup.build} on",
            setting="runtime_version",
            value=version,
        )
