"""``oomkit plan MODEL``: the best configuration that fits, alternatives, and the command."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

import click

from oomkit.cli.draft_options import draft_options
from oomkit.cli.gpu_choice import BACKEND_CHOICES
from oomkit.cli.lora_options import LORA_FLAGS, lora_options, lora_settings
from oomkit.cli.output import EXIT_NEGATIVE, EXIT_OK, print_json
from oomkit.cli.params import COUNT, SIZE, hardware_from_options
from oomkit.cli.plan_flags import (
    check_llama_server,
    check_serving_options,
    kv_options,
    pinned_kv,
    plan_ngl,
    plan_ngl_option,
)
from oomkit.cli.train_options import (
    ArgsCommand,
    TrainOptions,
    reject_inference_options,
    training_options,
    typed_flag,
)
from oomkit.cli.transformers_options import ATTN_PARAM, inference_attn, transformers_options
from oomkit.cli.values import CTX_FLAGS, OS_CHOICES, TP_FLAGS
from oomkit.planner.quality import kv_quality_text
from oomkit.planner.request import DEFAULT_HEADROOM_BYTES, PREFERENCES
from oomkit.planner.speed_kernels import speed_unknown

if TYPE_CHECKING:
    from oomkit.spec.settings import TrainingSettings

__all__ = ["plan_command", "render_plan"]


@click.command("plan", cls=ArgsCommand)  # keeps argv: errors name a flag as typed
@click.argument("model")
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
    help="llama.cpp | ollama | vllm | sglang | transformers | any (compare)",
)
@click.option(
    *CTX_FLAGS,  # --ctx-size, --max-model-len, --context-length too, as estimate's
    "ctx",
    type=COUNT,
    help="Context you want (e.g. 32k)",
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
    "--max-num-seqs",
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
@training_options
def plan_command(
    model: str,
    gpus: tuple[str, ...],
    vram: int | None,
    ram: int | None,
    runtime: str,
    ctx: int | None,
    min_ctx: int | None,
    parallel: int | None,
    quant: str | None,
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

    Tries, in order: everything on the GPU at your context, a quantized KV cache, a shorter
    context (not below --min-ctx), MoE experts on the CPU, fewer layers on the GPU, a smaller
    quant. Exit 0 with a plan, 3 when nothing fits (with what would be needed).
    """
    from oomkit.planner.core import plan
    from oomkit.planner.request import PlanRequest

    ctx_ = click.get_current_context()
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
    from oomkit.cli.estimate_args import check_count_options

    check_count_options(ctx=ctx, tp=tp, max_num_seqs=max_num_seqs)  # named as typed
    if training.method is not None:
        os_name = os_name.lower() if os_name else None
        hardware = hardware_from_options(
            gpus, vram=vram, ram=ram, quiet=as_json, n_devices=tp, os=os_name
        )
        where = [
            *(f"--gpu {shlex.quote(g)}" for g in gpus),
            *([f"--vram {_size_arg(vram)}"] if vram else []),
            *([f"--os {os_name}"] if os_name else []),
        ]
        return _plan_training(
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
        from oomkit.errors import InvalidSettingError

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
    )
    os_name = os_name.lower() if os_name else None
    hardware = hardware_from_options(
        gpus, vram=vram, ram=ram, quiet=as_json, n_devices=tp, os=os_name
    )
    if backend is not None:
        from oomkit.cli.gpu_choice import with_backend

        rt = runtime if runtime.strip().lower() == "any" else normalize_runtime(runtime)
        hardware = with_backend(hardware, backend, rt, named=bool(gpus))
    from oomkit.cli.draft_options import draft_settings
    from oomkit.estimate.vllm_compiled_pooling import PLAN_NOTE, unmodelled_at
    from oomkit.spec.settings import InferenceSettings

    draft = draft_settings(runtime if runtime == "any" else normalize_runtime(runtime), {**drafts})
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
    serving.update(hf)
    serving.update(lora)
    base = (
        InferenceSettings(runtime_version=runtime_version, **draft, **serving)
        if runtime_version or draft or serving
        else None
    )
    result = plan(model, hardware, request, base=base, offline=True if offline else None)
    import dataclasses

    if serving.get("enforce_eager"):  # a compiled pooling profile is not modelled
        result = dataclasses.replace(result, notes=(*result.notes, PLAN_NOTE))
    if llama_server is False:
        note = (
            "--no-llama-server: the llama.cpp memory is llama-bench's / the C API's (one output "
            "row per -ub token); the commands keep llama-server's flags, give them to that program"
        )
        result = dataclasses.replace(result, notes=(*result.notes, note))
    if as_json:
        print_json(result.to_dict())
    else:
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


def _size_arg(n_bytes: int) -> str:
    """A byte count as ``--vram`` reads it back exactly (``40GiB``, else ``N B``)."""
    return f"{n_bytes >> 30}GiB" if n_bytes % (1 << 30) == 0 else f"{n_bytes}B"


def _plan_training(
    model: str,
    training: TrainOptions,
    hardware: object,
    *,
    tp: int | None,
    offline: bool,
    as_json: bool,
    where: list[str] | None = None,
    os_name: str | None = None,
) -> int:
    """``plan MODEL --train ...``: the run as asked if the verdict calls it "fits", else the
    changes that make it fit (oomkit.planner.training: never one the verdict calls "does not
    fit", "fits" before "tight"; a "tight" run as asked comes after the changes that clear the
    band), each with its verdict, per-GPU peak and launch command, and the ``oomkit estimate
    --train`` command with the plan's flags (``check``): the launch line carries none of them
    (LoRA, checkpointing, ZeRO are the training script's or config's), so without it "add --emit
    deepspeed to the estimate command with these flags" named no flags."""
    import dataclasses

    from oomkit.api import load_model
    from oomkit.cli.train_options import seq_for_model
    from oomkit.estimate.training import estimate_training
    from oomkit.planner.train_launch import training_launch
    from oomkit.planner.trainer_names import trainer_options
    from oomkit.planner.training import (
        TrainingChange,
        platform_allocator,
        suggest_training_changes,
    )
    from oomkit.serialize import SCHEMA_VERSION
    from oomkit.spec.hardware import Hardware
    from oomkit.units import format_bytes

    assert isinstance(hardware, Hardware)
    settings = training.to_settings(tp=tp, overhead_bytes=None)
    # Windows: PyTorch ignores expandable_segments (no lever, priced with the default allocator)
    settings, alloc_note = platform_allocator(settings, os_name)
    n_gpus = len([d for d in hardware.devices if d.backend != "cpu"])
    if n_gpus > 1 and training.gpus in (1, n_gpus):
        settings = dataclasses.replace(settings, gpus=n_gpus)
    spec = load_model(model, offline=True if offline else None)
    settings, alloc_note = seq_for_model(settings, spec, training, alloc_note)
    from oomkit.estimate.verdict import Platform, device_segment, device_unified_bytes, verdict

    platform = Platform(
        os=os_name,
        segments=tuple(device_segment(d) for d in hardware.devices),
        unified_bytes=tuple(device_unified_bytes(d) for d in hardware.devices),
    )
    est = estimate_training(spec, settings, hardware)
    level = verdict(est, platform).level
    asked = TrainingChange(changes=("as asked",), settings=settings, estimate=est, level=level)
    if level in ("fits", "unknown") and est.fits is not False:
        plans = [asked]
    elif level == "tight":
        clear = suggest_training_changes(spec, settings, hardware, platform=platform,
                                         only_fits=True)  # fmt: skip
        plans = [*clear, asked]
    else:
        plans = suggest_training_changes(spec, settings, hardware, platform=platform)

    def launch_fields(s: TrainingSettings) -> dict[str, str | None]:
        launch = training_launch(spec, s)
        return {
            "command": launch.command,
            "launcher": launch.launcher,
            "config_file": launch.config_file,
            "config": launch.config,
        }

    def peak(p: TrainingChange) -> int:
        return max((d.total_bytes for d in p.estimate.devices), default=0)

    def check(s: TrainingSettings) -> str:
        from oomkit.diagnose.training_commands import oomkit_estimate_command

        base = oomkit_estimate_command(s, shlex.quote(model))
        return " ".join([base, *(where or [])])

    if as_json:
        print_json(
            {
                "schema_version": SCHEMA_VERSION,
                "model": spec.name,
                "training": True,
                "fits": bool(plans),
                **({"notes": [alloc_note]} if alloc_note else {}),
                "plans": [
                    {
                        "changes": list(p.changes),
                        "verdict": p.level,
                        "settings": dataclasses.asdict(p.settings),
                        "peak_bytes": peak(p),
                        "host_bytes": p.estimate.host.total_bytes,
                        "peak_phase": p.estimate.runtime_details.get("peak_phase"),
                        **launch_fields(p.settings),
                        "trainer_options": list(trainer_options(p.settings)),
                        "check_command": check(p.settings),
                    }
                    for p in plans
                ],
            }
        )
    else:
        cap = min((d.capacity_bytes or 0 for d in hardware.devices), default=0)
        world = settings.gpus * settings.nodes  # --gpus 4 with one card named read "on 1 GPU(s)"
        click.echo(f"{spec.name}: {settings.method} fine-tuning on {world} GPU(s)")
        if alloc_note:
            click.echo(f"Note: {alloc_note}.")
        if not plans and est.blockers:  # not memory: no lever and no GPU lifts it
            click.echo(f"Nothing fits: {est.blockers[0]}.")
        elif not plans:
            click.echo(
                "Nothing fits: no training lever oomkit knows brings the per-GPU peak under "
                f"{format_bytes(cap)}; more GPUs (--gpus/--nodes) are needed."
            )
        for i, p in enumerate(plans):
            head = "Plan" if i == 0 else f"Alternative {i}"
            phase = p.estimate.runtime_details.get("peak_phase")
            tight = "; tight: within the band of real runs" if p.level == "tight" else ""
            click.echo(
                f"{head}: {' + '.join(p.changes)}: peak {format_bytes(peak(p))} per GPU "
                f"of {format_bytes(cap)} (in {phase}{tight})"
            )
            host = p.estimate.host.total_bytes
            if host:  # CPU offload: the RAM it needs, checked only against a given --ram
                ram = hardware.host_ram_bytes
                of = f" of {format_bytes(ram)}" if ram else " (not checked: pass --ram SIZE)"
                click.echo(f"  host RAM: {format_bytes(host)}{of}")
            launch = training_launch(spec, p.settings)
            click.echo(f"  run: {launch.command}")
            for line in trainer_options(p.settings):  # the levers as the trainer spells them
                click.echo(f"  set: {line}")
            click.echo(f"  check: {check(p.settings)}")
            if launch.config_file and launch.config:
                click.echo(f"  {launch.config_file}:")
                click.echo("\n".join(f"    {x}" for x in launch.config.splitlines()))
    return EXIT_OK if plans else EXIT_NEGATIVE


def render_plan(result: object) -> str:
    from oomkit.cli.bars import device_bar, use_color
    from oomkit.planner.core import Plan, PlanResult
    from oomkit.units import format_bytes, format_params

    assert isinstance(result, PlanResult)
    color = use_color()
    m = result.model
    hw = result.hardware
    counts: dict[str, int] = {}
    for target in hw.devices:  # "2 x NVIDIA GeForce RTX 3090 (24.00 GiB)", not the name twice
        cap = target.capacity_bytes
        label = f"{target.name} ({format_bytes(cap)})" if cap else target.name
        counts[label] = counts.get(label, 0) + 1
    gpus = ", ".join(f"{n} x {label}" if n > 1 else label for label, n in counts.items())
    ram = f" + {format_bytes(hw.host_ram_bytes)} RAM" if hw.host_ram_bytes else ""
    lines = [f"{m.name} ({m.architecture}, {format_params(m.params)} params) on {gpus}{ram}"]
    req = result.request
    capped = req.ctx is not None and req.ctx > result.target_ctx  # the trained context caps it
    ctx_text = f"{req.ctx} (capped at {result.target_ctx})" if capped else str(result.target_ctx)
    asked = [f"runtime {req.runtime}", f"context {ctx_text}"]
    if req.quant:
        asked.append(f"quant {req.quant}")
    if req.parallel:  # transformers: the generate() batch
        hf = {p.runtime for p in result.plans} == {"transformers"} or req.runtime == "transformers"
        asked.append(f"batch {req.parallel}" if hf else f"{req.parallel} parallel")
    lines.append("asked: " + ", ".join(asked) + f"; prefer {req.prefer}")
    lines.append("")

    def speed_text(p: Plan) -> str:
        tps = None if p.speed is None else p.speed.decode_tokens_per_s
        if tps is None:
            return speed_unknown(p.speed)
        return f"  ~{tps:.1f} tok/s decode" if tps < 10 else f"  ~{tps:.0f} tok/s decode"

    compare = len({p.runtime for p in result.plans}) > 1  # --runtime any: a command each
    for i, p in enumerate(result.plans):
        head = "Plan" if i == 0 else f"Alternative {i}"
        lines.append(f"{head} [{p.launcher or p.runtime}]: {p.summary}{speed_text(p)}")
        if i > 0 and compare:
            lines.extend(f"    {c}" for c in p.command.splitlines())
        if i == 0:
            for d in p.estimate.devices:
                bar = device_bar(
                    d,
                    headroom_bytes=req.headroom_bytes
                    if p.runtime in ("llama.cpp", "ollama")
                    else 0,
                    color=color,
                )
                lines.append(f"  {d.device:<7} {bar}")
            if p.estimate.host.total_bytes:
                host = f"  {'host':<7} {format_bytes(p.estimate.host.total_bytes)}"
                if hw.host_ram_bytes:
                    host += f" of {format_bytes(hw.host_ram_bytes)} RAM"
                lines.append(host)
            q = p.quality
            kv_cost = kv_quality_text(p.settings.cache_type_k)
            if q is not None and q.kld is not None:
                ppl = "" if q.ppl_increase_pct is None else f", +{q.ppl_increase_pct:.1f}% ppl"
                kv_part = "" if kv_cost is None else f"; {kv_cost}"
                lines.append(
                    f"  quality: {q.name} KLD {q.kld:.3f} vs 16-bit{ppl} "
                    f"(published, {q.model_measured_on}){kv_part}"
                )
            elif kv_cost is not None:
                lines.append(f"  quality: {kv_cost}")
            if p.prepare:
                lines.append("  first (llama.cpp's tools make the .gguf this plan runs):")
                lines.extend(f"    {c}" for c in p.prepare)
            lines.append("  run:")
            lines.extend(f"    {c}" for c in p.command.splitlines())
            lines.append("")
    if result.plans and len(result.plans) > 1:
        lines.append("")
    if result.rejected:
        lines.append("Does not fit:")
        lines.extend(
            f"  x [{r.launcher or r.runtime}] {r.description}: {r.reason}" for r in result.rejected
        )
    if result.impossible:
        lines.append("")
        lines.append(result.impossible)
    if result.notes:
        lines.append("Notes:")
        lines.extend(f"  - {n}" for n in result.notes)
    lines.append(
        "W weights, K KV cache, C compute, O overhead, | headroom kept free"
        if result.plans and not color
        else ""
    )
    return "\n".join(line for line in lines).rstrip() + "\n"
