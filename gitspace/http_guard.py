"""The front door of gitspace's HTTP servers (MCP, the web view): which address, which Host,
which Origin, which token, which methods. One guard for both, so a header is read one way.

Invariants:
- ``check_bind`` (MCP): a loopback address (127.0.0.0/8, ::1, ``localhost``) needs nothing more;
  any other address is refused before a socket is opened unless a bearer token is configured,
  because whoever can reach the server can change the workspace. ``loopback_only`` (the web
  view, which has no login): anything but loopback is refused.
- ``Guard`` (``refusal``, for a server that is no ASGI app), on every address, before the app
  sees a request: the ``Host`` header must name this
  server (one of its names with its port; 421 otherwise), so a web page whose DNS name was
  re-pointed at this machine cannot talk to it; an ``Origin``, when a browser sends one, must be
  this server too (403); when a token is set, ``Authorization: Bearer <token>`` must carry it
  (compared in constant time; 401 otherwise); when only some methods are served, any other is
  405. A header sent twice counts by its first value. Refusals say why in one sentence and never
  echo the token. No websocket is served.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
import socket
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

from .errors import GitspaceError

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
WILDCARDS = ("0.0.0.0", "::", "")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def new_token() -> str:
    """A fresh bearer token (256 random bits, URL-safe)."""
    return secrets.token_urlsafe(32)


def check_bind(host: str, token: str | None, what: str) -> None:
    """Refuse to listen on a non-loopback ``host`` without a token (GitspaceError)."""
    if is_loopback(host) or token:
        return
    raise GitspaceError(
        f"Refusing to serve {what} on {host!r} without a token: anyone who can reach that "
        "address could change the workspace.",
        hint="Set GITSPACE_MCP_TOKEN (or pass --new-token to have one made and shown once) and "
        "send it as 'Authorization: Bearer <token>'; or keep the default --host 127.0.0.1 and "
        "use an SSH tunnel.",
    )


def loopback_only(host: str) -> str:
    """``host`` if it is a loopback address or ``localhost`` (brackets dropped); GitspaceError
    otherwise: the web view has no login, so it is never served beyond this machine."""
    if not is_loopback(host):
        raise GitspaceError(
            f"The web view only listens on loopback, not on {host!r}: it has no login, and "
            "anyone who can reach it can read the whole repository.",
            hint="Use --host 127.0.0.1 (the default), and an SSH tunnel to view it from elsewhere.")
    return host if host == "localhost" else host.strip("[]")


def _bracketed(address: str) -> str:
    return f"[{address}]" if ":" in address else address


def server_names(host: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """The names a client may put in ``Host`` for a server bound to ``host``: loopback names for
    a loopback or wildcard bind, the address itself otherwise, this machine's names and addresses
    for a wildcard bind, and any the operator adds (``--allow-host``)."""
    names = set(extra)
    if is_loopback(host) or host in WILDCARDS:
        names.update(LOOPBACK_NAMES)
    if host not in WILDCARDS:
        names.add(_bracketed(host.strip("[]")))
    else:
        hostname = socket.gethostname()
        names.update({hostname, socket.getfqdn()})
        try:
            infos = socket.getaddrinfo(hostname, None)
        except OSError:
            infos = []
        names.update(_bracketed(str(info[4][0])) for info in infos)
    return frozenset(n.lower() for n in names if n)


class Guard:
    """ASGI middleware enforcing the invariants above."""

    def __init__(self, app: ASGIApp, names: frozenset[str], port: int | Callable[[], int],
                 token: str | None = None, methods: tuple[str, ...] | None = None) -> None:
        self.app = app
        self.names = names
        self.port = port  # a callable when known only once the socket is bound (--port 0)
        self.token = token
        self.methods = methods  # None: every method

    def hosts(self) -> frozenset[str]:
        port = self.port() if callable(self.port) else self.port
        return frozenset(f"{name}:{port}" for name in self.names) | (
            self.names if port == 80 else frozenset())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})  # none are served
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)  # lifespan
            return
        headers: dict[str, str] = {}
        for key, value in scope["headers"]:
            headers.setdefault(key.decode("latin-1").lower(), value.decode("latin-1"))
        refused = refusal(headers, self.hosts(), self.token, scope["method"], self.methods)
        if refused is not None:
            status, text, extra = refused
            await refuse(send, status, text, [(k.encode(), v.encode()) for k, v in extra])
            return
        await self.app(scope, receive, send)


def refusal(headers: dict[str, str], hosts: frozenset[str], token: str | None, method: str,
            methods: tuple[str, ...] | None = None
            ) -> tuple[int, str, list[tuple[str, str]]] | None:
    """Why a request is refused (status, sentence, extra headers), or None: the checks of
    ``Guard``, for any server (``headers``: lower-case names, each header's first value)."""
    if headers.get("host", "").lower() not in hosts:
        return 421, ("This server answers only to its own names (the Host header names "
                     "another)."), []
    origin = headers.get("origin")
    if origin is not None and origin.lower().partition("://")[2] not in hosts:
        return 403, "Requests from other sites are refused (the Origin header names another).", []
    if token is not None:
        scheme, _, value = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(),
                                                                 token.encode()):
            return 401, "A bearer token is required: send 'Authorization: Bearer <token>'.", [
                ("www-authenticate", 'Bearer realm="gitspace"')]
    if methods is not None and method not in methods:
        allowed = ", ".join(methods)
        verb = "is" if len(methods) == 1 else "are"
        return 405, f"Only {allowed} {verb} served here.", [("allow", allowed)]
    return None


async def refuse(send: Send, status: int, text: str,
                 extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = (text + "\n").encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()), *(extra or [])]})
    await send({"type": "http.response.body", "body": body})
