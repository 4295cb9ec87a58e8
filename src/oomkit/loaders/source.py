"""MODEL argument -> :class:`ModelSpec`: a path, a catalog name, or a Hugging Face repo id.

Precedence (the CLI's ``MODEL``): an existing path first, then the embedded catalog (fuzzy
names, Ollama tags, repo ids it knows), then the Hub for ``org/name[@revision]``. Local files:

==================================  ===========================================================
``model-dir/``                      ``config.json`` + exact tensors from ``*.safetensors``
                                    headers (index first); a directory with only a ``.gguf``
                                    reads the GGUF
``config.json`` (any ``.json``)     the config alone (tensors derived later from the config)
``*.safetensors`` / ``*.index.json``  exact tensors + the ``config.json`` beside it (required:
                                    safetensors headers hold no architecture facts)
``*.gguf``                          the GGUF header (split GGUFs: every ``-0000k-of-0000n`` shard)
==================================  ===========================================================

Offline mode (``offline=True``, ``OOMKIT_OFFLINE=1`` or ``HF_HUB_OFFLINE=1``, read at call time)
only affects Hub ids: they are served from the HF cache or fail with :class:`OfflineError`.
"""

from __future__ import annotations

import io
import os
import re
import stat
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from oomkit.errors import InvalidModelNameError, SourceNotFoundError, UnknownNameError

if TYPE_CHECKING:
    from oomkit.loaders.gguf import GgufFile
    from oomkit.spec.model import ModelSpec

# The file readers (gguf, safetensors, hf_config) and the Hub client are imported by the
# functions that use them: a catalog name, the common case, needs none of them.

__all__ = ["invalid_repo_id", "load_local_model", "resolve_model"]

_INDEX = "model.safetensors.index.json"
_PATH_SUFFIXES = (".gguf", ".safetensors", ".json")
#: most bytes read from a pipe (``/dev/stdin``, ``<(cat config.json)``) or an unsuffixed file
MAX_STREAM_BYTES = 64 << 20
#: most files listed in an error message
_MAX_LISTED = 5


@cache
def _split_re() -> re.Pattern[str]:
    """A split GGUF's shard name (compiled when a GGUF is first looked at, not at import)."""
    return re.compile(r"^(?P<prefix>.+)-(?P<no>\d{5})-of-(?P<count>\d{5})\.gguf$")


def _listed(names: list[str]) -> str:
    """``a, b, c, d, e and 95 more``: error messages stay one short line."""
    head = ", ".join(names[:_MAX_LISTED])
    return head + (f" and {len(names) - _MAX_LISTED} more" if len(names) > _MAX_LISTED else "")


def _load_stream(path: Path) -> ModelSpec:
    """A pipe or character device the user named (``/dev/stdin``, ``<(…)``), or a file with no
    known suffix: sniff the first bytes (``{`` config.json, ``GGUF`` a GGUF header)."""
    import json

    from oomkit.errors import ConfigFormatError

    try:
        with open(path, "rb") as f:
            data = f.read(MAX_STREAM_BYTES + 1)
    except OSError as e:
        raise _missing(path, f"cannot be read ({e.strerror or e})", "Check the path") from e
    name = path.name if path.name not in ("stdin", "0") and not path.name.isdigit() else "stdin"
    if data[:4] == b"GGUF":
        from oomkit.loaders.gguf import read_gguf
        from oomkit.loaders.gguf_spec import gguf_to_spec

        if len(data) > MAX_STREAM_BYTES:
            raise _missing(
                path,
                f"a GGUF over {MAX_STREAM_BYTES >> 20} MiB cannot be read from a pipe",
                "Pass the .gguf file's path",
            )
        return gguf_to_spec(read_gguf(io.BytesIO(data), path=str(path), file_bytes=len(data)))
    if data.lstrip()[:1] == b"{":
        from oomkit.loaders.hf_config import parse_config

        if len(data) > MAX_STREAM_BYTES:
            raise ConfigFormatError(
                f"Cannot read config.json from '{path}': over {MAX_STREAM_BYTES >> 20} MiB.",
                path=str(path),
            )
        try:
            doc = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
            raise ConfigFormatError(
                f"Cannot parse config.json from '{path}': {str(e)[:200]}. Pass valid JSON.",
                path=str(path),
            ) from e
        return parse_config(doc, name=name, source="config", path=str(path))
    raise _missing(
        path,
        "not a config.json (JSON object) or a GGUF file",
        "Pass a config.json, a .safetensors file or index, a .gguf file or a model directory",
    )


def _missing(path: Path, why: str, todo: str) -> SourceNotFoundError:
    return SourceNotFoundError(
        f"Loading model failed for '{path}' (local path): {why}. {todo}.", source=str(path)
    )


def _with_tensors(spec: ModelSpec, weights: tuple[Path, ...]) -> ModelSpec:
    from oomkit.loaders.safetensors import load_safetensors_tensors
    from oomkit.spec.tensors import count_params

    bits = spec.quantization.bits if spec.quantization else None
    tensors = tuple(t for w in weights for t in load_safetensors_tensors(w, bits=bits))
    out = replace(spec, tensors=tensors, source="safetensors")
    # a header far smaller than the config's model is some other file's (an 8-parameter
    # header beside a Llama config was "0.00 B params"); 10x leaves room for packed formats
    have, want = count_params(out), count_params(spec)
    if want and have * 10 < want:
        raise _missing(
            weights[0],
            f"its tensors hold {have:,} parameters where the config.json beside it describes "
            f"{want:,}: not this model's weights (an adapter, optimizer states, another model?)",
            "Point at the model's own checkpoint, or pass its config.json alone",
        )
    return out


def _weights_in(directory: Path) -> tuple[Path, ...]:
    """The index, else every safetensors file to read, in ``directory``."""
    if (directory / _INDEX).is_file():
        return (directory / _INDEX,)
    # a shard and a symlink to it are one file: keep the first name of each real file
    seen: set[str] = set()
    files = []
    for p in sorted(q for q in directory.glob("*.safetensors") if q.is_file()):
        real = os.path.realpath(p)
        if real not in seen:
            seen.add(real)
            files.append(p)
    # a PEFT adapter (adapter_model.safetensors, peft/utils/constants.py) beside a config is
    # not the model: read as the weights it made a Llama-3.1-8B directory "0.00 B params"
    files = [p for p in files if not p.name.startswith("adapter_model")]
    # Mistral repos hold consolidated.safetensors *and* the same weights as model*.safetensors
    plain = tuple(p for p in files if not p.name.startswith("consolidated"))
    chosen = plain or tuple(files)
    _check_shards(directory, chosen)
    return chosen


def _with_sibling_shards(path: Path) -> tuple[Path, ...]:
    """One shard named on the command line is one part of the model: all of them (as a split
    GGUF's first shard reads the others), each required; any other file is itself."""
    m = _shard_re().match(path.name)
    if m is None or int(m.group("count")) < 2:
        return (path,)
    count = min(int(m.group("count")), 10_000)
    shards = tuple(
        path.with_name(f"{m.group('prefix')}-{i:05d}-of-{m.group('count')}.safetensors")
        for i in range(1, count + 1)
    )
    _check_shards(path.parent, tuple(p for p in shards if p.is_file()))
    return shards


@cache
def _shard_re() -> re.Pattern[str]:
    """A sharded safetensors checkpoint's file name (``model-00001-of-00004.safetensors``)."""
    return re.compile(r"^(?P<prefix>.+)-(?P<no>\d{5})-of-(?P<count>\d{5})\.safetensors$")


def _check_shards(directory: Path, files: tuple[Path, ...]) -> None:
    """Every ``-0000k-of-0000n`` shard is there (without an index, a missing one was silently
    left out of the weights: an interrupted download looked like a smaller model)."""
    groups: dict[tuple[str, int], set[int]] = {}
    for p in files:
        if (m := _shard_re().match(p.name)) is not None:
            key = (m.group("prefix"), int(m.group("count")))
            groups.setdefault(key, set()).add(int(m.group("no")))
    for (prefix, count), present in groups.items():
        absent = [f"{prefix}-{i:05d}-of-{count:05d}.safetensors"
                  for i in range(1, min(count, 10_000) + 1) if i not in present]  # fmt: skip
        if absent:
            raise _missing(
                directory,
                f"safetensors shard(s) {_listed(absent)} are missing",
                "Download every shard into the same directory",
            )


def _load_gguf_split(path: Path) -> GgufFile:
    """Read a GGUF; for ``-0000k-of-0000n`` splits, read every shard's tensor infos."""
    from oomkit.loaders.gguf import GgufTensorTable, load_gguf

    m = _split_re().match(path.name)
    if m is None or int(m.group("count")) < 2:
        return load_gguf(path)
    count = int(m.group("count"))
    shards = [
        path.with_name(f"{m.group('prefix')}-{i:05d}-of-{count:05d}.gguf")
        for i in range(1, count + 1)
    ]
    absent = [s.name for s in shards if not s.is_file()]
    if absent:
        raise _missing(
            path,
            f"split GGUF shard(s) {_listed(absent)} are missing",
            "Download every shard into the same directory",
        )
    files = [load_gguf(s) for s in shards]
    return replace(files[0], tensors=GgufTensorTable.concat([f.tensors for f in files]))


def _load_directory(path: Path) -> ModelSpec:
    from oomkit.loaders.gguf_spec import gguf_to_spec
    from oomkit.loaders.hf_config import load_config

    if (path / "config.json").is_file():
        spec = load_config(path)
        weights = _weights_in(path)
        return _with_tensors(spec, weights) if weights else spec
    ggufs = sorted(p for p in path.glob("*.gguf") if p.is_file())
    firsts = [p for p in ggufs if not _split_re().match(p.name) or "-00001-of-" in p.name]
    if len(firsts) == 1:
        return gguf_to_spec(_load_gguf_split(firsts[0]))
    if len(firsts) > 1:
        names = ", ".join(p.name for p in firsts[:5])
        raise _missing(
            path, f"the directory holds several GGUF files ({names})", "Pass one .gguf file"
        )
    raise _missing(
        path,
        "no config.json, safetensors or .gguf file in the directory",
        "Pass a model directory with a config.json, a config.json file or a .gguf file",
    )


def load_local_model(path: Path) -> ModelSpec:
    """Build a spec from a local directory or file (see the module docstring for the forms).

    Raises:
        SourceNotFoundError: the path is missing, or a file the form needs is missing.
        ConfigFormatError / SafetensorsFormatError / GgufFormatError: a malformed file.
        UnsupportedModelError: the config's architecture cannot be modelled.
    """
    from oomkit.loaders.gguf_spec import gguf_to_spec
    from oomkit.loaders.hf_config import load_config
    from oomkit.loaders.safetensors import load_safetensors_tensors

    if path.is_dir():
        return _load_directory(path)
    try:
        mode = os.stat(path).st_mode
    except OSError:
        raise _missing(path, "no such file or directory", "Check the path") from None
    if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode):
        return _load_stream(path)  # /dev/stdin, <(cat config.json)
    if not stat.S_ISREG(mode):
        raise _missing(path, "not a regular file", "Pass a file or a directory")
    name = path.name
    if name.endswith(".gguf"):
        return gguf_to_spec(_load_gguf_split(path))
    if name.endswith(".safetensors") or name.endswith(".safetensors.index.json"):
        config = path.parent / "config.json"
        if not config.is_file():
            load_safetensors_tensors(path)  # a malformed header fails first, with its message
            raise _missing(
                path,
                "no config.json beside it (safetensors headers hold tensor shapes, not the "
                "architecture)",
                f"Put the model's config.json in {path.parent} or pass the config.json",
            )
        return _with_tensors(load_config(config), _with_sibling_shards(path))
    if name.endswith(".json"):
        return load_config(path)
    if not path.suffix:
        return _load_stream(path)  # a file with no suffix: sniff its content
    raise _missing(
        path,
        f"'{path.suffix or name}' is not a model file oomkit reads",
        "Pass a config.json, a .safetensors file or index, a .gguf file or a model directory",
    )


def _looks_like_path(ref: str) -> bool:
    return ref.startswith(("/", "./", "../", "~", "\\")) or ref.endswith(_PATH_SUFFIXES)


def resolve_model(ref: str, *, offline: bool | None = None) -> ModelSpec:
    """Resolve the CLI's MODEL argument to a :class:`ModelSpec`.

    Args:
        ref: a path, a catalog name (``llama-3.1-8b``, ``qwen3:30b-a3b``) or ``org/name[@rev]``.
        offline: no network; None reads ``OOMKIT_OFFLINE``/``HF_HUB_OFFLINE`` at call time.

    Raises:
        SourceNotFoundError: a path that does not exist, or a Hub repo that does not.
        UnknownNameError: a plain name the catalog does not know (with close names).
        OfflineError: a Hub id in offline mode that is not cached, or the Hub is unreachable.
        GatedRepoError: a gated Hub repo without an accepted HF_TOKEN.
        FormatError subclasses: a malformed local file.
    """
    text = ref.strip()
    try:
        path = Path(text).expanduser()
    except RuntimeError:  # ~unknownuser/...: no such home directory
        raise _missing(Path(text), "no such user's home directory", "Check the path") from None
    if text and path.exists():
        return load_local_model(path)
    if text.startswith(("http://", "https://")):
        from oomkit.loaders.hub import hub_page_ref, load_hub_model, parse_hub_ref

        hub_ref = parse_hub_ref(text)
        page = hub_page_ref(text)
        if hub_ref is None and page is not None:  # a model page whose repo id is malformed
            bad = invalid_repo_id(page, UnknownNameError(kind="model", name=text), shown=text)
            if bad is not None:
                raise bad
        if hub_ref is None:
            raise SourceNotFoundError(
                f"Resolving model failed for '{text}' (URL): only Hugging Face model pages "
                "(https://huggingface.co/org/name) are fetched. Download the file and pass its "
                "path, or pass the repo id.",
                source=text,
            )
        return load_hub_model(str(hub_ref), offline=offline)
    if _looks_like_path(text):
        raise _missing(
            path,
            "no such file or directory",
            "Check the path (catalog names and repo ids have no file extension)",
        )
    from oomkit.catalog.models import find_model

    try:
        return find_model(text).spec()
    except UnknownNameError as e:
        unknown = e
    from oomkit.loaders.hub import load_hub_model, parse_hub_ref

    hub_ref = parse_hub_ref(text)
    if hub_ref is not None:
        return load_hub_model(str(hub_ref), offline=offline)
    raise invalid_repo_id(text, unknown) or unknown


def invalid_repo_id(
    text: str, unknown: UnknownNameError, *, shown: str | None = None
) -> InvalidModelNameError | None:
    """The error for a name with a '/' (read as ``org/name[@rev]``) that is no Hub repo id,
    before any request is made; None for a name without one (``unknown`` says it all).
    ``shown``: the input as given, when ``text`` was taken from it (a model page URL)."""
    from oomkit.loaders.hub import repo_id_problem

    repo, at, revision = text.partition("@")
    if "/" not in repo:
        return None
    problem = repo_id_problem(repo)
    if problem is None and at and not revision:
        problem = "nothing after '@': give a branch, tag or commit, or drop the '@'"
    if problem is None:
        return None
    name = text if shown is None else shown
    name = name if name.isprintable() else ascii(name)[1:-1]
    return InvalidModelNameError(name=name, problem=problem, suggestions=unknown.suggestions)
