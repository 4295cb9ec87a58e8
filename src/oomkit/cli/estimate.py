"""``oomkit estimate MODEL``: memory per device for one configuration."""

from __future__ import annotations

import click

from oomkit.cli.output import EXIT_NEGATIVE, EXIT_OK, print_json
from oomkit.cli.params import COUNT, SIZE, parse_gpu_list
from oomkit.cli.render import render_estimate
from oomkit.errors import InvalidSettingError
from oomkit.spec.hardware import Hardware
from oomkit.spec.settings import InferenceSettings

__all__ = ["estimate_command"]


@click.command("estimate")
@click.argument("model")
@click.option(
    "--runtime",
    "-r",
    default="llama.cpp",
    show_default=True,
    help="llama.cpp | ollama | vllm | sglang | transformers",
)
@click.option(
    "--quant", "-q", help="GGUF type (Q4_K_M, Q8_0, IQ4_XS) or bf16/fp8/int8/nf4/awq/gptq"
)
@click.option("--ctx", "-c", type=COUNT, help="Context length (n_ctx / max_model_len), e.g. 32k")
@click.option("--parallel", "--batch", "-np", "parallel", type=int, help="Parallel sequences")
@click.option("--batch-size", "-b", type=int, help="llama.cpp logical batch (-b)")
@click.option("--ubatch", "-ub", type=int, help="llama.cpp physical batch (-ub)")
@click.option("--kv-dtype", help="KV cache type for K and V (f16, q8_0, q4_0, fp8, ...)")
@click.option("--cache-type-k", "-ctk", help="KV cache type for K")
@click.option("--cache-type-v", "-ctv", help="KV cache type for V")
@click.option("--kv-unified/--no-kv-unified", default=None, help="llama.cpp unified KV buffer")
@click.option("--swa-full/--no-swa-full", default=None, help="llama.cpp full-size SWA cache")
@click.option("--flash-attn/--no-flash-attn", "-fa", default=None, help="Flash attention")
@click.option("--n-gpu-layers", "-ngl", type=int, help="Layers on the GPU (default: all; -1 = all)")
@click.option("--n-cpu-moe", type=int, help="Keep the experts of the first N layers on the CPU")
@click.option("--gpu", "-g", "gpu", help="GPU(s) from the catalog: rtx-4090, 2xA100-80GB, a,b")
@click.option(
    "--vram",
    type=SIZE,
    help="Memory per GPU with a unit: 24GiB = 24x2^30, 24GB = 24x10^9, 24G = 24GiB "
    "(binary, as llama.cpp/Ollama)",
)
@click.option("--ram", type=SIZE, help="Host RAM with a unit (as --vram: GiB/G binary, GB decimal)")
@click.option("--tp", type=int, help="Tensor-parallel size (vLLM/SGLang)")
@click.option("--gpu-memory-utilization", type=float, help="vLLM fraction of each GPU")
@click.option("--max-num-seqs", type=int, help="vLLM/SGLang max concurrent sequences")
@click.option("--max-num-batched-tokens", type=int, help="vLLM tokens per forward step")
@click.option("--enforce-eager/--no-enforce-eager", default=None, help="vLLM: no CUDA graphs")
@click.option("--overhead", type=SIZE, help="Runtime overhead per GPU (overrides the default)")
@click.option("--tensor-split", "-ts", help="llama.cpp: fraction of layers per GPU, e.g. 3,1")
@click.option(
    "--split-mode",
    "-sm",
    type=click.Choice(["layer", "row", "none"]),
    help="llama.cpp multi-GPU split mode",
)
@click.option("--mmap/--no-mmap", default=None, help="llama.cpp: memory-map the model file")
@click.option(
    "--override-tensor",
    "-ot",
    multiple=True,
    help="llama.cpp PATTERN=BUFFER, e.g. exps=CPU (expert tensors on the CPU)",
)
@click.option("--pp", type=int, help="Pipeline-parallel size (vLLM/SGLang; GPUs = tp x pp)")
@click.option("--mem-fraction-static", type=float, help="SGLang fraction of each GPU, (0, 1]")
@click.option(
    "--cpu-offload-gb", type=float, help="vLLM weights offloaded per GPU, in GiB (as vLLM)"
)
@click.option("--block-size", type=int, help="vLLM KV block size in tokens (1..256)")
@click.option("--offline", is_flag=True, help="Never touch the network")
@click.option("--explain", is_flag=True, help="Print each component's formula and inputs")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document")
def estimate_command(
    model: str,
    runtime: str,
    quant: str | None,
    ctx: int | None,
    parallel: int | None,
    batch_size: int | None,
    ubatch: int | None,
    kv_dtype: str | None,
    cache_type_k: str | None,
    cache_type_v: str | None,
    kv_unified: bool | None,
    swa_full: bool | None,
    flash_attn: bool | None,
    n_gpu_layers: int | None,
    n_cpu_moe: int | None,
    gpu: str | None,
    vram: int | None,
    ram: int | None,
    tp: int | None,
    gpu_memory_utilization: float | None,
    max_num_seqs: int | None,
    max_num_batched_tokens: int | None,
    enforce_eager: bool | None,
    overhead: int | None,
    tensor_split: str | None,
    split_mode: str | None,
    mmap: bool | None,
    override_tensor: tuple[str, ...],
    pp: int | None,
    mem_fraction_static: float | None,
    cpu_offload_gb: float | None,
    block_size: int | None,
    offline: bool,
    explain: bool,
    as_json: bool,
) -> int:
    """Estimate memory per device for MODEL (catalog name, path, .gguf or repo id).

    Exit code 0 when it fits (or capacity is unknown), 3 when it does not fit.
    """
    from oomkit.api import estimate
    from oomkit.cli.estimate_args import (
        check_count_options,
        parse_cpu_offload_gb,
        parse_tensor_split,
        warn_ignored,
    )
    from oomkit.estimate.registry import normalize_runtime
    from oomkit.hardware.targets import hardware_for

    check_count_options(
        ctx=ctx,
        parallel=parallel,
        ubatch=ubatch,
        batch_size=batch_size,
        tp=tp,
        pp=pp,
        n_gpu_layers=n_gpu_layers,
        max_num_seqs=max_num_seqs,
        max_num_batched_tokens=max_num_batched_tokens,
        n_cpu_moe=n_cpu_moe,
        block_size=block_size,
    )
    if gpu_memory_utilization is not None and not 0 < gpu_memory_utilization <= 1:
        raise InvalidSettingError(
            f"--gpu-memory-utilization must be in (0, 1], got {gpu_memory_utilization}",
            setting="--gpu-memory-utilization",
        )
    canonical = normalize_runtime(runtime)
    cpu_only = gpu is not None and gpu.strip().lower() in ("cpu", "none")
    if cpu_only and canonical == "llama.cpp" and n_gpu_layers is None:
        n_gpu_layers = 0
    settings = InferenceSettings(
        runtime=runtime,
        quant=quant,
        ctx=ctx,
        parallel=parallel,
        batch_size=batch_size,
        ubatch=ubatch,
        cache_type_k=cache_type_k or kv_dtype,
        cache_type_v=cache_type_v or kv_dtype,
        kv_unified=kv_unified,
        swa_full=swa_full,
        flash_attn=flash_attn,
        n_gpu_layers=n_gpu_layers,
        n_cpu_moe=n_cpu_moe,
        tp=tp,
        gpu_memory_utilization=gpu_memory_utilization,
        max_num_seqs=max_num_seqs,
        max_num_batched_tokens=max_num_batched_tokens,
        enforce_eager=enforce_eager,
        overhead_bytes=overhead,
        tensor_split=parse_tensor_split(tensor_split),
        split_mode=split_mode,
        mmap=mmap,
        override_tensor=override_tensor or None,
        pp=pp,
        mem_fraction_static=mem_fraction_static,
        cpu_offload_bytes=parse_cpu_offload_gb(cpu_offload_gb),
        block_size=block_size,
    )
    warn_ignored(settings, canonical)
    gpus = parse_gpu_list(gpu) if gpu and not cpu_only else ()
    hardware = hardware_for(
        gpus, vram_bytes=vram, host_ram_bytes=ram, n_devices=(tp or 1) * (pp or 1)
    )
    if cpu_only:
        hardware = Hardware(devices=(), host_ram_bytes=ram)
    est = estimate(model, settings, hardware, offline=True if offline else None)
    if as_json:
        from oomkit.serialize import estimate_to_dict

        print_json(estimate_to_dict(est))
    else:
        click.echo(render_estimate(est, explain=explain))
    return EXIT_NEGATIVE if est.fits is False else EXIT_OK
