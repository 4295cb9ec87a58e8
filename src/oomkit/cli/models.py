"""``oomkit models``: search the embedded model catalog."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from oomkit.cli.output import EXIT_NEGATIVE, EXIT_OK, print_json
from oomkit.serialize import SCHEMA_VERSION

if TYPE_CHECKING:
    from oomkit.catalog.models import CatalogEntry

__all__ = ["models_command"]


def _computed_params(m: CatalogEntry) -> int | None:
    """Parameters summed over the tensor table derived from the entry's config (+ towers)."""
    from oomkit.errors import OomkitError
    from oomkit.spec.tensors import model_tensors

    try:
        spec = m.spec()
        return sum(t.n_params for t in model_tensors(spec)) + spec.multimodal_params
    except OomkitError:
        return None


@click.command("models")
@click.argument("query", required=False)
@click.option("--search", "search", help="Text to search for (same as QUERY)")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document")
def models_command(query: str | None, search: str | None, as_json: bool) -> int:
    """List or search the embedded model catalog (works offline). Exit 3 if nothing matches."""
    from oomkit.catalog.models import search_models

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
