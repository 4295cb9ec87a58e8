"""``oomkit serve``: the local "Will it run?" page and JSON API (extra ``web``).

Binds 127.0.0.1 by default; any other address needs ``--allow-remote`` (the API has no
authentication) and prints a warning. FastAPI and uvicorn are imported only here.
"""

from __future__ import annotations

import ipaddress
import socket

import click

from oomkit.cli.output import print_warning
from oomkit.errors import InvalidSettingError

__all__ = ["is_loopback", "serve_command"]


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1).

    >>> is_loopback("127.0.0.1"), is_loopback("::1"), is_loopback("0.0.0.0")
    (True, True, False)
    """
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _check_free(host: str, port: int) -> None:
    """One ``Error:`` line instead of uvicorn's log when the address cannot be bound."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            s.bind((host.strip("[]"), port))
        except OSError as e:
            raise click.ClickException(
                f"Listening failed for '{host}:{port}' (oomkit serve): {e.strerror or e}. "
                "Pick another --port, or stop what is using it."
            ) from e


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@click.option("--open", "open_browser", is_flag=True, help="Open the page in a browser")
@click.option(
    "--allow-remote",
    is_flag=True,
    help="Allow a non-loopback --host (the API has no authentication)",
)
@click.option(
    "--hub",
    is_flag=True,
    help="Allow Hugging Face Hub ids (network); default: catalog models only, offline",
)
def serve_command(host: str, port: int, open_browser: bool, allow_remote: bool, hub: bool) -> int:
    """Serve the local web page and JSON API (OpenAPI docs at /docs).

    The page shows the same numbers as `oomkit estimate/plan/doctor --json`.
    """
    if not is_loopback(host) and not allow_remote:
        raise InvalidSettingError(
            f"--host {host} is not a loopback address: anyone who can reach it can use the "
            "API. Add --allow-remote to bind it anyway, or use --host 127.0.0.1.",
            setting="--host",
            value=host,
        )
    try:
        import uvicorn

        from oomkit.web.app import create_app
    except ImportError as e:
        raise click.ClickException(
            f"oomkit serve needs the 'web' extra ({e.name} is missing): pip install 'oomkit[web]'"
        ) from e
    _check_free(host, port)
    if not is_loopback(host):
        print_warning(
            f"serving on {host}:{port}, reachable from other machines; the API has no "
            "authentication."
        )
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}/"
    click.echo(f"oomkit serve: {url}  (API docs: {url}docs; Ctrl+C stops)", err=True)
    if open_browser:
        import threading
        import webbrowser

        threading.Timer(1.0, webbrowser.open, args=(url,)).start()
    uvicorn.run(create_app(hub=hub), host=host, port=port, log_level="warning")
    return 0
