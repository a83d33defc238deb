"""The command that serves the read-only web view (``gitspace.ui``, imported only when the command
runs, so other commands start without Starlette)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from .common import echo, state


def ui(
    directory: Annotated[Optional[Path], typer.Argument(  # noqa: UP045
        help="The workspace to view (default: -C, or the current folder).")] = None,
    port: Annotated[int, typer.Option(min=0, max=65535,
                                      help="Port to listen on (0 picks a free one).")] = 8766,
    host: Annotated[str, typer.Option(help="Loopback address to listen on.")] = "127.0.0.1",
    open_browser: Annotated[bool, typer.Option("--open", help="Open it in a browser.")] = False,
) -> None:
    """Serve a read-only web view of the op history on 127.0.0.1 (Ctrl-C stops)."""
    from ..ui import serve

    serve(directory or state.directory, host, port, open_browser=open_browser, announce=echo)
