"""``oomkit estimate MODEL`` for inference: the command's work, without click.

``estimate.estimate_command`` (the click command) and ``estimate_fast`` (argv the common way,
parsed without importing click) both call :func:`run_estimate`, so the two paths cannot drift.
Text output goes through ``output.echo`` (click's ``echo``, imported when first used); ``--json``
writes with ``print_json`` alone.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from oomkit.cli.estimate_followups import estimate_max_ctx, ollama_load_retry, with_bench_note
from oomkit.cli.estimate_suggest import (
    emit_for_estimate,
    flag_names,
    render_suggestions,
    suggest,
    suggestion_dict,
)
from oomkit.cli.output import EXIT_NEGATIVE, EXIT_OK, EXIT_TIGHT, echo, print_json
from oomkit.cli.values import CTX_MAX
from oomkit.errors import InvalidSettingError
from oomkit.spec.settings import InferenceSettings

if TYPE_CHECKING:
    from oomkit.planner.core import Plan

__all__ = ["render_suggestions", "run_estimate"]


def run_estimate(
    model: str,
    *,
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
    runtime_version: str | None,
    display: bool | None,
    os_name: str | None,
    tensor_split: str | None,
    split_mode: str | None,
    mmap: bool | None,
    override_tensor: tuple[str, ...],
    pp: int | None,
    mem_fraction_static: float | None,
    cpu_offload_gb: float | None,
    block_size: int | None,
    device_map: str | None,
    offline: bool,
    draft_model: str | None = None,
    draft_quant: str | None = None,
    draft_ngl: int | None = None,
    draft_ctx: int | None = None,
    draft_cache_type_k: str | None = None,
    draft_cache_type_v: str | None = None,
    draft_device: str | None = None,
    backend: str | None = None,
    vulkan_driver: str | None = None,
    device: str | None = None,
    prompt_logprobs: bool | None = None,
    llm_class: bool | None = None,
    pooling: bool | None = None,
    disable_hybrid_swa_memory: bool | None = None,
    enable_lora: bool | None = None,
    max_loras: int | None = None,
    max_lora_rank: int | None = None,
    max_cpu_loras: int | None = None,
    fully_sharded_loras: bool | None = None,
    lora_dtype: str | None = None,
    cudagraph_specialize_lora: bool | None = None,
    max_memory: str | None = None,
    max_new_tokens: int | None = None,
    attn_implementation: str | None = None,
    llama_server: bool | None = None,
    speculative_config: str | None = None,
    speculative_model: str | None = None,
    num_speculative_tokens: int | None = None,
    speculative_algorithm: str | None = None,
    speculative_draft_model_path: str | None = None,
    speculative_num_steps: int | None = None,
    speculative_eagle_topk: int | None = None,
    speculative_num_draft_tokens: int | None = None,
    spec_type: str | None = None,
    spec_draft_n_max: int | None = None,
    dtype: str | None = None,
    explain: bool,
    emit: str | None,
    as_json: bool,
) -> int:
    """Estimate memory per device for ``model`` and print it; returns the exit code."""
    from oomkit.api import estimate, load_model
    from oomkit.cli.estimate_args import (
        check_count_options,
        check_hf_runtime_quant,
        parse_cpu_offload_gb,
        parse_device_ordinals,
        parse_draft_devices,
        parse_tensor_split,
        warn_ignored,
    )
    from oomkit.cli.gpu_choice import choose_hardware, with_backend, with_vulkan_driver
    from oomkit.estimate.registry import normalize_runtime
    from oomkit.spec.max_memory import parse_max_memory

    want_max = ctx == CTX_MAX
    if want_max:
        ctx = None
    from oomkit.cli.plan_pasted import pasted_plan_inputs

    # what the pasted line's -c 0, --dtype and memory-neutral flags mean (plan's reading)
    pasted = pasted_plan_inputs(
        runtime,
        model,
        ctx=ctx,
        dtype=dtype,
        quant=quant,
        runtime_version=runtime_version,
        llama_server=llama_server,
        offline=offline,
        normalize=True,
    )
    ctx, quant, notes, ignored = pasted.ctx, pasted.quant, pasted.notes, pasted.ignored
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
        draft_n_gpu_layers=draft_ngl,
        draft_ctx=None if draft_ctx == CTX_MAX else draft_ctx,
        max_new_tokens=max_new_tokens,
    )
    if draft_ctx == 0:  # llama.cpp's -cd 0: "0 = loaded from model" (the default rule)
        draft_ctx = None
    drafts = {
        "--draft-quant": draft_quant,
        "--draft-ngl": draft_ngl,
        "--draft-ctx": draft_ctx,
        "--cache-type-k-draft": draft_cache_type_k,
        "--cache-type-v-draft": draft_cache_type_v,
        "--device-draft": draft_device,
    }
    orphan = next((flag for flag, value in drafts.items() if value is not None), None)
    if draft_model is None and orphan is not None:
        raise InvalidSettingError(
            f"{orphan} needs --draft-model (llama.cpp -md): name the draft model or drop it",
            setting=orphan,
        )
    if gpu_memory_utilization is not None and not 0 < gpu_memory_utilization <= 1:
        raise InvalidSettingError(
            f"--gpu-memory-utilization must be in (0, 1], got {gpu_memory_utilization}",
            setting="--gpu-memory-utilization",
        )
    canonical = normalize_runtime(runtime)
    check_hf_runtime_quant(canonical, quant)
    if emit is not None and emit != "same":
        if emit.strip().lower() in ("deepspeed", "fsdp", "torchrun", "accelerate"):
            raise InvalidSettingError(
                f"--emit {emit} is a training launcher: add --train full|lora|qlora, or emit a "
                "runtime (llama.cpp, ollama, vllm, sglang, transformers)",
                setting="--emit",
                value=emit,
            )
        normalize_runtime(emit)  # a misspelt --emit target is refused before any estimate
    cpu_only = gpu is not None and gpu.strip().lower() in ("cpu", "none")
    if cpu_only and canonical == "llama.cpp" and n_gpu_layers is None:
        n_gpu_layers = 0
    from oomkit.cli.speculative_options import speculative_settings

    speculative = speculative_settings(
        canonical,
        {
            "speculative_config": speculative_config,
            "speculative_model": speculative_model,
            "num_speculative_tokens": num_speculative_tokens,
            "speculative_algorithm": speculative_algorithm,
            "speculative_draft_model_path": speculative_draft_model_path,
            "speculative_num_steps": speculative_num_steps,
            "speculative_eagle_topk": speculative_eagle_topk,
            "speculative_num_draft_tokens": speculative_num_draft_tokens,
            "spec_type": spec_type,
            "spec_draft_n_max": spec_draft_n_max,
            "tp": tp,
        },
    )
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
        disable_hybrid_swa_memory=disable_hybrid_swa_memory,
        prompt_logprobs=prompt_logprobs,
        llm_class=llm_class,
        pooling=pooling,
        enable_lora=enable_lora,
        max_loras=max_loras,
        max_lora_rank=max_lora_rank,
        max_cpu_loras=max_cpu_loras,
        fully_sharded_loras=fully_sharded_loras,
        lora_dtype=lora_dtype,
        cudagraph_specialize_lora=cudagraph_specialize_lora,
        overhead_bytes=overhead,
        runtime_version=runtime_version,
        tensor_split=parse_tensor_split(tensor_split),
        split_mode=split_mode,
        mmap=mmap,
        override_tensor=override_tensor or None,
        pp=pp,
        mem_fraction_static=mem_fraction_static,
        cpu_offload_bytes=parse_cpu_offload_gb(cpu_offload_gb),
        block_size=block_size,
        device_map=device_map,
        max_memory_bytes=parse_max_memory(max_memory),
        max_new_tokens=max_new_tokens,
        attn_implementation=attn_implementation,
        draft_model=draft_model,
        draft_quant=draft_quant,
        draft_n_gpu_layers=draft_ngl,
        draft_ctx=draft_ctx,
        draft_cache_type_k=draft_cache_type_k,
        draft_cache_type_v=draft_cache_type_v,
        draft_devices=parse_draft_devices(draft_device),
        device_ordinals=parse_device_ordinals(device),
        llama_server=llama_server,
        **speculative,
    )
    warn_ignored(settings, canonical)
    from oomkit.estimate.llamacpp_outputs import server_default

    settings = server_default(settings)  # llama.cpp: llama-server unless --no-llama-server
    if (os_name or "").lower() == "windows" and canonical == "vllm":
        # vLLM's installation docs: "vLLM does not support Windows natively" (WSL 2 runs it);
        # the Windows commit-limit check (--ram) is llama.cpp/Ollama/transformers'
        from oomkit.cli.output import print_warning

        print_warning("vLLM does not run on native Windows (its docs: use WSL 2): pass --os wsl")
    choice = choose_hardware(
        gpu, vram_bytes=vram, host_ram_bytes=ram, n_devices=(tp or 1) * (pp or 1), os=os_name
    )
    hardware = with_backend(choice.hardware, backend, canonical, named=gpu is not None)
    hardware = with_vulkan_driver(hardware, vulkan_driver)
    from oomkit.estimate.verdict import Platform, device_segment, device_unified_bytes, verdict

    platform = Platform(
        os=os_name,
        display=display,
        segments=tuple(device_segment(d) for d in hardware.devices),
        unified_bytes=tuple(device_unified_bytes(d) for d in hardware.devices),
    )
    if want_max:
        est = estimate_max_ctx(model, settings, hardware, platform, offline)
    else:
        try:
            est = estimate(model, settings, hardware, offline=True if offline else None)
        except InvalidSettingError as e:  # a context --parallel made, not --ctx
            from oomkit.cli.estimate_args import context_product_error

            raise context_product_error(e, ctx, parallel) from e
    est = with_bench_note(model, settings, hardware, est, offline)
    if notes:  # what the pasted line's -c 0, --dtype and memory-neutral flags meant
        est = dataclasses.replace(est, assumptions=(*notes, *est.assumptions))
    v = verdict(est, platform)
    if canonical == "transformers" and v.level == "tight" and v.safe_change is None:
        # the display or the CUDA context decide it: no prompt frees them (planner's change)
        from oomkit.planner.transformers_moves import transformers_safe_change

        spec = load_model(model, offline=True if offline else None)
        change = transformers_safe_change(spec, settings, hardware, platform, est)
        v = dataclasses.replace(v, safe_change=change) if change else v
    retry = None
    if canonical == "ollama" and v.level == "does_not_fit" and not est.blockers and not want_max:
        retry = ollama_load_retry(model, settings, hardware, platform, est, offline)
    suggestions: tuple[Plan, ...] = ()
    if est.fits is False:
        suggestions = suggest(model, settings, hardware, est, offline)
    if as_json:
        from oomkit.serialize import estimate_to_dict

        doc = estimate_to_dict(est)
        # "fits" keeps its meaning (the totals fit: true for tight too); "verdict" adds the band
        out: dict[str, object] = {}
        for key, value in doc.items():
            out[key] = value
            if key == "fits":
                out["verdict"] = v.level
                out["verdict_details"] = v.to_dict()
        if retry is not None:  # additive: Ollama 0.30+'s one retry a tier lower
            out["ollama_load_retry"] = retry
        if est.fits is False:
            out["suggestions"] = [suggestion_dict(est, p) for p in suggestions]
        if emit is not None:
            out["command"], prepare = emit_for_estimate(emit, model, est, settings, offline)
            out["prepare"] = list(prepare)
        out["hardware"] = choice.to_dict()
        if ignored:
            out["ignored_flags"] = list(ignored)
        print_json(out)
    else:
        from oomkit.cli.render import render_estimate

        for line in choice.describe():
            echo(line, err=True)
        after = (str(retry["text"]),) if retry is not None else ()
        echo(render_estimate(flag_names(est), explain=explain, verdict=v, after_verdict=after))
        if est.fits is False:
            echo(render_suggestions(est, suggestions))
        if emit is not None:
            command, prepare = emit_for_estimate(emit, model, est, settings, offline)
            if prepare:
                echo("first (llama.cpp's tools make the .gguf the command runs):")
                echo("\n".join(prepare))
            echo("run:")
            echo(command)
    if v.level == "does_not_fit" or (est.fits is False and v.level != "tight"):
        return EXIT_NEGATIVE  # (tight over a limit: Apple's working set, see verdict.py)
    return EXIT_TIGHT if v.level == "tight" else EXIT_OK
