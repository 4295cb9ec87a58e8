"""Every exception oomkit raises.

::

    OomkitError                                    root: ``except OomkitError`` catches all
    ├── SourceError(source)                        cannot obtain model files
    │   ├── SourceNotFoundError  (+FileNotFoundError)
    │   ├── GatedRepoError                         gated/private repo without a valid token
    │   └── OfflineError         (+ConnectionError) offline mode on, or network down
    ├── FormatError(path, offset|key) (+ValueError) malformed input file
    │   ├── ConfigFormatError
    │   ├── SafetensorsFormatError
    │   ├── GgufFormatError
    │   └── SnapshotFormatError
    ├── UnsupportedModelError(architecture, feature)  parsed, but cannot be modelled
    ├── UnknownNameError(kind, name, suggestions) (+LookupError)  GPU, quant, runtime, model
    ├── InvalidSettingError(setting, value) (+ValueError)  a setting out of range or inconsistent
    ├── InvalidModelSpecError(setting, value) (+ValueError)  model facts out of range/inconsistent
    ├── MissingDependencyError(package) (+ImportError)  an optional package is not installed
    └── HardwareError
        └── NvmlUnavailableError                   no driver, pynvml missing, NVML init failed

Messages follow one template: ``<what failed> for '<subject>' (<context>): <why>. <what to do>.``
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "ConfigFormatError",
    "FormatError",
    "GatedRepoError",
    "GgufFormatError",
    "HardwareError",
    "InvalidModelNameError",
    "InvalidModelSpecError",
    "InvalidSettingError",
    "MissingDependencyError",
    "NvmlUnavailableError",
    "OfflineError",
    "OomkitError",
    "SafetensorsFormatError",
    "SnapshotFormatError",
    "SourceError",
    "SourceNotFoundError",
    "UnknownNameError",
    "UnsupportedModelError",
    "close_matches",
]


class OomkitError(Exception):
    """Root of every error oomkit raises."""


class SourceError(OomkitError):
    """The model files could not be obtained."""

    def __init__(self, message: str, *, source: str) -> None:
        super().__init__(message)
        self.source = source


class SourceNotFoundError(SourceError, FileNotFoundError):
    """A path, repo or file does not exist."""


class GatedRepoError(SourceError):
    """A Hub repo needs authentication (gated or private)."""


class OfflineError(SourceError, ConnectionError):
    """Offline mode is on (or the network is down) and the data is not cached."""


class FormatError(OomkitError, ValueError):
    """An input file is malformed."""

    def __init__(
        self,
        message: str,
        *,
        path: str,
        offset: int | None = None,
        key: str | None = None,
    ) -> None:
        super().__init__(message)
        self.path = path
        self.offset = offset
        self.key = key


class ConfigFormatError(FormatError):
    """A config.json is malformed or lacks a required field."""


class SafetensorsFormatError(FormatError):
    """A safetensors header is malformed or absurd."""


class GgufFormatError(FormatError):
    """A GGUF header is malformed, truncated or absurd."""


class SnapshotFormatError(FormatError):
    """A torch memory snapshot is malformed or holds disallowed objects."""


class UnsupportedModelError(OomkitError):
    """The model was read, but oomkit cannot model it (missing field, unknown feature)."""

    def __init__(self, message: str, *, architecture: str, feature: str | None = None) -> None:
        super().__init__(message)
        self.architecture = architecture
        self.feature = feature


def close_matches(name: str, candidates: Iterable[str], n: int = 3) -> tuple[str, ...]:
    """Return up to ``n`` candidates close to ``name`` (case-insensitive)."""
    pool = list(dict.fromkeys(candidates))
    lowered = {c.lower(): c for c in pool}
    import difflib  # lazy: only an unknown name pays for it

    hits = difflib.get_close_matches(name.lower(), list(lowered), n=n, cutoff=0.6)
    return tuple(lowered[h] for h in hits)


class UnknownNameError(OomkitError, LookupError):
    """A name (GPU, quant format, runtime, model, dtype) is not known."""

    def __init__(
        self,
        *,
        kind: str,
        name: str,
        suggestions: tuple[str, ...] = (),
        hint: str | None = None,
    ) -> None:
        self.kind = kind
        self.name = name
        self.suggestions = suggestions
        msg = f"Unknown {kind} '{name}'."
        if suggestions:
            msg += " Did you mean " + ", ".join(f"'{s}'" for s in suggestions) + "?"
        if hint:
            msg += f" {hint}"
        super().__init__(msg)

    def __str__(self) -> str:
        return str(self.args[0])


class InvalidModelNameError(UnknownNameError):
    """A model name the catalog does not know that is no well-formed Hub repo id either.

    Caught before any Hub request (a non-ASCII id would fail inside ``http.client``); the
    CLI answers it as a usage error (exit 2), the web API as an unknown model (404).
    """

    def __init__(self, *, name: str, problem: str, suggestions: tuple[str, ...] = ()) -> None:
        super().__init__(kind="model", name=name, suggestions=suggestions)
        self.problem = problem
        msg = (
            f"model '{name}': not in the catalog and not a valid Hugging Face repo id ({problem})."
        )
        if suggestions:
            msg += " Did you mean " + ", ".join(f"'{s}'" for s in suggestions) + "?"
        msg += " Run 'oomkit models --search <text>' to search the catalog."
        self.args = (msg,)


class InvalidSettingError(OomkitError, ValueError):
    """A setting is out of range or inconsistent with another."""

    def __init__(self, message: str, *, setting: str, value: object = None) -> None:
        super().__init__(message)
        self.setting = setting
        self.value = value


class InvalidModelSpecError(OomkitError, ValueError):
    """Architecture facts out of range or inconsistent (0 layers, more KV heads than heads)."""

    def __init__(self, message: str, *, setting: str, value: object = None) -> None:
        super().__init__(message)
        self.setting = setting
        self.value = value


class MissingDependencyError(OomkitError, ImportError):
    """An optional package a feature needs (torch, nvidia-ml-py) is not installed."""

    def __init__(self, message: str, *, package: str) -> None:
        super().__init__(message)
        self.package = package


class HardwareError(OomkitError):
    """Querying the hardware failed."""


class NvmlUnavailableError(HardwareError):
    """NVML is not usable: no NVIDIA driver, nvidia-ml-py missing, or init failed."""
