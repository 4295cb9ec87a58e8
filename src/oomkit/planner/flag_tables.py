"""The flags each runtime program accepts, and a parser that checks an emitted command.

Each table lists the flags oomkit emits with the number of values each takes and the runtime
version whose argument parser it was read from; the tests parse every emitted command
(:func:`oomkit.planner.commands.emit_command`) with :func:`parse_command` against these tables.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = ["FLAG_TABLES", "OLLAMA_ENV", "OLLAMA_PARAMETERS", "FlagTable", "parse_command"]


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
            version="llama.cpp b7000+ (late 2025; -fa takes on|off|auto since PR #15434)",
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
                    "--max-num-batched-tokens": 1,
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
                    # speculative decoding (vllm/config/speculative.py SpeculativeConfig)
                    "--speculative-config": 1,
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
                    "--pp-size": 1,
                    "--disable-cuda-graph": 0,
                    "--kv-cache-dtype": 1,
                    "--quantization": 1,
                    "--max-running-requests": 1,
                    # speculative decoding (server_args.py, the --speculative-* group)
                    "--speculative-algorithm": 1,
                    "--speculative-draft-model-path": 1,
                    "--speculative-num-steps": 1,
                    "--speculative-eagle-topk": 1,
                    "--speculative-num-draft-tokens": 1,
                }
            ),
        ),
    }
)

#: Ollama's Modelfile PARAMETER names the plan sets, and its server environment variables
OLLAMA_PARAMETERS = ("num_ctx", "num_gpu")
OLLAMA_ENV = ("OLLAMA_FLASH_ATTENTION", "OLLAMA_KV_CACHE_TYPE", "OLLAMA_NUM_PARALLEL")


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
