"""llama-cpp-python's ``Llama(...)`` call for a planned llama.cpp configuration.

``-r llama-cpp-python`` is sized as llama.cpp on the C API with ``Llama(...)``'s defaults
(:mod:`oomkit.estimate.llamacpp_python`), so its command is the binding's own call, not
``llama-server``. The keyword names are ``Llama.__init__``'s (llama_cpp/llama.py of
abetlen/llama-cpp-python v0.3.35, l.60-118): ``model_path``, ``n_ctx``, ``n_gpu_layers`` (``-1``:
all layers, l.228-229), ``flash_attn`` (a bool, default False: passed whenever the plan runs
with flash attention), ``n_batch``, ``type_k``/``type_v`` (ints: the ``GGML_TYPE_*`` constants
that ``llama_cpp/llama_cpp.py`` exports, ``GGML_TYPE_Q8_0 = 8``) and ``tensor_split``.
The binding's OpenAI-compatible server takes the same names as flags:
``python -m llama_cpp.server --model ... --n_ctx ... --n_gpu_layers ...`` (llama_cpp/server/
settings.py ``ModelSettings`` fields, turned into ``--{name}`` by llama_cpp/server/cli.py
``add_args_from_model``; a bool takes a value, ``--flash_attn true``). The server's own
``n_ctx`` default is 2048, not ``Llama``'s 512, so the line always passes ``--n_ctx``.
``Llama(...)`` has no keyword for parallel sequences or tensor overrides (``--n-cpu-moe``):
a comment line says so.
"""

from __future__ import annotations

import json
import shlex

from oomkit.spec.settings import InferenceSettings

__all__ = ["LLAMA_CPP_PYTHON_TARGET", "ggml_constant", "llama_cpp_python_command"]

#: the command emitter's target for a llama.cpp plan asked as ``-r llama-cpp-python``
LLAMA_CPP_PYTHON_TARGET = "llama-cpp-python"


def ggml_constant(cache_type: str) -> str:
    """The binding's constant for a KV cache type (``q8_0`` -> ``llama_cpp.GGML_TYPE_Q8_0``).

    >>> ggml_constant("q8_0"), ggml_constant("f16")
    ('llama_cpp.GGML_TYPE_Q8_0', 'llama_cpp.GGML_TYPE_F16')
    """
    return f"llama_cpp.GGML_TYPE_{cache_type.strip().upper()}"


def llama_cpp_python_command(
    settings: InferenceSettings, gguf: str, n_layers: int, flash: bool
) -> str:
    """The lines that load ``settings`` with llama-cpp-python: ``gguf`` is the planned file,
    ``n_layers`` the offloadable layer count (blocks + output), ``flash`` whether the estimate
    ran with flash attention."""
    ngl = settings.n_gpu_layers
    all_layers = ngl is None or ngl >= n_layers
    kwargs: list[tuple[str, str, str]] = [  # (keyword, Python value, server flag value)
        ("n_ctx", str(settings.ctx), str(settings.ctx)),
        ("n_gpu_layers", "-1" if all_layers else str(ngl), "-1" if all_layers else str(ngl)),
    ]
    if flash:
        kwargs.append(("flash_attn", "True", "true"))
    if settings.batch_size is not None and settings.batch_size != 512:
        kwargs.append(("n_batch", str(settings.batch_size), str(settings.batch_size)))
    quantized = bool(settings.cache_type_k and settings.cache_type_k != "f16")
    if settings.cache_type_k and quantized:
        k, v = settings.cache_type_k, settings.cache_type_v or "f16"
        from oomkit.quant.ggml_types import ggml_type

        # the server's type_k/type_v are ints: the enum value (GGML_TYPE_Q8_0 = 8)
        kwargs.append(("type_k", ggml_constant(k), str(ggml_type(k).type_id)))
        kwargs.append(("type_v", ggml_constant(v), str(ggml_type(v).type_id)))
    if settings.tensor_split:
        split = ", ".join(f"{x:g}" for x in settings.tensor_split)
        kwargs.append(
            ("tensor_split", f"[{split}]", " ".join(f"{x:g}" for x in settings.tensor_split))
        )
    lines: list[str] = []
    if settings.parallel and settings.parallel > 1:
        lines.append(
            f"# {settings.parallel} parallel sequences: Llama(...) has no keyword for them "
            "(one sequence per Llama); run the llama-server plan (-r llama.cpp) for slots"
        )
    if settings.n_cpu_moe:
        lines.append(
            f"# experts of the first {settings.n_cpu_moe} layers on the CPU (llama.cpp "
            "--n-cpu-moe): Llama(...) has no keyword for tensor overrides; run the "
            "llama-server plan (-r llama.cpp)"
        )
    imports = "import llama_cpp\n" if quantized else ""
    call = ", ".join([f"model_path={json.dumps(gguf)}", *(f"{k}={py}" for k, py, _ in kwargs)])
    lines.append(f"{imports}from llama_cpp import Llama\nllm = Llama({call})")
    cli = ["python", "-m", "llama_cpp.server", "--model", shlex.quote(gguf)]
    for k, _, flag in kwargs:
        cli += [f"--{k}", flag]
    lines.append("# or the binding's server: " + " ".join(cli))
    return "\n".join(lines)
