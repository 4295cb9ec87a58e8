"""``oomkit plan MODEL``: the best configuration that fits, alternatives, and the command."""

from __future__ import annotations

import shlex
from typing import Any

import click

from oomkit.cli.args_command import ArgsCommand, typed_flag
from oomkit.cli.draft_options import draft_options
from oomkit.cli.gpu_choice import BACKEND_CHOICES
from oomkit.cli.lora_options import LORA_FLAGS, lora_options, lora_settings
from oomkit.cli.output import EXIT_NEGATIVE, EXIT_OK, print_json
from oomkit.cli.params import CONTEXT, COUNT, CTX_MAX, SIZE, hardware_from_options
from oomkit.cli.plan_flags import (
    check_llama_server,
    check_serving_options,
    kv_options,
    pinned_kv,
    plan_ngl,
    plan_ngl_option,
)
from oomkit.cli.plan_pinned import pinned_options
from oomkit.cli.runtime_flags import SEQS_FLAGS
from oomkit.cli.speculative_options import SPECULATIVE_PARAMS, speculative_options
from oomkit.cli.train_options import TrainOptions, training_options
from oomkit.cli.transformers_options import ATTN_PARAM, inference_attn, transformers_options
from oomkit.cli.values import CTX_FLAGS, OS_CHOICES, TP_FLAGS
from oomkit.errors import InvalidSettingError
from oomkit.estimate.registry import RUNTIMES_HELP
from oomkit.planner.request import DEFAULT_HEADROOM_BYTES, PREFERENCES

__all__ = ["plan_command"]


@click.command("plan", cls=ArgsCommand)  # keeps argv: errors name a flag as typed
@click.argument("model", required=False)
@click.option(
    "--gpu",
    "-g",
    "gpus",
    multiple=True,
    help="GPU(s), repeatable: rtx-4090, 2x3090, a100,h100; auto: this machine's (free memory)",
)
@click.option("--vram", type=SIZE, help="Memory per GPU (24GiB, or 24GB = 24e9 bytes)")
@click.option("--ram", type=SIZE, help="Host RAM (limits what can be offloaded)")
@click.option(
    "--runtime",
    "-r",
    default="llama.cpp",
    show_default=True,
    help=RUNTIMES_HELP + " | any (compare)",
)
@click.option(
    *CTX_FLAGS,  # --ctx-size, --max-model-len, --context-length too, as estimate's
    "ctx",
    type=CONTEXT,
    help="Context you want (e.g. 32k), or 'max': the largest each plan fits",
)
@click.option("--min-ctx", type=COUNT, help="Never propose a shorter context than this")
@click.option(
    "--parallel",
    "--batch",
    "-np",
    "parallel",
    type=int,
    help="Concurrent sequences / users (transformers: the generate() batch)",
)
@click.option("--quant", "-q", help="Weight quant to start from (default: the best that fits)")
@click.option(
    "--dtype",
    help="vLLM/SGLang --dtype (auto, half, float16, bfloat16, float, float32): the weights' "
    "dtype to start from, as --quant bf16/fp16/fp32",
)
@click.option("--min-quant", help="Never go below this quant (e.g. Q4_K_S)")
@click.option("--no-offload", is_flag=True, help="Keep every layer and expert on the GPU")
@click.option(
    "--headroom",
    type=SIZE,
    default=DEFAULT_HEADROOM_BYTES,
    show_default="1 GiB",
    help="Memory each GPU keeps free beyond the estimate",
)
@click.option(
    "--prefer",
    type=click.Choice(PREFERENCES),
    default="quality",
    show_default=True,
    help="What to give up last",
)
@click.option(
    "--runtime-version",
    help="Runtime release or date whose memory behaviour to model (e.g. 0.6.3, b4500, 2024-06)",
)
@click.option(
    "--backend",
    type=click.Choice(BACKEND_CHOICES, case_sensitive=False),
    help="llama.cpp: the ggml backend it was built with (default: the GPU vendor's)",
)
@click.option(
    *TP_FLAGS,  # --tensor-parallel-size, -tp, --tp-size too, as estimate's
    "tp",
    type=int,
    help="vLLM/SGLang tensor-parallel size (default: the most GPUs the attention heads divide)",
)
@click.option(
    "--gpu-memory-utilization",
    type=float,
    help=(
        "vLLM fraction of each GPU, in (0, 1] (default: vLLM's, lowered where the margin is "
        "thin, raised where the KV pool is short and the GPU has room outside it)"
    ),
)
@click.option(
    *SEQS_FLAGS,  # SGLang's --max-running-requests too
    "max_num_seqs",
    type=int,
    help="vLLM/SGLang max concurrent sequences (the plan lowers it only as a named change)",
)
@click.option(
    "--pooling",
    is_flag=True,
    default=None,
    help="vLLM: an embedding/pooling model (LLM.embed, --runner pooling), as estimate's",
)
@transformers_options
@lora_options
@click.option(
    "--llama-server/--no-llama-server",
    "llama_server",
    default=None,
    help="llama.cpp: size the plan for llama-server / llama-cli (default: the commands are "
    "llama-server's), or for llama-bench / the C API (--no-llama-server: one output row per "
    "-ub token, as llama.cpp PR #23861 left them)",
)
@click.option(
    "--display/--headless",
    "display",
    default=None,
    help="A display is attached to the GPU (default: unknown; counted in the band every plan "
    "must clear, as estimate's)",
)
@click.option(
    "--os",
    "os_name",
    type=click.Choice(OS_CHOICES, case_sensitive=False),
    help="Operating system (windows: WDDM reserves GPU memory), as estimate's --os",
)
@click.option(
    "--flash-attn/--no-flash-attn",
    "-fa",
    default=None,
    help="llama.cpp: the run's flash attention (-fa on|off is read too)",
)
@kv_options
@plan_ngl_option
@click.option("--offline", is_flag=True, help="Never touch the network")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document")
@draft_options
@speculative_options
@pinned_options
@training_options
def plan_command(
    model: str | None,
    gpus: tuple[str, ...],
    vram: int | None,
    ram: int | None,
    runtime: str,
    ctx: int | None,
    min_ctx: int | None,
    parallel: int | None,
    quant: str | None,
    dtype: str | None,
    min_quant: str | None,
    no_offload: bool,
    headroom: int,
    prefer: str,
    runtime_version: str | None,
    backend: str | None,
    tp: int | None,
    gpu_memory_utilization: float | None,
    max_num_seqs: int | None,
    pooling: bool | None,
    device_map: str | None,
    max_memory: str | None,
    max_new_tokens: int | None,
    llama_server: bool | None,
    display: bool | None,
    os_name: str | None,
    offline: bool,
    as_json: bool,
    training: TrainOptions,
    **drafts: Any,
) -> int:
    """Find the best configuration of MODEL that fits your GPU(s), and the command to run it.

    Tries, in order: everything on the GPU at your context, a quantized KV cache, a raised
    vLLM utilization or fewer concurrent sequences, MoE experts on the CPU, fewer layers on
    the GPU, then a shorter context (not below --min-ctx; before the offloads when you gave no
    --ctx), then a smaller quant. Exit 0 with a plan, 3 when nothing fits (with what would be
    needed).
    """
    from oomkit.planner.core import plan
    from oomkit.planner.request import PlanRequest

    ctx_ = click.get_current_context()
    from oomkit.cli.option_scope import reject_inference_options
    from oomkit.cli.runtime_flags import refuse_unmodelled, resolve_model

    model = resolve_model(model, drafts.pop("model_flag"))
    refuse_unmodelled(ctx_, drafts)
    from oomkit.estimate.registry import normalize_runtime

    rt = runtime.strip().lower()
    rt = rt if rt == "any" or training.method is not None else normalize_runtime(runtime)
    reject_inference_options(
        ctx_, training, inference_ok=(ATTN_PARAM,) * (rt in ("transformers", "any"))
    )
    if training.method is not None and drafts.get("draft_model") is not None:
        raise click.UsageError(
            "--draft-model is an inference option; it cannot be used with --train"
        )
    from oomkit.cli.plan_pinned import PINNED, pinned_settings

    pinned_given = [k for k in PINNED if drafts.get(k) is not None]
    if training.method is not None and pinned_given:
        flag = typed_flag(ctx_, pinned_given[0])
        raise click.UsageError(f"{flag} is an inference option; it cannot be used with --train")
    from oomkit.cli.estimate_args import check_count_options

    ctx_max = ctx == CTX_MAX
    ctx = None if ctx_max else ctx
    if training.method is not None:
        from oomkit.cli.pasted_flags import last_ignored

        if last_ignored() or dtype is not None:  # a server's flags: no training run reads them
            flag = last_ignored()[0] if last_ignored() else "--dtype"
            raise click.UsageError(f"{flag} is a server flag; it cannot be used with --train")
    else:  # a pasted server line: -c 0, --dtype, the memory-neutral flags (as estimate's)
        from oomkit.cli.plan_pasted import pasted_plan_inputs

        pasted = pasted_plan_inputs(
            rt,
            model,
            ctx=ctx,
            dtype=dtype,
            quant=quant,
            runtime_version=runtime_version,
            llama_server=llama_server,
            offline=offline,
        )
        ctx, quant = pasted.ctx, pasted.quant
    check_count_options(ctx=ctx, tp=tp, max_num_seqs=max_num_seqs)  # named as typed
    if training.method is not None:
        from oomkit.cli.plan_training import plan_training, size_arg

        os_name = os_name.lower() if os_name else None
        hardware = hardware_from_options(
            gpus, vram=vram, ram=ram, quiet=as_json, n_devices=tp, os=os_name
        )
        from oomkit.cli.train_options import check_gpu_count

        named = len([d for d in hardware.devices if d.backend != "cpu"])
        check_gpu_count(training.gpus, named, ", ".join(gpus))  # as estimate --train
        where = [
            *(f"--gpu {shlex.quote(g)}" for g in gpus),
            *([f"--vram {size_arg(vram)}"] if vram else []),
            *([f"--os {os_name}"] if os_name else []),
        ]
        return plan_training(
            model,
            training,
            hardware,
            tp=tp,
            offline=offline,
            as_json=as_json,
            where=where,
            os_name=os_name,
        )
    check_serving_options(
        runtime, tp, gpu_memory_utilization, max_num_seqs, typed_flag(ctx_, "tp"), pooling
    )
    pinned = pinned_settings(ctx_, runtime, drafts)  # -sm, -ts, --pp, ... kept as given
    if rt != "any":
        from oomkit.cli.estimate_args import check_hf_runtime_quant

        check_hf_runtime_quant(rt, quant)
    ngl = plan_ngl(drafts.pop("n_gpu_layers"))
    kv = pinned_kv(drafts.pop("kv_dtype"), drafts.pop("cache_type_k"), drafts.pop("cache_type_v"))
    flash_attn = drafts.pop("flash_attn")
    lora = lora_settings(drafts)  # the LoRA options arrive with the draft ones (**drafts)
    drafts = {k: v for k, v in drafts.items() if k not in LORA_FLAGS}
    if lora and rt not in ("vllm", "any"):
        flag = LORA_FLAGS[next(iter(lora))]
        raise InvalidSettingError(
            f"{flag} is a vLLM option; plan with --runtime vllm (or any), or drop {flag}",
            setting=flag,
        )
    from oomkit.cli.transformers_options import transformers_settings

    hf = transformers_settings(
        rt,
        device_map=device_map,
        max_memory=max_memory,
        max_new_tokens=max_new_tokens,
        attn_implementation=inference_attn(ctx_, rt),
        refuse_elsewhere=True,
    )

    check_llama_server(runtime, llama_server)
    _check_any_version(runtime, runtime_version)

    request = PlanRequest(
        runtime=runtime,
        ctx=ctx,
        min_ctx=min_ctx,
        parallel=parallel,
        quant=quant,
        min_quant=min_quant,
        no_offload=no_offload,
        headroom_bytes=headroom,
        prefer=prefer,
        display=display,
        kv=kv,
        n_gpu_layers=ngl,
        ctx_max=ctx_max,
    )
    os_name = os_name.lower() if os_name else None
    pp = pinned.get("pp")
    hardware = hardware_from_options(
        gpus,
        vram=vram,
        ram=ram,
        quiet=as_json,
        n_devices=(tp or 1) * (pp or 1) if tp or pp else None,
        os=os_name,
    )
    if backend is not None:
        from oomkit.cli.gpu_choice import with_backend

        rt = runtime if runtime.strip().lower() == "any" else normalize_runtime(runtime)
        hardware = with_backend(hardware, backend, rt, named=bool(gpus))
    from oomkit.cli.draft_options import draft_settings
    from oomkit.cli.speculative_options import speculative_settings
    from oomkit.estimate.vllm_compiled_pooling import PLAN_NOTE, unmodelled_at
    from oomkit.spec.settings import InferenceSettings

    rt_name = runtime if runtime == "any" else normalize_runtime(runtime)
    # vLLM/SGLang speculative decoding: pinned, every candidate keeps it (speculative_options)
    spec_values = {name: drafts.pop(name, None) for name in SPECULATIVE_PARAMS}
    speculative = speculative_settings(rt_name, {**spec_values, "tp": tp})
    draft = {**draft_settings(rt_name, {**drafts}), **speculative}
    serving: dict[str, Any] = {
        k: v
        for k, v in (
            ("tp", tp),
            ("gpu_memory_utilization", gpu_memory_utilization),
            ("max_num_seqs", max_num_seqs),
            ("pooling", pooling),
            ("enforce_eager", True if pooling and unmodelled_at(runtime_version) else None),
            ("llama_server", llama_server),
            ("flash_attn", flash_attn),
        )
        if v is not None
    }
    serving.update(pinned)
    serving.update(hf)
    serving.update(lora)
    base = (
        InferenceSettings(runtime_version=runtime_version, **draft, **serving)
        if runtime_version or draft or serving
        else None
    )
    try:
        result = plan(model, hardware, request, base=base, offline=True if offline else None)
    except InvalidSettingError as e:  # a context --parallel made, not --ctx
        from oomkit.cli.estimate_args import context_product_error

        raise context_product_error(e, ctx, parallel) from e
    import dataclasses

    if pooling and serving.get("enforce_eager"):  # a compiled pooling profile: not modelled
        # (only with --pooling: a pinned --enforce-eager alone is the user's, no note)
        result = dataclasses.replace(result, notes=(*result.notes, PLAN_NOTE))
    if llama_server is False:
        note = (
            "--no-llama-server: the llama.cpp memory is llama-bench's / the C API's (one output "
            "row per -ub token); the commands keep llama-server's flags, give them to that program"
        )
        result = dataclasses.replace(result, notes=(*result.notes, note))
    from oomkit.cli.plan_drop_draft import drop_draft_note

    lever = drop_draft_note(
        model, hardware, request, base, result, offline=True if offline else None
    )
    if lever is not None:  # speculative decoding's memory, offered back (costs speed only)
        result = dataclasses.replace(result, notes=(*result.notes, lever))
    from oomkit.estimate.speculative_keys import unpriced_note

    unpriced = unpriced_note(base.speculative_extra if base is not None else None)
    if unpriced is not None:  # --speculative-config keys carried into the command, not priced
        result = dataclasses.replace(result, notes=(*result.notes, unpriced))
    if pasted.notes:  # what the pasted line's -c 0, --dtype and memory-neutral flags meant
        result = dataclasses.replace(result, notes=(*pasted.notes, *result.notes))
    if as_json:
        doc = result.to_dict()
        if pasted.ignored:
            doc["ignored_flags"] = list(pasted.ignored)
        print_json(doc)
    else:
        from oomkit.cli.plan_render import render_plan

        click.echo(render_plan(result))
    return EXIT_OK if result.fits else EXIT_NEGATIVE


def _check_any_version(runtime: str, version: str | None) -> None:
    """``--runtime any`` compares runtimes whose releases are numbered apart (0.6.3 is a vLLM,
    an Ollama and an SGLang release; llama.cpp has builds): only a date means the same time
    for each, so a release or build number needs the runtime named."""
    if version is None or runtime.strip().lower() != "any":
        return
    from oomkit.errors import InvalidSettingError, OomkitError
    from oomkit.estimate.generations import resolve_generation
    from oomkit.planner.core import _ANY

    def reads(rt: str) -> bool:
        try:
            resolve_generation(rt, version)
        except OomkitError:
            return False
        return True

    if not all(reads(rt) for rt in _ANY):
        raise InvalidSettingError(
            f"--runtime-version {version!r} with --runtime any: a release or build number "
            "is one runtime's; name that runtime (--runtime vllm, llama.cpp, ...) or give "
            "a date every runtime reads (2024-06 or 2024-06-15)",
            setting="--runtime-version",
            value=version,
        )
