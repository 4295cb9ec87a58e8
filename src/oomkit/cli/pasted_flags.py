"""A server's command line pasted into ``oomkit estimate`` or ``oomkit plan``: the flags that
change no memory, read and named (never silently dropped), ``-c 0``, and vLLM/SGLang
``--dtype``.

The README says a server's flags can be pasted. Flags of the server that do not change what
it allocates (the listening address, threads, logging, the chat template, sampling defaults,
``--trust-remote-code``) are accepted and ignored: :func:`strip_ignored` takes them out of argv
before any parser sees them, and the estimate names them in one note line and in its JSON
(``ignored_flags``). A flag in neither oomkit's options nor these lists is still refused by
the parser ("No such option"). Each list below was read in the runtime's own argument parser:

* llama.cpp ``common/arg.cpp`` ``common_params_parser_init``: ``-t/--threads``,
  ``-tb/--threads-batch`` (CPU threads), ``--host``, ``--port``, ``--path``, ``--api-key``,
  ``--api-key-file``, ``--ssl-key-file``, ``--ssl-cert-file``, ``-to/--timeout``,
  ``--threads-http``, ``-a/--alias``, ``--jinja``/``--no-jinja``, ``--chat-template``,
  ``--chat-template-file``, ``--reasoning-format``, ``--reasoning-budget``, ``--metrics``,
  ``--slots``/``--no-slots``, ``--props``, ``--no-webui``, ``-v/--verbose/--log-verbose``,
  ``-lv/--verbosity/--log-verbosity``, ``--log-disable``, ``--log-file``, ``--log-prefix``,
  ``--log-timestamps``, ``-s/--seed``, ``--temp``, ``--top-k``, ``--top-p``, ``--min-p``,
  ``--repeat-penalty``, ``--repeat-last-n``, ``--presence-penalty``, ``--frequency-penalty``,
  ``-n/--predict/--n-predict``, ``--keep``, ``--no-warmup``, ``-cb/--cont-batching``,
  ``-nocb/--no-cont-batching``, ``--context-shift``/``--no-context-shift``, ``--cache-reuse``
  (reuses cells of the same cache), ``--numa``, ``--no-perf``.
* vLLM ``vllm/entrypoints/openai/cli_args.py`` ``make_arg_parser`` and
  ``vllm/engine/arg_utils.py`` ``EngineArgs.add_cli_args``: ``--host``, ``--port``,
  ``--api-key``, ``--served-model-name`` (``nargs="+"``), ``--chat-template``,
  ``--response-role``, ``--uvicorn-log-level``, ``--disable-uvicorn-access-log``,
  ``--disable-log-requests``, ``--enable-log-requests``, ``--disable-log-stats``,
  ``--enable-auto-tool-choice``, ``--tool-call-parser``, ``--reasoning-parser``,
  ``--trust-remote-code``, ``--tokenizer``, ``--tokenizer-mode``, ``--revision``,
  ``--tokenizer-revision``, ``--download-dir``, ``--seed``, ``--root-path``,
  ``--allowed-origins``, ``--ssl-keyfile``, ``--ssl-certfile``, ``--disable-fastapi-docs``,
  ``--generation-config``, ``--enable-prefix-caching``/``--no-enable-prefix-caching`` (the
  KV pool is sized from the profiled free memory either way: ``gpu_worker.determine_available_
  memory``).
* SGLang ``python/sglang/srt/server_args.py`` ``ServerArgs.add_cli_args``: ``--host``,
  ``--port``, ``--api-key``, ``--served-model-name``, ``--chat-template``, ``--log-level``,
  ``--log-requests``, ``--tokenizer-path``, ``--random-seed``, ``--tool-call-parser``,
  ``--reasoning-parser``, ``--trust-remote-code``, ``--enable-metrics``,
  ``--skip-server-warmup``, ``--revision``, ``--download-dir``.

Left out on purpose (they change memory, so they are either modelled or refused): ``--mlock``,
``--embedding``/``--reranking`` (oomkit's ``--pooling``), ``--ctx-checkpoints``,
``--enable-chunked-prefill`` (the step's token budget), ``-hf`` (the model's source).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "IGNORED_SWITCHES",
    "IGNORED_VALUED",
    "MULTI_VALUED",
    "dtype_quant",
    "forget_ignored",
    "ignored_note",
    "last_ignored",
    "strip_ignored",
]

#: flags that take no value (module docstring: where each was read)
IGNORED_SWITCHES: frozenset[str] = frozenset(
    {
        # llama.cpp
        "--jinja",
        "--no-jinja",
        "--metrics",
        "--slots",
        "--no-slots",
        "--props",
        "--no-webui",
        "-v",
        "--verbose",
        "--log-verbose",
        "--log-disable",
        "--log-prefix",
        "--log-timestamps",
        "--no-warmup",
        "-cb",
        "--cont-batching",
        "-nocb",
        "--no-cont-batching",
        "--context-shift",
        "--no-context-shift",
        "--no-perf",
        # vLLM
        "--disable-uvicorn-access-log",
        "--disable-log-requests",
        "--enable-log-requests",
        "--disable-log-stats",
        "--enable-auto-tool-choice",
        "--trust-remote-code",
        "--disable-fastapi-docs",
        "--enable-prefix-caching",
        "--no-enable-prefix-caching",
        # SGLang
        "--log-requests",
        "--enable-metrics",
        "--skip-server-warmup",
    }
)

#: flags that take one value
IGNORED_VALUED: frozenset[str] = frozenset(
    {
        # llama.cpp
        "-t",
        "--threads",
        "-tb",
        "--threads-batch",
        "--host",
        "--port",
        "--path",
        "--api-key",
        "--api-key-file",
        "--ssl-key-file",
        "--ssl-cert-file",
        "-to",
        "--timeout",
        "--threads-http",
        "-a",
        "--alias",
        "--chat-template",
        "--chat-template-file",
        "--reasoning-format",
        "--reasoning-budget",
        "-lv",
        "--verbosity",
        "--log-verbosity",
        "--log-file",
        "-s",
        "--seed",
        "--temp",
        "--top-k",
        "--top-p",
        "--min-p",
        "--repeat-penalty",
        "--repeat-last-n",
        "--presence-penalty",
        "--frequency-penalty",
        "-n",
        "--predict",
        "--n-predict",
        "--keep",
        "--cache-reuse",
        "--numa",
        # vLLM
        "--response-role",
        "--uvicorn-log-level",
        "--tool-call-parser",
        "--reasoning-parser",
        "--tokenizer",
        "--tokenizer-mode",
        "--revision",
        "--tokenizer-revision",
        "--download-dir",
        "--root-path",
        "--allowed-origins",
        "--ssl-keyfile",
        "--ssl-certfile",
        "--generation-config",
        # SGLang
        "--log-level",
        "--tokenizer-path",
        "--random-seed",
    }
)

#: valued flags that take one value or more (argparse ``nargs="+"``): vLLM/SGLang
#: ``--served-model-name a b``
MULTI_VALUED: frozenset[str] = frozenset({"--served-model-name"})

#: the commands whose argv is a pasted server line
_COMMANDS = ("estimate", "plan")

_last: list[str] = []


def forget_ignored() -> None:
    """Drop what :func:`strip_ignored` took (``main`` calls it when its command ends, so a
    later in-process caller of ``run_estimate``, the web API, never sees a stale list)."""
    _last.clear()


def last_ignored() -> tuple[str, ...]:
    """The flags (with their values, as typed) :func:`strip_ignored` took out of the argv of
    the command now running; empty when none."""
    return tuple(_last)


def strip_ignored(args: list[str]) -> list[str]:
    """``args`` without the memory-neutral server flags of the module docstring (``--port
    8080``, ``--port=8080``, ``--jinja``), which :func:`last_ignored` then names. Other
    commands, and everything after ``--``, are unchanged.

    >>> strip_ignored(["estimate", "m", "--jinja", "-t", "8", "--port=80", "-c", "8k"])
    ['estimate', 'm', '-c', '8k']
    >>> last_ignored()
    ('--jinja', '-t 8', '--port=80')
    >>> strip_ignored(["estimate", "m", "--served-model-name", "a", "b", "-ngl", "99"])
    ['estimate', 'm', '-ngl', '99']
    """
    _last.clear()
    if not args or args[0] not in _COMMANDS:
        return args
    out: list[str] = []
    i, n = 0, len(args)
    while i < n:
        a = args[i]
        name, eq, _ = a.partition("=")
        if a == "--":
            out.extend(args[i:])
            break
        if a in IGNORED_SWITCHES or (eq and name in IGNORED_VALUED | MULTI_VALUED):
            _last.append(a)
        elif a in IGNORED_VALUED and i + 1 < n:
            _last.append(f"{a} {args[i + 1]}")
            i += 1
        elif a in MULTI_VALUED and i + 1 < n:
            values = [args[i + 1]]
            i += 1
            while i + 1 < n and not args[i + 1].startswith("-"):
                values.append(args[i + 1])
                i += 1
            _last.append(" ".join((a, *values)))
        else:
            out.append(a)
        i += 1
    return out


#: vLLM ``ModelConfig.dtype`` / SGLang ``--dtype`` choices -> oomkit's HF weight format
#: (``auto``: the checkpoint's own dtype, as oomkit's default)
_DTYPES: dict[str, str | None] = {
    "auto": None,
    "half": "fp16",
    "float16": "fp16",
    "bfloat16": "bf16",
    "float": "fp32",
    "float32": "fp32",
}
_DTYPE_RUNTIMES = ("vllm", "sglang")


def dtype_quant(runtime: str, dtype: str | None, quant: str | None) -> tuple[str | None, str]:
    """``(quant, note)`` for vLLM/SGLang ``--dtype``: the dtype the unquantized weights are
    loaded in, so oomkit's ``--quant``.

    vLLM ``vllm/config/model.py`` ``_get_and_verify_dtype``: ``auto`` keeps the config's
    ``torch_dtype`` and serves a float32 checkpoint in 16 bits (what oomkit's vLLM estimate
    does without ``--quant``); ``half``/``float16``, ``bfloat16`` and ``float``/``float32``
    cast the weights (and, with ``--kv-cache-dtype auto``, the KV cache) to that type. SGLang's
    ``--dtype`` has the same choices and rule (``ModelConfig``: ``_get_and_verify_dtype``). With
    a quantization (``--quantization awq``) the dtype is that of the activations and the
    unquantized layers: a 16-bit one changes nothing oomkit sizes.

    Raises:
        InvalidSettingError: not one of the choices, another runtime, or float32 with a
            quantization.
    """
    from oomkit.errors import InvalidSettingError

    if dtype is None:
        return quant, ""
    key = dtype.strip().lower()
    if key not in _DTYPES:
        raise InvalidSettingError(
            f"--dtype {dtype}: vLLM/SGLang accept {', '.join(_DTYPES)}",
            setting="--dtype",
            value=dtype,
        )
    if runtime not in _DTYPE_RUNTIMES:
        raise InvalidSettingError(
            f"--dtype {dtype} is a vLLM/SGLang flag; for {runtime} give the weights' format "
            "with --quant",
            setting="--dtype",
            value=dtype,
        )
    mapped = _DTYPES[key]
    if quant is not None:
        from oomkit.quant.hf_formats import hf_format

        if mapped == "fp32" or hf_format(quant).method != "float":
            if mapped == "fp32":
                raise InvalidSettingError(
                    f"--dtype {dtype} with --quant {quant}: a float32 run of a quantized "
                    "checkpoint is not modelled by oomkit; drop one of them",
                    setting="--dtype",
                    value=dtype,
                )
            return quant, f"--dtype {dtype}: the activations' dtype of the {quant} weights"
        if mapped is not None and hf_format(quant).name != mapped:
            raise InvalidSettingError(
                f"--dtype {dtype} and --quant {quant} name two weight dtypes; give one",
                setting="--dtype",
                value=dtype,
            )
        return quant, ""
    if mapped is None:
        return None, "--dtype auto: the checkpoint's torch_dtype (float32 served in 16 bits)"
    return mapped, f"--dtype {dtype}: weights loaded as {mapped} (--quant {mapped})"


def ignored_note(flags: Sequence[str]) -> str:
    """The one note line naming the ignored flags."""
    return (
        "ignored (the server's flags that change no memory: address, threads, logging, "
        f"templates, sampling): {' '.join(flags)}"
    )
