"""``gitspace ui``: a read-only web view of a workspace's history, served on loopback.

Invariants:
- it never writes to the repository and never takes a lock an op needs: it opens a ``GitRepo``
  (not a ``Workspace``, whose opening may finish a crashed op) and reads through
  ``git --no-optional-locks`` and plain file reads (see ``context``);
- it listens only on a loopback address, answers only to loopback Host names with its own port
  and to no other Origin, and serves GET and HEAD only (``http_guard.Guard``);
- everything it serves is its own: server-rendered HTML, one small script for live updates, CSS
  and Pygments' colours; it works offline.

This package imports Starlette, uvicorn and Pygments at module level. Nothing outside it imports
it at module level (the CLI imports it inside its command), so other commands start without them.
"""

from __future__ import annotations

import socket
import threading
import webbrowser
from collections.abc import Callable
from pathlib import Path

from ..errors import GitspaceError
from ..http_guard import loopback_only

DEFAULT_PORT = 8766


def serve(root: str | Path, host: str = "127.0.0.1", port: int = DEFAULT_PORT, *,
          open_browser: bool = False, announce: Callable[[str], None] | None = None) -> None:
    """Serve the view of the repository at ``root`` until the process is stopped (Ctrl-C).
    ``port`` 0 picks a free port; ``announce`` receives the one line that says where."""
    try:
        import uvicorn

        from .app import build
    except ImportError as e:
        raise GitspaceError(f"The web view needs {e.name or 'its web stack'}, which is not "
                            "installed.", hint="pip install 'gitspace[ui]'") from None
    from .context import Context

    host = loopback_only(host)
    ctx = Context.open(Path(root))
    sock = _listen("127.0.0.1" if host == "localhost" else host, port)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    address = f"http://{shown}:{bound}/"
    config = uvicorn.Config(build(ctx, lambda: bound, lambda: server.should_exit),
                            log_level="warning", lifespan="off", timeout_graceful_shutdown=2,
                            access_log=False)
    server = uvicorn.Server(config)
    if announce:
        announce(f"Serving a read-only view of {ctx.root} at {address} (Ctrl-C stops).")
    if open_browser:
        threading.Timer(0.5, webbrowser.open, (address,)).start()
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
        ctx.repo.close()


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise GitspaceError(f"Cannot listen on {host}:{port} ({e.strerror}).",
                            hint="Pick another port with --port, or --port 0 for any free one."
                            ) from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock
