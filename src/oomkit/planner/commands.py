"""Copy-paste commands for a planned configuration, checked against per-runtime flag tables.

Each table lists the flags oomkit emits with the number of values each takes and the runtime
version whose argument parser it was read from; the tests parse every emitted command with
:func:`parse_command` against these tables.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from types import MappingProxyType

from oomkit.planner.ollama_tags import OllamaFrom, ollama_from
from oomkit.planner.prepare import OLLAMA_QUANTIZE_TYPES, prepare_checkpoint
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import InferenceSettings

__all__ = [
    "FLAG_TABLES",
    "FlagTable",
    "emit_command",
    "llamacpp_fa_flags",
    "ollama_serve_line",
    "parse_command",
    "prepare_lines",
]


@dataclass(frozen=True, slots=True)
class FlagTable:
    """The flags one runtime program accepts, read from one release's argument parser."""

    program: str  # the argv[0..k] prefix, e.g. "llama-server" or "python -m sglang.launch_server"
    version: str  # the release whose parser the table was read from
    source: str
    flags: Mapping[str, int]  # flag -> number of values it takes (0: a switch, -1: one or more)


FLAG_TABLES: Mapping[str, FlagTable] = MappingProxyType(
    {
        "llama.cpp": FlagTable(
            program="llama-server",
            version="llama.cpp b7000+ (late 2025; -fa takes on|off|auto since b6325)",
            source="llama.cpp common/arg.cpp common_params_parser_init",
            flags=MappingProxyType(
                {
                    "-m": 1,
                    "-hf": 1,
                    "-c": 1,
                    "-ngl": 1,
                    "-fa": 1,
                    "-ctk": 1,
                    "-ctv": 1,
                    "-np": 1,
                    "-b": 1,
                    "-ub": 1,
                    "-ts": 1,
                    "-sm": 1,
                    "--n-cpu-moe": 1,
                    "-ot": 1,
                    "-kvu": 0,
                    "--no-mmap": 0,
                }
            ),
        ),
        "lmstudio": FlagTable(
            program="lms load",
            version="lms 0.0.4x (LM Studio 0.3/0.4; the [path] argument, then the flags)",
            source="lmstudio-ai/lms src/subcommands/load.ts loadCommand",
            flags=MappingProxyType({"--context-length": 1, "--gpu": 1}),
        ),
        "koboldcpp": FlagTable(
            program="python koboldcpp.py",  # koboldcpp.exe on Windows (parse_command reads both)
            version="koboldcpp 1.102 (koboldcpp.py at 000115dd; planner/koboldcpp.py cites it)",
            source="LostRuins/koboldcpp koboldcpp.py parser.add_argument",
            flags=MappingProxyType(
                {
                    "--model": 1,
                    "--usecublas": 0,
                    "--usevulkan": 0,
                    "--contextsize": 1,
                    "--gpulayers": 1,
                    "--tensor_split": -1,  # nargs='+': one value per GPU
                    "--blasbatchsize": 1,  # 1.102: an alias of --batchsize
                    "--usemmap": 0,  # 1.102: mmap is off unless given
                    "--nommap": 0,  # hidden and deprecated in 1.102 (argparse.SUPPRESS)
                    "--flashattention": 0,
                    "--quantkv": 1,
                    "--moecpu": 1,  # 1.97+ (planner/koboldcpp.py)
                    "--overridetensors": 1,
                }
            ),
        ),
        "ollama": FlagTable(
            program="ollama",
            version="Ollama 0.12.x",
            source="ollama cmd/cmd.go, envconfig/config.go, docs/modelfile.md (PARAMETER)",
            flags=MappingProxyType({}),
        ),
        "vllm": FlagTable(
            program="vllm serve",
            version="vLLM 0.10/0.11 (V1 engine)",
            source="vllm vllm/engine/arg_utils.py EngineArgs.add_cli_args",
            flags=MappingProxyType(
                {
                    "--max-model-len": 1,
                    "--gpu-memory-utilization": 1,
                    "--tensor-parallel-size": 1,
                    "--pipeline-parallel-size": 1,
                    "--kv-cache-dtype": 1,
                    "--quantization": 1,
                    "--max-num-seqs": 1,
                    "--cpu-offload-gb": 1,
                    "--enforce-eager": 0,
                    # LoRA (vllm/config/lora.py LoRAConfig through EngineArgs)
                    "--enable-lora": 0,
                    "--max-loras": 1,
                    "--max-lora-rank": 1,
                    "--max-cpu-loras": 1,
                    "--fully-sharded-loras": 0,
                    "--lora-dtype": 1,
                    "--compilation-config": 1,
                    # vLLM 0.10+ (PR #21470 replaced --task embed): pooling models
                    "--runner": 1,
                }
            ),
        ),
        "sglang": FlagTable(
            program="python -m sglang.launch_server",
            version="SGLang 0.4.x/0.5.x",
            source="sglang python/sglang/srt/server_args.py ServerArgs.add_cli_args",
            flags=MappingProxyType(
                {
                    "--model-path": 1,
                    "--context-length": 1,
                    "--mem-fraction-static": 1,
                    "--tp": 1,
                    "--kv-cache-dtype": 1,
                    "--quantization": 1,
                    "--max-running-requests": 1,
                }
            ),
        ),
    }
)

#: Ollama's Modelfile PARAMETER names the plan sets, and its server environment variables
OLLAMA_PARAMETERS = ("num_ctx", "num_gpu")
OLLAMA_ENV = ("OLLAMA_FLASH_ATTENTION", "OLLAMA_KV_CACHE_TYPE", "OLLAMA_NUM_PARALLEL")
#: vLLM's --kv-cache-dtype / SGLang's spelling of an 8-bit float KV cache
_SGLANG_FP8_KV = "fp8_e5m2"


def parse_command(runtime: str, command: str) -> dict[str, list[str]]:
    """Parse an emitted command line against the runtime's flag table.

    Raises:
        ValueError: the program, a flag or a value count does not match the table.
    """
    table = FLAG_TABLES[runtime]
    if runtime in ("lmstudio", "koboldcpp"):  # comment (and import) lines first: then the run
        command = command.rsplit("\n", 1)[-1]
    argv = shlex.split(command)
    if runtime == "koboldcpp" and argv[:1] == ["koboldcpp.exe"]:  # the Windows build
        argv = ["python", "koboldcpp.py", *argv[1:]]
    prog = shlex.split(table.program)
    if argv[: len(prog)] != prog:
        raise ValueError(f"command does not start with '{table.program}': {command}")
    rest = argv[len(prog) :]
    if runtime in ("vllm", "lmstudio"):
        if not rest or rest[0].startswith("-"):
            raise ValueError(f"{table.program} needs the model as its first argument")
        rest = rest[1:]
    out: dict[str, list[str]] = {}
    i = 0
    while i < len(rest):
        flag = rest[i]
        if flag not in table.flags:
            raise ValueError(f"'{flag}' is not a {table.program} flag ({table.version})")
        n = table.flags[flag]
        if n < 0:  # argparse nargs='+': every value up to the next flag
            n = next(
                (j for j, v in enumerate(rest[i + 1 :]) if v.startswith("--")), len(rest) - i - 1
            )
            n = max(n, 1)
        values = rest[i + 1 : i + 1 + n]
        if len(values) != n or any(v.startswith("--") for v in values):
            raise ValueError(f"'{flag}' takes {n} value(s) in {table.program}")
        out[flag] = values
        i += 1 + n
    return out


def _gguf_name(model_ref: str, spec: ModelSpec, quant: str) -> str:
    if model_ref.lower().endswith(".gguf"):
        return model_ref
    prep = prepare_checkpoint("llama.cpp", model_ref, spec.source, quant, spec.torch_dtype)
    if prep is not None:  # a checkpoint directory: the file prepare_lines() writes
        return prep.target
    base = spec.name.rsplit("/", 1)[-1]
    return f"{base}-{quant}.gguf"


#: oomkit's device kind -> the prefix of ggml's device names that ``--device-draft`` takes
_GGML_DEVICE_PREFIX = {
    "cuda": "CUDA",
    "rocm": "ROCm",
    "vulkan": "Vulkan",
    "mps": "MTL",
    "metal": "MTL",
}


def _draft_flags(settings: InferenceSettings, device_kind: str = "cuda") -> list[str]:
    """llama-server's draft-model flags: ``-md`` (a catalog name becomes ``NAME-QUANT.gguf``
    as the main model's does), ``-ngld`` (only when given: unset, llama.cpp's own default for
    the build applies, which is what the estimate modelled), ``-cd``, ``-ctkd``/``-ctvd``,
    ``-devd`` (ggml's device names: ``CUDA1``, ``ROCm1``, ``Vulkan1``, ``MTL0``)."""
    ref = str(settings.draft_model)
    name = (
        ref if ref.lower().endswith(".gguf") else f"{ref}-{settings.draft_quant or 'Q4_K_M'}.gguf"
    )
    parts = ["-md", shlex.quote(name)]
    ngl = settings.draft_n_gpu_layers
    if ngl is not None:
        parts += ["-ngld", str(99 if ngl < 0 else ngl)]
    if settings.draft_ctx:
        parts += ["-cd", str(settings.draft_ctx)]
    if settings.draft_cache_type_k:
        parts += ["-ctkd", settings.draft_cache_type_k]
    if settings.draft_cache_type_v:
        parts += ["-ctvd", settings.draft_cache_type_v]
    if settings.draft_devices:
        prefix = _GGML_DEVICE_PREFIX.get(device_kind, device_kind.upper())
        # -devd names backend devices: GPU i of the target is backend index device_ordinals[i]
        order = settings.device_ordinals or ()
        names = (f"{prefix}{order[i] if i < len(order) else i}" for i in settings.draft_devices)
        parts += ["-devd", ",".join(names)]
    return parts


def _hf_ref(model_ref: str, spec: ModelSpec) -> str:
    if "/" in model_ref or model_ref.startswith((".", "~")):
        return model_ref
    try:
        from oomkit.catalog.models import find_model

        repo = find_model(model_ref).hf_repo
    except Exception:  # not in the catalog: the name the user gave is the best reference
        repo = None
    return repo or spec.name


def _serving_ref(model_ref: str, spec: ModelSpec, quant: str | None) -> str:
    """The checkpoint a vLLM/SGLang command serves, shell-quoted. AWQ and GPTQ are weights
    quantized offline: ``--quantization awq`` on the 16-bit repo fails at load (vLLM
    ``model_loader/weight_utils.py`` ``get_quant_config``: "Cannot find the config file for
    awq" when the repo has no ``quantization_config`` nor quant config file), so a plan that
    switches to one names a
    placeholder for such a checkpoint, as Ollama's ``${OLLAMA_TAG:?...}`` does, instead of a
    command that cannot run. fp8 quantizes a 16-bit checkpoint at load and keeps the repo."""
    repo = _hf_ref(model_ref, spec)
    method = quant.lower() if quant else None
    shipped = spec.quantization.method.lower() if spec.quantization is not None else None
    if method in ("awq", "gptq") and shipped != method:
        return f"<{method.upper()}-checkpoint-of-{repo}>"  # one shell word: parse_command
    return shlex.quote(repo)


def llamacpp_fa_flags(settings: InferenceSettings) -> list[str]:
    """``-fa`` as the build of ``settings.runtime_version`` reads it, for the flash attention
    the estimate used.

    Builds since PR #15434 (2025-08-30, b6343: "the type of flash attention is changed from
    bool to string") take ``-fa on|off|auto`` and default to auto (oomkit: on); older builds
    take a bare ``-fa`` and run without flash attention unless it is given (the generation's
    ``flash_attn_default``).
    """
    from oomkit.estimate.generations import generation_effect, resolve_generation

    gen = resolve_generation("llama.cpp", settings.runtime_version)
    valued = bool(generation_effect(gen, "flash_attn_default", True))
    fa = valued if settings.flash_attn is None else settings.flash_attn
    if valued:
        return ["-fa", "on" if fa else "off"]
    return ["-fa"] if fa else []


#: ggml-org/llama.cpp PR #15077 ("llama : add --n-cpu-moe option", 2025-08-04, release b6089)
_N_CPU_MOE_SINCE = date(2025, 8, 4)


def llamacpp_cpu_moe_flags(
    n_cpu_moe: int, runtime_version: str | None, override_tensor: Sequence[str] | None = None
) -> list[str]:
    r"""The experts of the first ``n_cpu_moe`` layers on the CPU, as the build takes it.

    ``override_tensor`` rules that move only some expert tensors of each layer are printed
    as themselves, ``-ot 'RULES'`` (:func:`oomkit.planner.cpu_experts.partial_expert_rules`,
    shared with koboldcpp's ``--overridetensors``): ``--n-cpu-moe`` would move all three.

    ``--n-cpu-moe N`` exists from PR #15077 (b6089, 2025-08-04); it only adds the tensor
    overrides ``blk\.{i}\.ffn_(up|down|gate)_exps`` -> CPU for ``i < N`` (``common/common.h``
    ``llm_ffn_exps_block_regex``, its pattern of that day: the ``gate_up``/``chexps`` expert
    tensors came later), so an older build gets the same overrides through
    ``-ot``/``--override-tensor`` (PR #11397), which the newer option is a shorthand for: an
    older llama-server rejects ``--n-cpu-moe`` ("error: invalid argument").

    >>> llamacpp_cpu_moe_flags(3, None)
    ['--n-cpu-moe', '3']
    >>> llamacpp_cpu_moe_flags(3, "b5500")
    ['-ot', "'blk\\.(0|1|2)\\.ffn_(up|down|gate)_exps=CPU'"]
    >>> llamacpp_cpu_moe_flags(48, None, ("ffn_(up|down)_exps=CPU",))
    ['-ot', "'ffn_(up|down)_exps=CPU'"]
    """
    from oomkit.planner.cpu_experts import partial_expert_rules

    rules = partial_expert_rules(override_tensor)
    if rules is not None:
        return ["-ot", shlex.quote(rules)]
    if runtime_version is not None and runtime_version.strip():
        from oomkit.estimate.generations import parse_runtime_version

        when = parse_runtime_version("llama.cpp", runtime_version)
        if isinstance(when, date) and when < _N_CPU_MOE_SINCE:
            layers = "|".join(str(i) for i in range(n_cpu_moe))
            return ["-ot", shlex.quote(f"blk\\.({layers})\\.ffn_(up|down|gate)_exps=CPU")]
    return ["--n-cpu-moe", str(n_cpu_moe)]


def emit_command(
    runtime: str,
    settings: InferenceSettings,
    spec: ModelSpec,
    model_ref: str,
    *,
    n_layer_total: int | None = None,
    device_kind: str = "cuda",
    os: str | None = None,
) -> str:
    """The command (or, for Ollama and transformers, the few lines) that runs ``settings``;
    ``device_kind`` (``cuda``, ``rocm``, ``vulkan``, ``mps``) names ggml's devices; ``os``
    ``windows``: Ollama's lines in PowerShell (``$env:`` variables, ``Set-Content``)."""
    q = shlex.quote
    if runtime in ("llama.cpp", "koboldcpp", "lmstudio"):  # -ot rules as they were estimated
        from oomkit.planner.cpu_experts import command_expert_settings

        settings = command_expert_settings(spec, settings)
    if runtime == "lmstudio":  # -r lmstudio: sized as llama.cpp, loaded with LM Studio's lms
        from oomkit.planner.knobs import llamacpp_flash_off
        from oomkit.planner.lmstudio import lmstudio_command

        gguf = _gguf_name(model_ref, spec, settings.quant or "Q4_K_M")
        n_all = n_layer_total or spec.num_hidden_layers + 1
        return lmstudio_command(settings, gguf, n_all, not llamacpp_flash_off(settings))
    if runtime == "koboldcpp":  # -r koboldcpp: sized as llama.cpp, started as koboldcpp.py
        from oomkit.planner.knobs import llamacpp_flash_off
        from oomkit.planner.koboldcpp import koboldcpp_command

        gguf = _gguf_name(model_ref, spec, settings.quant or "Q4_K_M")
        n_all = n_layer_total or spec.num_hidden_layers + 1
        flash = not llamacpp_flash_off(settings)
        return koboldcpp_command(settings, gguf, n_all, flash, device_kind=device_kind, os=os)
    if runtime == "llama.cpp":
        parts = ["llama-server", "-m", q(_gguf_name(model_ref, spec, settings.quant or "Q4_K_M"))]
        parts += ["-c", str(settings.ctx)]
        ngl = settings.n_gpu_layers
        parts += ["-ngl", str(99 if ngl is None else ngl)]
        parts += llamacpp_fa_flags(settings)
        if settings.cache_type_k:
            parts += ["-ctk", settings.cache_type_k, "-ctv", settings.cache_type_v or "f16"]
        if settings.n_cpu_moe:
            parts += llamacpp_cpu_moe_flags(
                settings.n_cpu_moe, settings.runtime_version, settings.override_tensor
            )
        if settings.parallel:
            parts += ["-np", str(settings.parallel)]
            if settings.kv_unified and settings.parallel > 1:
                parts += ["-kvu"]  # the slots share the -c cells (the plan counted it so)
        if settings.draft_model:  # llama-server speculative decoding (estimate.llamacpp_draft)
            parts += _draft_flags(settings, device_kind)
        return " ".join(parts)
    if runtime == "ollama":
        quant = settings.quant or "Q4_K_M"
        prep = prepare_checkpoint("ollama", model_ref, spec.source, quant, spec.torch_dtype)
        source = ollama_from(model_ref, quant) if prep is None else OllamaFrom(prep.target)
        create = "ollama create planned -f Modelfile"
        if prep is not None and not prep.lines and quant.upper() in OLLAMA_QUANTIZE_TYPES:
            create += f" --quantize {quant.upper()}"  # Ollama quantizes the import itself
        env = ["OLLAMA_FLASH_ATTENTION=1"]
        if settings.cache_type_k and settings.cache_type_k != "f16":
            env.append(f"OLLAMA_KV_CACHE_TYPE={settings.cache_type_k}")
        if settings.parallel:
            env.append(f"OLLAMA_NUM_PARALLEL={settings.parallel}")
        lines = [" ".join([*env, "ollama", "serve"])]
        # a placeholder goes outside the quotes, where the shell expands it or stops loudly
        known = source.note is None
        modelfile = [f"FROM {source.value if known else '%s'}", f"PARAMETER num_ctx {settings.ctx}"]
        if settings.n_gpu_layers is not None:
            modelfile.append(f"PARAMETER num_gpu {settings.n_gpu_layers}")
        if os == "windows":
            return "\n".join(_ollama_powershell(env, modelfile, source, create))
        body = "\\n".join(modelfile)
        arg = "" if known else f' "{source.value}"'
        if not known:
            lines.append(f"# {source.note}")
        lines.append(f"printf '{body}\\n'{arg} > Modelfile && {create}")
        lines.append("ollama run planned")
        return "\n".join(lines)
    if runtime == "vllm":
        parts = ["vllm", "serve", _serving_ref(model_ref, spec, settings.quant)]
        parts += ["--max-model-len", str(settings.ctx)]
        util = settings.gpu_memory_utilization or 0.9
        parts += ["--gpu-memory-utilization", f"{util:g}"]
        if settings.tp and settings.tp > 1:
            parts += ["--tensor-parallel-size", str(settings.tp)]
        if settings.pp and settings.pp > 1:  # (the memory modelled is per stage)
            parts += ["--pipeline-parallel-size", str(settings.pp)]
        if settings.cpu_offload_bytes:  # GiB despite its name (cpu_offload_gb * 1024**3)
            parts += ["--cpu-offload-gb", f"{settings.cpu_offload_bytes / (1 << 30):g}"]
        if settings.enforce_eager:
            parts += ["--enforce-eager"]
        if settings.pooling:  # the estimate priced the pooler's profile run, not the sampler's
            parts += ["--runner", "pooling"]
        if settings.cache_type_k and settings.cache_type_k != "auto":
            parts += ["--kv-cache-dtype", settings.cache_type_k]
        if settings.quant in ("fp8", "awq", "gptq"):
            parts += ["--quantization", settings.quant]
        if settings.max_num_seqs or settings.parallel:
            parts += ["--max-num-seqs", str(settings.max_num_seqs or settings.parallel)]
        if settings.enable_lora:
            parts += _vllm_lora_flags(settings)
        return " ".join(parts)
    if runtime == "sglang":
        parts = ["python", "-m", "sglang.launch_server"]
        parts += ["--model-path", _serving_ref(model_ref, spec, settings.quant)]
        parts += ["--context-length", str(settings.ctx)]
        if settings.tp and settings.tp > 1:
            parts += ["--tp", str(settings.tp)]
        if settings.cache_type_k and settings.cache_type_k != "auto":
            parts += ["--kv-cache-dtype", _SGLANG_FP8_KV]
        if settings.quant in ("fp8", "awq", "gptq"):
            parts += ["--quantization", settings.quant]
        if settings.max_num_seqs or settings.parallel:
            seqs = settings.max_num_seqs or settings.parallel
            parts += ["--max-running-requests", str(seqs)]
        return " ".join(parts)
    if settings.max_new_tokens is None and settings.ctx:
        # the generated tokens the estimate took: what a learned position table leaves
        from dataclasses import replace

        from oomkit.estimate.transformers_layouts import DEFAULT_NEW_TOKENS, generated_tokens

        new, cut = generated_tokens(spec, settings.ctx, None, DEFAULT_NEW_TOKENS)
        settings = replace(settings, max_new_tokens=new) if cut else settings
    return _transformers_snippet(settings, _hf_ref(model_ref, spec))


def ollama_serve_line(env: Sequence[str], os: str | None = None) -> str:
    """``ollama serve`` started with the ``NAME=value`` variables ``env``: a POSIX shell's
    ``A=1 B=2 ollama serve``, or on ``windows`` PowerShell's ``$env:A="1"; $env:B="2"; ollama
    serve`` (PowerShell has no per-command assignment; ``;`` because Windows PowerShell 5.1 has
    no ``&&``)."""
    if os != "windows":
        return " ".join([*env, "ollama", "serve"])
    pairs = (e.split("=", 1) for e in env)
    return "; ".join(f'$env:{k}="{v}"' for k, v in pairs) + "; ollama serve"


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


def prepare_lines(
    runtime: str, settings: InferenceSettings, spec: ModelSpec, model_ref: str
) -> tuple[str, ...]:
    """Shell lines to run before :func:`emit_command`'s command: converting (and quantizing) a
    Hugging Face checkpoint directory for llama.cpp or Ollama (``planner/prepare.py``); empty
    when the model is a ``.gguf``, a catalog name or a runtime that loads the directory."""
    quant = settings.quant or "Q4_K_M"
    prep = prepare_checkpoint(runtime, model_ref, spec.source, quant, spec.torch_dtype)
    return () if prep is None else prep.lines


def _transformers_snippet(settings: InferenceSettings, repo: str) -> str:
    quant = (settings.quant or "bf16").lower()
    lines = ["import torch", "from transformers import AutoModelForCausalLM, AutoTokenizer"]
    # the device map the plan was estimated with: "none" is from_pretrained, then .to("cuda")
    on_one_gpu = settings.device_map == "none"
    placement = "sequential" if settings.device_map == "sequential" else "auto"
    kwargs = [f"{repo!r}"] if on_one_gpu else [f"{repo!r}", f'device_map="{placement}"']
    bnb = quant in ("nf4", "int8", "fp4")
    if on_one_gpu and bnb:
        # bitsandbytes models refuse .to() (8-bit; 4-bit before bnb 0.43.2) and load on the
        # current GPU without a device_map (Bnb8BitHfQuantizer.update_device_map): say so
        kwargs.append('device_map={"": 0}')
    caps = settings.max_memory_bytes
    if caps is not None and not on_one_gpu:  # accelerate takes bytes as ints
        kwargs.append(
            f"max_memory={{i: {caps[0]} for i in range(torch.cuda.device_count())}}"
            if len(caps) == 1
            else "max_memory={" + ", ".join(f"{i}: {b}" for i, b in enumerate(caps)) + "}"
        )
    if bnb:
        lines[1] += ", BitsAndBytesConfig"
        cfg = (
            "BitsAndBytesConfig(load_in_8bit=True)"
            if quant == "int8"
            else f'BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="{quant}", '
            "bnb_4bit_compute_dtype=torch.bfloat16, bnb_4bit_use_double_quant=True)"
        )
        kwargs.append(f"quantization_config={cfg}")
    elif settings.quant is None:  # a pre-quantized checkpoint (GPTQ, AWQ, fp8) loads as saved
        kwargs.append('dtype="auto"')
    else:
        dtype = _TORCH_DTYPES.get(quant, "torch.bfloat16")
        kwargs.append(f"dtype={dtype}")
    if settings.attn_implementation:  # unset: the release's own default, as estimated
        kwargs.append(f"attn_implementation={settings.attn_implementation!r}")
    lines.append(f"model = AutoModelForCausalLM.from_pretrained({', '.join(kwargs)})")
    if on_one_gpu and not bnb:
        lines.append('model = model.to("cuda")')
    lines.extend(_generate_lines(settings, repo))
    return "\n".join(lines)


def _generate_lines(settings: InferenceSettings, repo: str) -> list[str]:
    """The ``generate()`` call the plan was estimated with: ``parallel`` prompts padded to one
    batch, each at most ``ctx`` tokens (truncated), and ``max_new_tokens`` (the estimate's
    default 256; transformers' own GenerationConfig default is ``max_length=20``)."""
    batch = settings.parallel or 1
    new = settings.max_new_tokens or 256
    limit = f", truncation=True, max_length={settings.ctx}" if settings.ctx else ""
    tok = f'tokenizer = AutoTokenizer.from_pretrained({repo!r}, padding_side="left")'
    lines = [tok]
    if batch > 1:
        lines.append("tokenizer.pad_token = tokenizer.pad_token or tokenizer.eos_token")
    each = f", each at most {settings.ctx} tokens" if settings.ctx else ""
    lines += [
        f'prompts = ["..."] * {batch}  # your {batch} prompt(s) of one batch{each}',
        f'inputs = tokenizer(prompts, return_tensors="pt", padding=True{limit}).to(model.device)',
        f"out = model.generate(**inputs, max_new_tokens={new})",
    ]
    return lines


#: the torch dtype a transformers plan's weights load in, by its --quant (bf16 otherwise)
_TORCH_DTYPES = {
    "fp16": "torch.float16",
    "f16": "torch.float16",
    "fp32": "torch.float32",
    "f32": "torch.float32",
    "bf16": "torch.bfloat16",
}


def _vllm_lora_flags(settings: InferenceSettings) -> list[str]:
    """``vllm serve``'s LoRA flags for the slots the estimate sized (oomkit.estimate.vllm_lora);
    ``cudagraph_specialize_lora`` is a compilation-config key, not a flag of its own."""
    parts = ["--enable-lora"]
    for flag, value in (
        ("--max-loras", settings.max_loras),
        ("--max-lora-rank", settings.max_lora_rank),
        ("--max-cpu-loras", settings.max_cpu_loras),
        ("--lora-dtype", settings.lora_dtype),
    ):
        if value is not None:
            parts += [flag, str(value)]
    if settings.fully_sharded_loras:
        parts += ["--fully-sharded-loras"]
    if settings.cudagraph_specialize_lora is not None:
        on = "true" if settings.cudagraph_specialize_lora else "false"
        parts += ["--compilation-config", shlex.quote(f'{{"cudagraph_specialize_lora": {on}}}')]
    return parts
