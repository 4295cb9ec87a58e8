"""``oomkit models``: search the embedded model catalog."""

from __future__ import annotations

import click

from oomkit.cli.output import EXIT_NEGATIVE, EXIT_OK, print_json
from oomkit.serialize import SCHEMA_VERSION

__all__ = ["models_command"]


@click.command("models")
@click.argument("query", required=False)
@click.option("--search", "search", help="Text to search for (same as QUERY)")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document")
def models_command(query: str | None, search: str | None, as_json: bool) -> int:
    """List or search the embedded model catalog (works offline). Exit 3 if nothing matches."""
    from oomkit.catalog.models import search_models

    hits = search_models(search or query)
    if as_json:
        print_json({"schema_version": SCHEMA_VERSION, "models": [m.to_dict() for m in hits]})
    else:
        for m in hits:
            params = f"{m.params / 1e9:8.2f} B" if m.params else "        ?"
            arch = str(m.config.get("architectures", ["?"])[0])
            click.echo(f"{m.key:<40} {params}  {arch:<36} {m.hf_repo or ''}")
        click.echo(f"{len(hits)} model(s)", err=True)
    return EXIT_OK if hits else EXIT_NEGATIVE
