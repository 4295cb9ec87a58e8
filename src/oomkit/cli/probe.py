"""``oomkit probe MODEL``: trace the real transformers model under FakeTensorMode (extra torch)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from oomkit.cli.output import EXIT_OK, print_json
from oomkit.cli.params import COUNT
from oomkit.errors import SourceNotFoundError
from oomkit.units import format_bytes

__all__ = ["probe_command"]


def _config_of(model: str) -> dict[str, Any]:
    """config.json of a path (file or directory) or of a catalog model."""
    path = Path(model)
    if path.is_dir():
        path = path / "config.json"
    if path.suffix == ".json":
        if not path.exists():
            raise SourceNotFoundError(f"No config.json at '{path}'.", source=model)
        loaded: dict[str, Any] = json.loads(path.read_text())
        return loaded
    from oomkit.catalog.models import find_model

    return dict(find_model(model).config)


@click.command("probe")
@click.argument("model")
@click.option("--train", "train", type=click.Choice(("full",)), help="Trace a training step")
@click.option("--seq", type=COUNT, default=2048, show_default=True, help="Tokens per sequence")
@click.option("--batch", type=int, default=1, show_default=True, help="Sequences")
@click.option(
    "--dtype",
    type=click.Choice(("bf16", "fp16", "fp32")),
    default="bf16",
    show_default=True,
    help="Parameter and activation dtype",
)
@click.option("--grad-checkpointing", is_flag=True, help="Activation checkpointing (training)")
@click.option(
    "--attn-implementation",
    type=click.Choice(("sdpa", "eager")),
    default="sdpa",
    show_default=True,
    help="transformers attention implementation",
)
@click.option("--no-gpu-rounding", is_flag=True, help="Do not round to 512-byte CUDA blocks")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document")
def probe_command(
    model: str,
    train: str | None,
    seq: int,
    batch: int,
    dtype: str,
    grad_checkpointing: bool,
    attn_implementation: str,
    no_gpu_rounding: bool,
    as_json: bool,
) -> int:
    """Trace MODEL (catalog name or config.json) with fake tensors: no memory, no weights."""
    from oomkit.inprocess.fake_probe import probe_hf

    report = probe_hf(
        _config_of(model),
        batch=batch,
        seq=seq,
        train=train is not None,
        dtype=dtype,
        grad_checkpointing=grad_checkpointing,
        attn_implementation=attn_implementation,
        rounded_for_gpu=not no_gpu_rounding,
    )
    if as_json:
        doc = {"schema_version": 1, "model": model, **report.to_dict()}
        print_json(doc)
        return EXIT_OK
    click.echo(f"{model}: peak {format_bytes(report.peak_bytes)} ({report.wall_s:.1f} s traced)")
    for name, n in report.categories.items():
        if n:
            click.echo(f"  {name:<14}{format_bytes(n):>12}")
    click.echo("top modules by peak:")
    for mod, n in report.top_modules[:5]:
        click.echo(f"  {mod:<50}{format_bytes(n):>12}")
    return EXIT_OK
