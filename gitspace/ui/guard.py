"""The web view's front door: loopback only, same Host/Origin rules as the MCP server, read-only.

Invariants:
- the server binds only to a loopback address (``check_bind`` refuses anything else before a
  socket is opened);
- a request whose Host is not a loopback name (127.0.0.1, localhost, [::1]) with the server's own
  port is refused with 421, so a page on another site that rebinds its DNS name to 127.0.0.1
  cannot read the view; a request carrying an Origin other than the view's own is refused with
  403, as the MCP server's transport does;
- only GET and HEAD reach the app: the view has nothing that writes, so anything else is 405.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import GitspaceError
from ..http_guard import LOOPBACK_NAMES, ASGIApp, Receive, Scope, Send, is_loopback, refuse


def check_bind(host: str) -> str:
    """``host`` if it is a loopback address or ``localhost``; GitspaceError otherwise."""
    if not is_loopback(host):
        raise GitspaceError(
            f"The web view only listens on loopback, not on {host!r}: it has no login, and "
            "anyone who can reach it can read the whole repository.",
            hint="Use --host 127.0.0.1 (the default), and an SSH tunnel to view it from elsewhere.")
    return host if host == "localhost" else host.strip("[]")


def allowed_hosts(port: int) -> frozenset[str]:
    return frozenset(f"{name}:{port}" for name in LOOPBACK_NAMES)


class Guard:
    """ASGI middleware enforcing the invariants above before the app sees a request."""

    def __init__(self, app: ASGIApp, port: Callable[[], int]) -> None:
        self.app = app
        self.port = port  # known only once the socket is bound (--port 0 picks one)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        hosts = allowed_hosts(self.port())
        if headers.get("host", "") not in hosts:
            await refuse(send, 421, "This web view answers only to 127.0.0.1, localhost or [::1] "
                                     "with its own port (Host header refused).")
            return
        origin = headers.get("origin")
        if origin is not None and origin.removeprefix("http://") not in hosts:
            await refuse(send, 403, "Requests from other sites are refused (Origin header).")
            return
        if scope["method"] not in ("GET", "HEAD"):
            await refuse(send, 405, "The web view is read-only: only GET and HEAD are served.",
                          [(b"allow", b"GET, HEAD")])
            return
        await self.app(scope, receive, send)
