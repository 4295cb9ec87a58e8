"""``oomkit estimate MODEL [options]`` without importing click (the cold-start path, issue 10).

Importing click and building the command group costs about as much as the estimate itself, so
``main`` first hands argv here. :func:`parse_estimate_args` accepts only the plain form: the
word ``estimate``, one MODEL, and options of the table below, each written out in full as its
own argument (``--ctx 8192``, ``-q Q4_K_M``, ``--json``), with a value click would convert
without complaint. Anything else — ``--help``, ``--opt=value``, ``-cmax``, ``--``, a second
MODEL, a choice, a repeatable or training option, ``--emit``, a value that does not convert, a
shell asking for completions — returns ``None`` and click parses argv as always, with its own
messages and exit codes.

What is accepted is converted exactly as click does (``int``/``float`` for ``type=int``/
``float``, the same parsers as ``params.SIZE``/``params.CONTEXT``), the last of a repeated
option wins, a value option takes the next argument whatever it looks like, and options not
given get the command's defaults; both paths then call ``estimate_run.run_estimate``.
``tests/test_cli_fast.py`` checks the table against the click command and the parse against
click's on a battery of argv.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from oomkit.cli.runtime_flags import MODEL_FLAGS, PP_FLAGS, SEQS_FLAGS
from oomkit.cli.speculative_options import SPECULATIVE_PARAMS
from oomkit.cli.values import CTX_FLAGS, TP_FLAGS, parse_context, parse_count, parse_size

__all__ = ["DEFAULTS", "FLAGS", "VALUE_OPTIONS", "parse_estimate_args", "run_fast"]

#: set by a shell asking click for completions (click's ``_{PROG}_COMPLETE``)
_COMPLETE_VAR = "_OOMKIT_COMPLETE"

#: option string -> (parameter name, converter) for the options that take one value
VALUE_OPTIONS: dict[str, tuple[str, Callable[[str], Any]]] = {}
#: flag string -> (parameter name, the value it sets)
FLAGS: dict[str, tuple[str, bool]] = {}
#: parameter name -> the option string the last parsed argv used for it (error messages name
#: the flag as typed: `--max-model-len 0` was reported as "--ctx")
TYPED: dict[str, str] = {}


def _value(name: str, convert: Callable[[str], Any], *opts: str) -> None:
    for opt in opts:
        VALUE_OPTIONS[opt] = (name, convert)


def _flag(name: str, on: tuple[str, ...], off: tuple[str, ...] = ()) -> None:
    FLAGS.update({o: (name, True) for o in on})
    FLAGS.update({o: (name, False) for o in off})


_value("model_flag", str, *MODEL_FLAGS)  # -m x.gguf: the MODEL (runtime_flags)
_value("runtime", str, "--runtime", "-r")
_value("quant", str, "--quant", "-q", "--quantization")
_value("dtype", str, "--dtype")  # vLLM/SGLang (pasted_flags.dtype_quant)
_value("ctx", parse_context, *CTX_FLAGS)
_value("parallel", int, "--parallel", "--batch", "-np")
_value("batch_size", int, "--batch-size", "-b")
_value("ubatch", int, "--ubatch", "-ub", "--ubatch-size")
_value("kv_dtype", str, "--kv-dtype", "--kv-cache-dtype")
_value("cache_type_k", str, "--cache-type-k", "-ctk")
_value("cache_type_v", str, "--cache-type-v", "-ctv")
_value("n_gpu_layers", int, "--n-gpu-layers", "-ngl", "--gpu-layers")
_value("n_cpu_moe", int, "--n-cpu-moe")
_value("gpu", str, "--gpu", "-g")
_value("vram", parse_size, "--vram")
_value("ram", parse_size, "--ram")
_value("tp", int, *TP_FLAGS)
_value("gpu_memory_utilization", float, "--gpu-memory-utilization")
_value("max_num_seqs", int, *SEQS_FLAGS)
_value("max_num_batched_tokens", int, "--max-num-batched-tokens")
_value("overhead", parse_size, "--overhead")
_value("runtime_version", str, "--runtime-version")
_value("tensor_split", str, "--tensor-split", "-ts")
_value("pp", int, *PP_FLAGS)
_value("mem_fraction_static", float, "--mem-fraction-static")
_value("cpu_offload_gb", float, "--cpu-offload-gb")
_value("block_size", int, "--block-size")
_value("draft_model", str, "--draft-model", "--model-draft", "-md")
_value("draft_quant", str, "--draft-quant")
_value("draft_ngl", int, "--draft-ngl", "--gpu-layers-draft", "-ngld")
_value("draft_ctx", parse_count, "--draft-ctx", "--ctx-size-draft", "-cd")  # no max
_value("draft_cache_type_k", str, "--cache-type-k-draft", "-ctkd")
_value("draft_cache_type_v", str, "--cache-type-v-draft", "-ctvd")
_value("draft_device", str, "--device-draft", "-devd")
_value("device", str, "--device", "-dev")
_value("max_memory", str, "--max-memory")
_value("max_new_tokens", int, "--max-new-tokens")
_value("max_loras", int, "--max-loras")
_value("max_lora_rank", int, "--max-lora-rank")
_value("max_cpu_loras", int, "--max-cpu-loras")
_flag("kv_unified", ("--kv-unified",), ("--no-kv-unified",))
_flag("swa_full", ("--swa-full",), ("--no-swa-full",))
_flag("flash_attn", ("--flash-attn", "-fa"), ("--no-flash-attn",))
_flag("enforce_eager", ("--enforce-eager",), ("--no-enforce-eager",))
_flag("disable_hybrid_swa_memory", ("--disable-hybrid-swa-memory",))
_flag("prompt_logprobs", ("--prompt-logprobs",))
_flag("llm_class", ("--llm-class",))
_flag("pooling", ("--pooling",))
_flag("enable_lora", ("--enable-lora",))
_flag("fully_sharded_loras", ("--fully-sharded-loras",))
_flag(
    "cudagraph_specialize_lora",
    ("--cudagraph-specialize-lora",),
    ("--no-cudagraph-specialize-lora",),
)
_flag("display", ("--display",), ("--headless",))
_flag("mmap", ("--mmap",), ("--no-mmap",))
_flag("llama_server", ("--llama-server",), ("--no-llama-server",))
_flag("offline", ("--offline",))
_flag("explain", ("--explain",))
_flag("as_json", ("--json",))

#: the keyword arguments of ``run_estimate`` when no option is given (the click defaults)
DEFAULTS: dict[str, Any] = {
    **{name: None for name, _ in VALUE_OPTIONS.values()},
    # vLLM/SGLang speculative flags: never parsed here (click reads them), None by default
    **dict.fromkeys(SPECULATIVE_PARAMS),
    **{name: None for name, _ in FLAGS.values()},
    "runtime": "llama.cpp",
    "offline": False,
    "explain": False,
    "as_json": False,
    "os_name": None,
    "split_mode": None,
    "backend": None,
    "vulkan_driver": None,
    "device_map": None,
    "override_tensor": (),
    "emit": None,
    "lora_dtype": None,
}
del DEFAULTS["model_flag"]  # not run_estimate's: -m is the MODEL (parse_estimate_args)


def parse_estimate_args(args: Sequence[str]) -> dict[str, Any] | None:
    """``run_estimate`` keyword arguments (``model`` included) for argv ``args``, or ``None``
    when click must parse it (see the module docstring)."""
    if not args or args[0] != "estimate" or os.environ.get(_COMPLETE_VAR):
        return None
    out = dict(DEFAULTS)
    TYPED.clear()
    model: str | None = None
    i, n = 1, len(args)
    while i < n:
        arg = args[i]
        i += 1
        if arg[:1] != "-" or arg == "-":
            if model is not None:
                return None  # click: "Got unexpected extra argument"
            model = arg
        elif arg in FLAGS:
            name, flag = FLAGS[arg]
            out[name] = flag
        elif arg in VALUE_OPTIONS and i < n:
            name, convert = VALUE_OPTIONS[arg]
            if name == "model_flag" and out.get(name, args[i]) != args[i]:
                return None  # -m a -m b: click refuses the two models (resolve_model)
            try:
                out[name] = convert(args[i])
            except Exception:  # click's message (or error) for the value, not ours
                return None
            TYPED[name] = arg
            i += 1
        else:
            return None
    flagged = out.pop("model_flag", None)
    if flagged is not None and model is not None and flagged != model:
        return None  # click: "two models given"
    model = model if model is not None else flagged
    if model is None:
        return None
    out["model"] = model
    return out


def run_fast(args: Sequence[str]) -> int | None:
    """Run ``args`` as ``oomkit estimate`` without click; ``None`` if click must take them.

    What click's ``main`` does around a command is kept: end-of-input or Ctrl-C while running
    prints an empty line and ``Error: aborted`` (exit 1); a closed stdout pipe exits 1 quietly.
    """
    kwargs = parse_estimate_args(args)
    if kwargs is None:
        return None
    from oomkit.cli.estimate_run import run_estimate

    try:
        return run_estimate(**kwargs)
    except (EOFError, KeyboardInterrupt):
        from oomkit.cli.output import EXIT_ERROR, echo, print_error

        echo(err=True)
        print_error("aborted")
        return EXIT_ERROR
    except OSError as e:
        import errno

        if e.errno != errno.EPIPE:
            raise
        from click import utils  # its wrapper: later flushes of the closed pipe stay quiet

        wrapper: Any = getattr(utils, "_PacifyFlushWrapper", None) or utils.PacifyFlushWrapper
        sys.stdout = wrapper(sys.stdout)
        sys.stderr = wrapper(sys.stderr)
        sys.exit(1)
