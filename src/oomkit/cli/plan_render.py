"""The text of ``oomkit plan``: the hardware and the request, each plan with its bars,
quality, preparation and command, what does not fit, and the notes."""

from __future__ import annotations

from oomkit.planner.quality import kv_quality_text
from oomkit.planner.speed_kernels import speed_unknown

__all__ = ["render_plan"]


def render_plan(result: object) -> str:
    from oomkit.cli.bars import device_bar, device_list, use_color
    from oomkit.planner.core import Plan, PlanResult
    from oomkit.units import format_bytes, format_params

    assert isinstance(result, PlanResult)
    color = use_color()
    m = result.model
    hw = result.hardware
    gpus = device_list(hw.devices)
    ram = f" + {format_bytes(hw.host_ram_bytes)} RAM" if hw.host_ram_bytes else ""
    lines = [f"{m.name} ({m.architecture}, {format_params(m.params)} params) on {gpus}{ram}"]
    req = result.request
    capped = req.ctx is not None and req.ctx > result.target_ctx  # the trained context caps it
    ctx_text = f"{req.ctx} (capped at {result.target_ctx})" if capped else str(result.target_ctx)
    if req.ctx_from_max:  # --ctx max: say so, not the model's maximum it aims for
        ctx_text = f"max (the model's {result.target_ctx})"
    elif req.ctx is None and req.runtime == "ollama":
        # not asked: Ollama's own default, from 0.15.5 by the GPUs' total VRAM (ollama_num_ctx)
        ctx_text += " (not given: Ollama's default num_ctx for this VRAM)"
    elif req.ctx is None:
        from oomkit.planner.target_ctx import untyped_ctx_reason

        first = result.plans[0].settings if result.plans else None
        why = untyped_ctx_reason(
            req.runtime,
            req.prefer,
            result.target_ctx,
            version=None if first is None else first.runtime_version,
            server=None if first is None else first.llama_server,
            fit_top=result.fit_ctx_top,
        )
        if result.fit_ctx_top is not None:  # --fit: up to the trained context, per plan
            ctx_text = f"{result.target_ctx}-{result.fit_ctx_top}"
        ctx_text += f" (not given: {why})"
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
