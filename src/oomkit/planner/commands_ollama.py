"""Ollama's lines for a planned configuration: ``ollama serve`` with its environment, a
Modelfile (``FROM`` and the ``PARAMETER`` lines), ``ollama create`` and ``ollama run``, in a
POSIX shell or Windows PowerShell."""

from __future__ import annotations

from collections.abc import Sequence

from oomkit.planner.ollama_tags import OllamaFrom, ollama_from
from oomkit.planner.prepare import OLLAMA_QUANTIZE_TYPES, prepare_checkpoint
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import InferenceSettings

__all__ = ["ollama_command", "ollama_serve_line"]


def ollama_command(
    settings: InferenceSettings, spec: ModelSpec, model_ref: str, os: str | None = None
) -> str:
    """The lines that run ``settings`` under Ollama (``os`` ``windows``: in PowerShell)."""
    quant = settings.quant or "Q4_K_M"
    prep = prepare_checkpoint("ollama", model_ref, spec.source, quant, spec.torch_dtype)
    source = ollama_from(model_ref, quant) if prep is None else OllamaFrom(prep.target)
    create = "ollama create planned -f Modelfile"
    if prep is not None and not prep.lines and quant.upper() in OLLAMA_QUANTIZE_TYPES:
        create += f" --quantize {quant.upper()}"  # Ollama quantizes the import itself
    from oomkit.estimate.flag_eras import flag_available

    version = settings.runtime_version
    # OLLAMA_FLASH_ATTENTION from v0.1.39, OLLAMA_KV_CACHE_TYPE from v0.5.0,
    # OLLAMA_NUM_PARALLEL from v0.1.33 (oomkit.estimate.flag_eras)
    fa = flag_available("ollama", "flash_attn", version)
    env = ["OLLAMA_FLASH_ATTENTION=1"] if fa else []
    kv = settings.cache_type_k
    if kv and kv != "f16" and flag_available("ollama", "cache_type", version):
        env.append(f"OLLAMA_KV_CACHE_TYPE={settings.cache_type_k}")
    if settings.parallel and flag_available("ollama", "parallel", version):
        env.append(f"OLLAMA_NUM_PARALLEL={settings.parallel}")
    # a placeholder goes outside the quotes, where the shell expands it or stops loudly
    known = source.note is None
    modelfile = [f"FROM {source.value if known else '%s'}", f"PARAMETER num_ctx {settings.ctx}"]
    if settings.n_gpu_layers is not None:
        modelfile.append(f"PARAMETER num_gpu {settings.n_gpu_layers}")
    if os == "windows":
        return "\n".join(_ollama_powershell(env, modelfile, source, create))
    lines = [ollama_serve_line(env)]
    body = "\\n".join(modelfile)
    arg = "" if known else f' "{source.value}"'
    if not known:
        lines.append(f"# {source.note}")
    lines.append(f"printf '{body}\\n'{arg} > Modelfile && {create}")
    lines.append("ollama run planned")
    return "\n".join(lines)


def ollama_serve_line(env: Sequence[str], os: str | None = None) -> str:
    """``ollama serve`` started with the ``NAME=value`` variables ``env``: a POSIX shell's
    ``A=1 B=2 ollama serve``, or on ``windows`` PowerShell's ``$env:A="1"; $env:B="2"; ollama
    serve`` (PowerShell has no per-command assignment; ``;`` because Windows PowerShell 5.1 has
    no ``&&``)."""
    if os != "windows":
        return " ".join([*env, "ollama", "serve"])
    pairs = (e.split("=", 1) for e in env)
    return "; ".join([*(f'$env:{k}="{v}"' for k, v in pairs), "ollama serve"])


def _ollama_powershell(
    env: list[str], modelfile: list[str], source: OllamaFrom, create: str
) -> list[str]:
    """Ollama's lines for Windows PowerShell. Ollama inherits the environment it starts in
    (docs/faq.md, "Setting environment variables on Windows": quit the taskbar app, set the
    variables, start Ollama again), so ``$env:`` values set in this session reach the ``ollama
    serve`` started from it; ``;`` joins commands (Windows PowerShell 5.1 has no ``&&``) and
    the Modelfile is written with ``Set-Content``, a backtick-n between its lines."""
    out = ["# quit Ollama in the taskbar first: the server started here reads these variables"]
    out.append(ollama_serve_line(env, "windows"))
    body = "`n".join(modelfile)
    if source.note is not None:  # an unknown tag: stop loudly unless OLLAMA_TAG is set
        why = source.value.removeprefix("${OLLAMA_TAG:?").removesuffix("}")
        out.append(f"# {source.note}")
        out.append(f'if (-not $env:OLLAMA_TAG) {{ throw "{why}" }}')
        body = body.replace("%s", "$env:OLLAMA_TAG")
    out.append(f'Set-Content -Path Modelfile -Value "{body}"; {create}')
    out.append("ollama run planned")
    return out
