"""``oomkit models``: search the embedded model catalog."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from oomkit.cli.output import EXIT_NEGATIVE, EXIT_OK, print_json
from oomkit.cli.params import COUNT, SIZE
from oomkit.cli.plan_flags import kv_options, ngl_option, pinned_kv, refuse_ngl
from oomkit.cli.values import CTX_FLAGS, OS_CHOICES
from oomkit.serialize import SCHEMA_VERSION

if TYPE_CHECKING:
    from oomkit.catalog.models import CatalogEntry

__all__ = ["models_command", "reject_without"]


def _computed_params(m: CatalogEntry) -> int | None:
    """Parameters summed over the tensor table derived from the entry's config (+ towers)."""
    from oomkit.errors import OomkitError
    from oomkit.spec.tensors import model_tensors

    try:
        spec = m.spec()
        return sum(t.n_params for t in model_tensors(spec)) + spec.multimodal_params
    except OomkitError:
        return None


def reject_without(ctx: click.Context, names: tuple[str, ...], needs: str) -> None:
    """A usage error for an option that only means something with ``needs`` (it was ignored)."""
    from click.core import ParameterSource

    for name in names:
        if ctx.get_parameter_source(name) not in (ParameterSource.DEFAULT, None):
            flag = "--" + name.replace("_", "-")
            raise click.UsageError(f"{flag} is used with {needs}: add {needs}, or drop {flag}")


@click.command("models")
@click.argument("query", required=False)
@click.option("--search", "search", help="Text to search for (same as QUERY)")
@click.option("--fits", "fits_gpu", metavar="GPU", help="Only models that run entirely on GPU")
@click.option("--vram", type=SIZE, help="With --fits: memory per GPU instead of the catalog's")
@click.option(
    *CTX_FLAGS,  # --ctx-size, --max-model-len, --context-length too, as estimate's and plan's
    "ctx",
    type=COUNT,
    help="With --fits: context to fit (default 4096; then a GGUF quant that fits only "
    "that gives way to the best one reaching 8192; Ollama: its own default, from 0.15.5 by "
    "the GPUs' total VRAM)",
)
@click.option("--runtime", "-r", default="llama.cpp", show_default=True, help="With --fits")
@click.option(
    "--sort",
    type=click.Choice(("params", "speed", "ctx")),
    default="params",
    show_default=True,
    help="With --fits: largest model, fastest decode, or longest context first",
)
@click.option(
    "--os",
    "os_name",
    type=click.Choice(OS_CHOICES, case_sensitive=False),
    help="With --fits: operating system (windows: WDDM reserves GPU memory), as plan's --os",
)
@kv_options
@ngl_option
@click.option("--flash-attn/--no-flash-attn", "-fa", default=None, hidden=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document")
def models_command(
    query: str | None,
    search: str | None,
    fits_gpu: str | None,
    vram: int | None,
    ctx: int | None,
    runtime: str,
    sort: str,
    os_name: str | None,
    kv_dtype: str | None,
    cache_type_k: str | None,
    cache_type_v: str | None,
    n_gpu_layers: str | None,
    flash_attn: bool | None,
    as_json: bool,
) -> int:
    """List or search the embedded model catalog (works offline). Exit 3 if nothing matches.

    With --fits GPU: the catalog models that run entirely on that GPU at --ctx, each with the
    best quant that fits, the longest context at that quant and the decode speed estimate.
    """
    from oomkit.catalog.models import search_models

    refuse_ngl(n_gpu_layers, "models --fits")
    if flash_attn is not None:
        raise click.UsageError(
            "-fa is not a models option: --fits plans llama.cpp's default (flash attention "
            "auto, on where supported); check a run without it with oomkit plan/estimate -fa off"
        )
    if fits_gpu is not None:
        kv = pinned_kv(kv_dtype, cache_type_k, cache_type_v)
        where = (vram, os_name.lower() if os_name else None, kv)
        return _fits(fits_gpu, search or query, where, ctx, runtime, sort, as_json)
    if os_name is not None:
        raise click.UsageError("--os is used with --fits GPU: add --fits GPU, or drop --os")
    names = ("vram", "ctx", "runtime", "sort", "kv_dtype", "cache_type_k", "cache_type_v")
    reject_without(click.get_current_context(), names, "--fits GPU")

    hits = search_models(search or query)
    if as_json:
        docs = []
        for m in hits:
            doc = m.to_dict()
            if not m.params:
                doc["params_computed"] = _computed_params(m)
            docs.append(doc)
        print_json({"schema_version": SCHEMA_VERSION, "models": docs})
    else:
        computed_any = False
        for m in hits:
            if m.params:
                params = f"{m.params / 1e9:8.2f} B "
            else:
                n = _computed_params(m)
                computed_any = computed_any or n is not None
                params = f"{n / 1e9:8.2f} B*" if n else "        ? "
            arch = str(m.config.get("architectures", ["?"])[0])
            click.echo(f"{m.key:<40} {params} {arch:<36} {m.hf_repo or ''}")
        if computed_any:
            click.echo("* computed from the config's tensor table (no published count)", err=True)
        click.echo(f"{len(hits)} model(s)", err=True)
    return EXIT_OK if hits else EXIT_NEGATIVE


def _fits(
    gpu: str,
    query: str | None,
    where: tuple[int | None, str | None, str | None],
    ctx: int | None,
    runtime: str,
    sort: str,
    as_json: bool,
) -> int:
    from oomkit.cli.params import hardware_from_options
    from oomkit.estimate.registry import normalize_runtime
    from oomkit.planner.request import PlanRequest
    from oomkit.planner.reverse import FITS_DEFAULT_CTX, fits_report
    from oomkit.units import format_bytes

    runtime_key = normalize_runtime(runtime)  # a misspelt --runtime fails before any output
    PlanRequest(runtime=runtime_key, ctx=ctx)  # and so does an out-of-range --ctx
    vram, os_name, kv = where
    hardware = hardware_from_options((gpu,), vram=vram, ram=None, quiet=as_json, os=os_name)
    report = fits_report(hardware, runtime=runtime_key, ctx=ctx, query=query, kv=kv)
    if ctx is None and runtime_key == "ollama" and not as_json:
        from oomkit.estimate.ollama_num_ctx import ollama_default_num_ctx

        why = ollama_default_num_ctx(None, hardware)[1]
        click.echo(f"num_ctx not given: {why}; capped at each model's trained context", err=True)
    rows, skipped = report.fits, len(report.unsupported)
    if sort == "speed":
        rows.sort(key=lambda m: -(m.to_dict()["decode_tokens_per_s"] or 0.0))
    elif sort == "ctx":
        rows.sort(key=lambda m: (-m.max_ctx, -m.params))
    if as_json:
        print_json(
            {
                "schema_version": SCHEMA_VERSION,
                "gpu": [d.name for d in hardware.devices],
                "models": [m.to_dict() for m in rows],
                "unsupported": skipped,
                # additive: every catalog model is in models, not_fitting or unsupported_models
                "not_fitting": [m.to_dict() for m in report.not_fitting],
                "unsupported_models": [m.to_dict() for m in report.unsupported],
            }
        )
    else:
        for m in rows:
            d = m.to_dict()
            tps = f"~{d['decode_tokens_per_s']:5.0f} tok/s" if d["decode_tokens_per_s"] else ""
            quant = m.quant if m.kv in ("f16", "auto") else f"{m.quant} KV {m.kv}"
            click.echo(
                f"{m.key:<36} {m.params / 1e9:7.2f} B  {quant:<14} "
                f"{format_bytes(d['gpu_bytes']):>11}  max ctx {m.max_ctx:>7}  {tps}"
            )
        note = f" ({skipped} skipped: architecture not supported by {runtime})" if skipped else ""
        short = [m for m in report.not_fitting if m.reason.startswith("trained context")]
        if short:
            note += f"; {len(short)} trained for a shorter context than asked"
        own = [m for m in rows if m.ctx_reason]
        if own:  # no --ctx: a model trained for fewer tokens runs at its own context
            note += (
                f"; {len(own)} sized at its own trained context (under the "
                f"{FITS_DEFAULT_CTX}-token default)"
            )
        if len(report.not_fitting) > len(short):
            n = len(report.not_fitting) - len(short)
            note += f"; {n} do not fit (--json gives each one's reason)"
        click.echo(f"{len(rows)} model(s) fit{note}", err=True)
        for miss in report.unsupported:
            click.echo(f"  unsupported: {miss.key}: {miss.reason}", err=True)
    from oomkit.cli import skip_teardown

    skip_teardown()  # the estimator's caches hold ~10^5 objects: do not free them one by one
    return EXIT_OK if rows else EXIT_NEGATIVE
