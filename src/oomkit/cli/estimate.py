"""``oomkit estimate MODEL``: memory per device for one configuration (the click command;
the inference work is ``estimate_run.run_estimate``)."""

from __future__ import annotations

import dataclasses
from typing import Any

import click

from oomkit.cli.args_command import ArgsCommand
from oomkit.cli.estimate_run import render_suggestions, run_estimate
from oomkit.cli.gpu_choice import BACKEND_CHOICES
from oomkit.cli.lora_options import lora_options
from oomkit.cli.params import CONTEXT, COUNT, SIZE
from oomkit.cli.runtime_flags import PP_FLAGS, SEQS_FLAGS, model_option, unmodelled_options
from oomkit.cli.speculative_options import speculative_options
from oomkit.cli.train_options import EMIT_CHOICES, TrainOptions, training_options
from oomkit.cli.transformers_options import ATTN_PARAM, inference_attn, transformers_options
from oomkit.cli.values import CTX_FLAGS, OS_CHOICES, TP_FLAGS
from oomkit.estimate.registry import RUNTIMES_HELP

__all__ = ["estimate_command", "render_suggestions"]

#: the estimate options a training step uses (the rest are refused with --train); display and
#: os_name: the verdict's platform terms
TRAINING_PASSED: tuple[str, ...] = (
    *("gpu", "vram", "ram", "tp", "overhead", "offline", "explain", "as_json"),
    *("display", "os_name"),
)


@click.command("estimate", cls=ArgsCommand)
@click.argument("model", required=False)
@model_option
@click.option(
    "--runtime",
    "-r",
    default="llama.cpp",
    show_default=True,
    help=RUNTIMES_HELP,
)
@click.option(
    "--quant",
    "-q",
    "--quantization",
    "quant",
    help="GGUF type (Q4_K_M, Q8_0, IQ4_XS) or bf16/fp8/int8/nf4/awq/gptq",
)
@click.option(
    "--dtype",
    help="vLLM/SGLang --dtype (auto, half, float16, bfloat16, float, float32): the weights' "
    "dtype, as --quant bf16/fp16/fp32",
)
@click.option(
    *CTX_FLAGS,  # with the runtimes' own spellings (values.CTX_FLAGS)
    "ctx",
    type=CONTEXT,
    help="Context length (n_ctx / max_model_len), e.g. 32k; 'max': the largest that fits",
)
@click.option("--parallel", "--batch", "-np", "parallel", type=int, help="Parallel sequences")
@click.option("--batch-size", "-b", type=int, help="llama.cpp logical batch (-b)")
@click.option(
    "--ubatch", "-ub", "--ubatch-size", "ubatch", type=int, help="llama.cpp physical batch (-ub)"
)
@click.option(
    "--kv-dtype",
    "--kv-cache-dtype",
    "kv_dtype",
    help="KV cache type for K and V (f16, q8_0, q4_0, fp8, ...)",
)
@click.option("--cache-type-k", "-ctk", help="KV cache type for K")
@click.option("--cache-type-v", "-ctv", help="KV cache type for V")
@click.option("--kv-unified/--no-kv-unified", default=None, help="llama.cpp unified KV buffer")
@click.option("--swa-full/--no-swa-full", default=None, help="llama.cpp full-size SWA cache")
@click.option(
    "--flash-attn/--no-flash-attn",
    "-fa",
    default=None,
    help="Flash attention (llama-server's -fa on|off|auto is read too)",
)
@click.option(
    "--n-gpu-layers",
    "-ngl",
    "--gpu-layers",
    "n_gpu_layers",
    type=int,
    help="Layers on the GPU (default: all; -1 = all)",
)
@click.option("--n-cpu-moe", type=int, help="Keep the experts of the first N layers on the CPU")
@click.option(
    "--gpu",
    "-g",
    "gpu",
    help="GPU(s) from the catalog: rtx-4090, 2xA100-80GB, 4090x2, a,b; or 'auto' (this "
    "machine's GPUs, planned with their free memory now)",
)
@click.option(
    "--vram",
    type=SIZE,
    help="Memory per GPU with a unit: 24GiB = 24x2^30, 24GB = 24x10^9, 24G = 24GiB "
    "(binary, as llama.cpp/Ollama)",
)
@click.option("--ram", type=SIZE, help="Host RAM with a unit (as --vram: GiB/G binary, GB decimal)")
@click.option(
    *TP_FLAGS,
    "tp",
    type=int,
    help="Tensor-parallel size (vLLM/SGLang)",
)
@click.option("--gpu-memory-utilization", type=float, help="vLLM fraction of each GPU")
@click.option(
    *SEQS_FLAGS,
    "max_num_seqs",
    type=int,
    help="vLLM/SGLang max concurrent sequences",
)
@click.option("--max-num-batched-tokens", type=int, help="vLLM tokens per forward step")
@click.option("--enforce-eager/--no-enforce-eager", default=None, help="vLLM: no CUDA graphs")
@click.option(
    "--disable-hybrid-swa-memory",
    is_flag=True,
    default=None,
    help="SGLang: one uniform token pool for sliding-window models (no full/SWA split)",
)
@click.option(
    "--prompt-logprobs",
    is_flag=True,
    default=None,
    help="vLLM: requests ask for prompt log-probs (lm-eval loglikelihood tasks); the sampler's "
    "[prompt tokens, vocab] fp32 tensors are outside the profiled budget",
)
@click.option(
    "--llm-class",
    is_flag=True,
    default=None,
    help="vLLM: the run uses the offline vllm.LLM class (a script, lm-eval --model vllm), "
    "not vllm serve: V1's larger max_num_batched_tokens default for that usage context",
)
@click.option(
    "--pooling",
    is_flag=True,
    default=None,
    help="vLLM: an embedding/pooling model (LLM.embed, --runner pooling): no sampler in the "
    "profile run, never Model Runner V2's default",
)
@lora_options
@click.option("--overhead", type=SIZE, help="Runtime overhead per GPU (overrides the default)")
@click.option(
    "--runtime-version",
    help="Runtime release or date the run uses (0.6.3, b4500, 2024-06); default: the newest",
)
@click.option(
    "--display/--headless",
    "display",
    default=None,
    help="A display is attached to the GPU (default: unknown; counted in the band)",
)
@click.option(
    "--os",
    "os_name",
    type=click.Choice(OS_CHOICES, case_sensitive=False),
    help="Operating system (windows: WDDM reserves GPU memory, and with --ram GPU allocations "
    "count against RAM + page file)",
)
@click.option("--tensor-split", "-ts", help="llama.cpp: fraction of layers per GPU, e.g. 3,1")
@click.option(
    "--split-mode",
    "-sm",
    type=click.Choice(["layer", "row", "none"]),
    help="llama.cpp multi-GPU split mode",
)
@click.option("--mmap/--no-mmap", default=None, help="llama.cpp: memory-map the model file")
@click.option(
    "--llama-server/--no-llama-server",
    "llama_server",
    default=None,
    help="llama.cpp: the run is llama-server or llama-cli (default), which since PR #23861 "
    "(June 2026) reserve output rows for their -np sequences only; --no-llama-server: "
    "llama-bench, llama-completion or the C API (llama-cpp-python), one row per -ub token",
)
@click.option(
    "--backend",
    type=click.Choice(BACKEND_CHOICES, case_sensitive=False),
    help="llama.cpp: the ggml backend it was built with (default: the GPU vendor's, sycl on "
    "Intel; vulkan runs on NVIDIA, AMD and Intel GPUs and has a per-buffer allocation limit)",
)
@click.option(
    "--vulkan-driver",
    type=click.Choice(["radv", "amdvlk", "amd-proprietary"], case_sensitive=False),
    help="llama.cpp --backend vulkan: the driver ggml_vulkan's device line names (radv; "
    "amdvlk = 'AMD open-source driver', amd-proprietary: both cap one buffer at 2 GiB)",
)
@transformers_options
@click.option(
    "--override-tensor",
    "-ot",
    multiple=True,
    help="llama.cpp PATTERN=BUFFER, e.g. exps=CPU (expert tensors on the CPU)",
)
@click.option(
    *PP_FLAGS, "pp", type=int, help="Pipeline-parallel size (vLLM/SGLang; GPUs = tp x pp)"
)
@unmodelled_options
@click.option("--mem-fraction-static", type=float, help="SGLang fraction of each GPU, (0, 1]")
@click.option(
    "--cpu-offload-gb", type=float, help="vLLM weights offloaded per GPU, in GiB (as vLLM)"
)
@click.option("--block-size", type=int, help="vLLM KV block size in tokens (1..256)")
@click.option(
    "--draft-model",
    "--model-draft",
    "-md",
    "draft_model",
    help="llama.cpp speculative decoding: the draft model (catalog name or .gguf), as -md",
)
@click.option("--draft-quant", help="GGUF type of the draft model when it is a catalog name")
@click.option(
    "--draft-ngl",
    "--gpu-layers-draft",
    "-ngld",
    "draft_ngl",
    type=int,
    help="Draft layers on the GPU (-ngld; default: llama.cpp's: 0 before PR #15434, Aug 2025)",
)
@click.option(
    "--draft-ctx",
    "--ctx-size-draft",
    "-cd",
    "draft_ctx",
    type=COUNT,
    help="Draft context per slot (-cd; default: the main context per slot)",
)
@click.option("--cache-type-k-draft", "-ctkd", "draft_cache_type_k", help="Draft KV type for K")
@click.option("--cache-type-v-draft", "-ctvd", "draft_cache_type_v", help="Draft KV type for V")
@click.option(
    "--device-draft",
    "-devd",
    "draft_device",
    help="GPUs of the draft as 0-based indices of --gpu, e.g. 1 or 0,1 (-devd; default: all)",
)
@speculative_options
@click.option(
    "--device",
    "-dev",
    "device",
    help="llama.cpp --device: the backend index of each --gpu in order, e.g. CUDA2,CUDA1 or 2,1 "
    "(with -sm row, -ts spreads rows by that index; default: 0,1,...)",
)
@click.option("--offline", is_flag=True, help="Never touch the network")
@click.option("--explain", is_flag=True, help="Print each component's formula and inputs")
@click.option(
    "--emit",
    is_flag=False,
    flag_value="same",
    default=None,
    metavar="[RUNTIME]",
    help="Also print the command that runs this configuration (llama.cpp, ollama, vllm, ...); "
    "with --train, after the estimate: deepspeed | fsdp (the config) | torchrun | accelerate",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document")
@training_options
def estimate_command(model: str | None, training: TrainOptions, **options: Any) -> int:
    """Estimate memory per device for MODEL (catalog name, path, .gguf or repo id).

    Exit code 0 when it fits (or capacity is unknown), 4 when it is tight (it fits, but
    within the band real runs sit from oomkit's numbers), 3 when it does not fit.
    """
    ctx = click.get_current_context()
    from oomkit.cli.option_scope import reject_inference_options
    from oomkit.cli.runtime_flags import refuse_unmodelled, resolve_model

    model = resolve_model(model, options.pop("model_flag"))
    refuse_unmodelled(ctx, options)
    from oomkit.estimate.registry import normalize_runtime

    rt = normalize_runtime(options["runtime"]) if training.method is None else ""
    reject_inference_options(ctx, training, inference_ok=(ATTN_PARAM,) * (rt == "transformers"))
    emit = options["emit"]
    if training.method is not None and emit is not None:
        if emit not in EMIT_CHOICES:
            raise click.UsageError(
                f"--emit with --train takes one of {', '.join(EMIT_CHOICES)}, got '{emit}'"
            )
        training = dataclasses.replace(training, emit=emit)
    if training.method is not None:
        from oomkit.cli.pasted_flags import last_ignored

        if last_ignored():  # a server's flags (pasted_flags): no training run reads them
            raise click.UsageError(
                f"{last_ignored()[0]} is a server flag; it cannot be used with --train"
            )
        from oomkit.cli.train_run import run_training

        return run_training(
            model,
            training,
            **{k: options[k] for k in TRAINING_PASSED},
        )
    return run_estimate(model, **options, attn_implementation=inference_attn(ctx, rt))
