"""``oomkit estimate MODEL`` for inference: the command's work, without click.

``estimate.estimate_command`` (the click command) and ``estimate_fast`` (argv the common way,
parsed without importing click) both call :func:`run_estimate`, so the two paths cannot drift.
Text output goes through ``output.echo`` (click's ``echo``, imported when first used); ``--json``
writes with ``print_json`` alone.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from oomkit.cli.output import EXIT_NEGATIVE, EXIT_OK, EXIT_TIGHT, echo, print_json
from oomkit.cli.values import CTX_MAX
from oomkit.errors import InvalidSettingError
from oomkit.spec.settings import InferenceSettings

if TYPE_CHECKING:
    from oomkit.estimate.breakdown import Estimate
    from oomkit.estimate.verdict import Platform
    from oomkit.planner.core import Plan
    from oomkit.spec.hardware import Hardware

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
    from oomkit.cli.pasted_flags import dtype_quant, ignored_note, last_ignored

    notes: list[str] = []
    if ctx == 0 and _zero_is_trained() and normalize_runtime(runtime) == "llama.cpp":
        from oomkit.cli.ctx_zero import llamacpp_ctx_zero

        ctx, zero_note = llamacpp_ctx_zero(
            model, runtime_version, llama_server=llama_server, offline=offline
        )
        notes.append(zero_note)
    if dtype is not None:
        quant, dtype_note = dtype_quant(normalize_runtime(runtime), dtype, quant)
        notes.extend([dtype_note] if dtype_note else [])
    ignored = last_ignored()
    notes.extend([ignored_note(ignored)] if ignored else [])
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
        est = _estimate_max_ctx(model, settings, hardware, platform, offline)
    else:
        try:
            est = estimate(model, settings, hardware, offline=True if offline else None)
        except InvalidSettingError as e:  # a context --parallel made, not --ctx
            from oomkit.cli.estimate_args import context_product_error

            raise context_product_error(e, ctx, parallel) from e
    est = _with_bench_note(model, settings, hardware, est, offline)
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
        retry = _ollama_load_retry(model, settings, hardware, platform, est, offline)
    suggestions: tuple[Plan, ...] = ()
    if est.fits is False:
        suggestions = _suggest(model, settings, hardware, est, offline)
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
            out["suggestions"] = [_suggestion_dict(est, p) for p in suggestions]
        if emit is not None:
            out["command"], prepare = _emit(emit, model, est, settings, offline)
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
        echo(render_estimate(_flag_names(est), explain=explain, verdict=v, after_verdict=after))
        if est.fits is False:
            echo(render_suggestions(est, suggestions))
        if emit is not None:
            command, prepare = _emit(emit, model, est, settings, offline)
            if prepare:
                echo("first (llama.cpp's tools make the .gguf the command runs):")
                echo("\n".join(prepare))
            echo("run:")
            echo(command)
    if v.level == "does_not_fit" or (est.fits is False and v.level != "tight"):
        return EXIT_NEGATIVE  # (tight over a limit: Apple's working set, see verdict.py)
    return EXIT_TIGHT if v.level == "tight" else EXIT_OK


def _ollama_load_retry(
    model: str,
    settings: InferenceSettings,
    hardware: Hardware,
    platform: Platform,
    est: Estimate,
    offline: bool,
) -> dict[str, object] | None:
    """Ollama 0.30+ retries an out-of-memory load once a context tier lower when num_ctx was
    its own (:mod:`oomkit.estimate.ollama_load_retry`): the verdict of that second load."""
    from oomkit.api import estimate
    from oomkit.estimate.ollama_load_retry import load_retry_applies, retry_line, retry_num_ctx
    from oomkit.estimate.verdict import verdict

    if not load_retry_applies(settings.runtime_version, settings.ctx is not None):
        return None
    tiers = retry_num_ctx(est)
    if tiers is None:
        return None
    first, lower = tiers
    second = estimate(
        model,
        dataclasses.replace(settings, ctx=lower),
        hardware,
        offline=True if offline else None,
    )
    level = verdict(second, platform).level
    return {
        "first_num_ctx": first,
        "num_ctx": lower,
        "verdict": level,
        "text": retry_line(first, lower, level),
    }


def _with_bench_note(
    model: str, settings: InferenceSettings, hardware: Hardware, est: Estimate, offline: bool
) -> Estimate:
    """``est`` with what llama-bench / the C API reserve more, when it is llama-server's
    (:func:`oomkit.estimate.llamacpp_outputs.bench_note`): the same configuration estimated
    with ``n_outputs_max = n_batch``."""
    from oomkit.estimate.llamacpp_outputs import NOTE_PREFIX, bench_note

    if not any(a.startswith(NOTE_PREFIX) for a in est.assumptions):
        return est
    from oomkit.api import estimate

    def resolved(name: str, given: int | None) -> int | None:
        # what the server's estimate resolved (its --fit context and layers, its -np auto
        # slots): the bench estimate differs from it in the output rows only
        value = est.settings.get(name)
        return int(str(value)) if given is None and isinstance(value, int) else given

    bench_settings = dataclasses.replace(
        settings,
        llama_server=False,
        ctx=resolved("ctx", settings.ctx),
        n_gpu_layers=resolved("n_gpu_layers", settings.n_gpu_layers),
        n_cpu_moe=resolved("n_cpu_moe", settings.n_cpu_moe),
        parallel=resolved("parallel", settings.parallel),
        kv_unified=(
            bool(est.settings.get("kv_unified"))
            if settings.kv_unified is None
            else settings.kv_unified
        ),
    )
    bench = estimate(model, bench_settings, hardware, offline=True if offline else None)
    note = bench_note(est, bench)
    return est if note is None else dataclasses.replace(est, assumptions=(*est.assumptions, note))


def _flag_names(est: Estimate) -> Estimate:
    """``est`` with the library's "ignored by RUNTIME: field, ..." note in the CLI's flags
    (``prompt_logprobs`` -> ``--prompt-logprobs``), as the stderr warning names them."""
    from oomkit.cli.estimate_args import FLAG_NAMES

    prefix = f"ignored by {est.runtime}: "

    def flags(fields: str) -> str:
        return ", ".join(dict.fromkeys(FLAG_NAMES.get(f, f) for f in fields.split(", ")))

    notes = tuple(
        prefix + flags(a[len(prefix) :]) if a.startswith(prefix) else a for a in est.assumptions
    )
    return est if notes == est.assumptions else dataclasses.replace(est, assumptions=notes)


def _estimate_max_ctx(
    model: str,
    settings: InferenceSettings,
    hardware: Hardware,
    platform: Platform,
    offline: bool,
) -> Estimate:
    """``--ctx max``: the estimate at the largest context that fits (exit 3 if none does)."""

    from oomkit.api import estimate, load_model
    from oomkit.planner.core import max_context

    spec = load_model(model, offline=True if offline else None)
    found = max_context(spec, settings, hardware, platform=platform)
    from oomkit.estimate.verdict import verdict

    layers = ""  # which layers the answer assumes (llama.cpp): every one, or the given -ngl
    hint = ""
    if isinstance(settings.n_gpu_layers, int):
        layers = f" with -ngl {settings.n_gpu_layers} as given"
    if settings.n_gpu_layers is None:
        # the search placed the layers as a plan does (llama.cpp: every layer, --fit off); the
        # answer keeps that placement, or --fit would move layers to the CPU at 256 tokens and
        # call "fits" what the search found does not
        from oomkit.estimate.registry import get_estimator, normalize_runtime

        probe = found[1] if found is not None else None
        if probe is None:
            planned = get_estimator(normalize_runtime(settings.runtime), planned=True)
            probe = planned(spec, dataclasses.replace(settings, ctx=256), hardware)
        ngl = probe.settings.get("n_gpu_layers")
        if isinstance(ngl, int):
            settings = dataclasses.replace(settings, n_gpu_layers=ngl)
            layers = f" with {ngl} layers on the GPU (every one, as a plan places them"
            hint = "; fewer layers leave room for more context: pass -ngl N or see `oomkit plan`)"

    if found is None:
        est = estimate(spec, dataclasses.replace(settings, ctx=256), hardware)
        clear = " clear of the variance band" if verdict(est, platform).level == "tight" else ""
        return dataclasses.replace(
            est,
            assumptions=(
                *est.assumptions,
                f"--ctx max: not even 256 tokens fit{clear}{layers}{hint}",
            ),
        )
    n, est = found
    # the search ran the estimator alone; the answer goes through the API as --ctx N does, so
    # it keeps what the API adds (the "modelled:" generation, check_run's and the loader's notes)
    est = estimate(spec, dataclasses.replace(settings, ctx=n), hardware)
    if verdict(est, platform).level == "tight":  # a margin no context changes (max_context)
        note = f"--ctx max: {n} is the largest context that fits (x256"
        tail = "; what keeps it tight is the same at any context"
    else:
        note = f"--ctx max: {n} is the largest context that fits clear of the variance band (x256"
        tail = ""
    from oomkit.planner.seq_cap import capped_words, model_max_seq

    longest = model_max_seq(spec)
    if hint and longest is not None and n >= longest.tokens:
        hint = ")"  # the model's whole context: nothing to gain from fewer layers
    if longest is not None and n >= longest.tokens:
        # the cap, not memory, decided: say so, and how far memory would go
        end = 8 * longest.tokens
        past = max_context(spec, settings, hardware, platform=platform, top=end)
        more = past[0] if past is not None and past[0] > longest.tokens else None
        words = capped_words(longest, more, searched_to=end - end % 256)
        note = note.replace(f"{n} is", f"{words} is", 1)
    note += (", up to the model's maximum)" if longest is not None else ")") + tail
    note += layers + hint
    return dataclasses.replace(est, assumptions=(note, *est.assumptions))


def _emit(
    runtime: str, model: str, est: Estimate, settings: InferenceSettings, offline: bool
) -> tuple[str, tuple[str, ...]]:
    """The command for the estimated configuration: the settings as estimated (defaults
    resolved), in ``runtime``'s flags (``same``: the estimated runtime), and the lines to run
    before it (converting a checkpoint directory for llama.cpp / Ollama)."""
    from oomkit.api import load_model
    from oomkit.estimate.registry import normalize_runtime
    from oomkit.planner.commands import emit_command, prepare_lines
    from oomkit.planner.lmstudio import command_target

    target = est.runtime if runtime == "same" else normalize_runtime(runtime)
    # -r lmstudio / --emit lmstudio: llama.cpp's memory, LM Studio's `lms load` line
    program = command_target(settings.runtime if runtime == "same" else runtime, target)
    s = est.settings
    resolved = dataclasses.replace(
        settings,
        runtime=target,
        quant=str(s["quant"]) if s.get("quant") else settings.quant,
        ctx=int(str(s["ctx"])) if s.get("ctx") else settings.ctx,
    )
    util = s.get("gpu_memory_utilization")
    if isinstance(util, float) and settings.gpu_memory_utilization is None:
        resolved = dataclasses.replace(resolved, gpu_memory_utilization=util)
    fa = s.get("flash_attn")
    opt_in = ("koboldcpp", "llama-cpp-python")  # flash attention off unless asked
    if program in opt_in and isinstance(fa, bool) and settings.flash_attn is None:
        resolved = dataclasses.replace(resolved, flash_attn=fa)  # its opt-in default, as estimated
    ngl = s.get("n_gpu_layers")
    if program == "llama-cpp-python" and isinstance(ngl, int) and settings.n_gpu_layers is None:
        resolved = dataclasses.replace(resolved, n_gpu_layers=ngl)  # Llama(n_gpu_layers=0)
    spec = load_model(model, offline=True if offline else None)
    if target != est.runtime:
        # only what both runtimes share carries over (context, parallel sequences); a GGUF
        # quant means nothing to vLLM and a vLLM format nothing to llama.cpp
        gguf = ("llama.cpp", "ollama")
        if (target in gguf) != (est.runtime in gguf):
            resolved = dataclasses.replace(resolved, quant=None, gpu_memory_utilization=None)
        from oomkit.cli.output import print_warning

        print_warning(
            f"--emit {target}: the command carries the context over from this {est.runtime} "
            f"estimate, not its memory; run `oomkit estimate -r {target}` for {target}'s numbers"
        )
    kind = est.devices[0].device.split(":")[0] if est.devices else "cuda"
    return (
        emit_command(program, resolved, spec, model, device_kind=kind),
        prepare_lines(target, resolved, spec, model),
    )


def _suggest(
    model: str, settings: InferenceSettings, hardware: Hardware, est: Estimate, offline: bool
) -> tuple[Plan, ...]:
    """The changes that make it fit, searched by ``plan``'s rule: a compiled pooling run (vLLM
    #49672 / PR #49749, estimate/vllm_compiled_pooling.py) is at best tight, so the search runs
    eager as ``plan --pooling`` does (cli/plan.py) and names ``--enforce-eager`` as a change."""
    from oomkit.estimate.vllm_compiled_pooling import DETAIL
    from oomkit.planner.core import suggest_changes

    eager = bool(est.runtime_details.get(DETAIL))
    if eager:
        settings = dataclasses.replace(settings, enforce_eager=True)
    plans = suggest_changes(model, settings, hardware, offline=True if offline else None)
    if not eager:
        return plans
    flag = "--enforce-eager (no torch.compile: its pooling profile is not modelled)"
    return tuple(dataclasses.replace(p, changes=(flag, *p.changes)) for p in plans)


def _peak(est: Estimate) -> int:
    return max((d.total_bytes for d in est.devices), default=0)


def _suggestion_dict(est: Estimate, p: Plan) -> dict[str, object]:
    return {
        "changes": list(p.changes),
        "settings": dict(p.estimate.settings),
        "saving_bytes": _peak(est) - _peak(p.estimate),
        "host_bytes": p.estimate.host.total_bytes,
        "command": p.command,
    }


def render_suggestions(est: Estimate, plans: tuple[Plan, ...]) -> str:
    """The changes that make it fit, best first, each with its saving and command."""
    from oomkit.units import format_bytes

    if not plans:
        return "Nothing the planner can change makes it fit: see `oomkit plan MODEL` for why."
    from oomkit.planner.training_host import host_overflows

    lines = ["To make it fit (each keeps 1 GiB free per GPU; best first):"]
    ram = host_overflows(est)  # the GPUs fit: say what each change leaves in RAM
    for i, p in enumerate(plans, 1):
        saving = _peak(est) - _peak(p.estimate)
        saves = f"  [saves ~{format_bytes(saving)} on the fullest GPU]" if saving > 0 else ""
        if ram:
            host, asked = p.estimate.host.total_bytes, est.host.total_bytes
            saves = f"  [host RAM {format_bytes(host)}, asked {format_bytes(asked)}]"
        lines.append(f"  {i}. {p.summary}{saves}")
        lines.extend(f"     {c}" for c in p.command.splitlines())
    return "\n".join(lines)


def _zero_is_trained() -> bool:
    from oomkit.cli.ctx_zero import means_trained_context

    return means_trained_context()
