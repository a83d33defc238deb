"""The web view's routes: each one parses the request, asks a page module, returns HTML.

Invariants:
- every route reads; nothing here writes to the repository or its work tree (``Guard`` lets only
  GET and HEAD through, and the pages read through ``Context``);
- expected failures (an unknown op, a damaged file, a bad filter) are pages that say what happened
  and what to do, with 4xx statuses; only a bug gives a 500, and its page says it is one;
- the pages load only this server's own assets (``/static/...``), which the
  Content-Security-Policy enforces: no inline script, no inline style, no other origin.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response, StreamingResponse
from starlette.routing import Route

from ..errors import GitspaceError, NotFound
from ..http_guard import LOOPBACK_NAMES, Guard
from . import files, forks, graph, op, session, timeline
from .context import Context
from .highlight import CSS
from .html import Html, tag
from .layout import error_page

log = logging.getLogger("gitspace.ui")
STATIC = Path(__file__).resolve().parent / "static"
POLL = 0.25  # seconds between looks at the refs: new ops show within a second
KEEPALIVE = 15.0
HEADERS = {
    "content-security-policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
                               "img-src 'self' data:; connect-src 'self'; form-action 'self'; "
                               "frame-ancestors 'none'; base-uri 'none'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}


class RefWatch:
    """The refs' state token, read at most once per ``POLL`` however many pages listen."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._lock = threading.Lock()
        self._at = 0.0
        self._state = ""

    def state(self) -> str:
        with self._lock:
            if time.monotonic() - self._at >= POLL * 0.8:
                self._state = self.ctx.state()
                self._at = time.monotonic()
            return self._state


def build(ctx: Context, port: Callable[[], int], stopping: Callable[[], bool] = lambda: False
          ) -> Guard:
    """The ASGI app for ``ctx``, behind its Host/Origin/method guard."""
    watch = RefWatch(ctx)

    def html(render: Callable[[Request], Html]) -> Callable[[Request], Response]:
        def endpoint(request: Request) -> Response:
            fragment = request.query_params.get("fragment") == "1"
            try:
                return HTMLResponse(render(request), headers=HEADERS)
            except GitspaceError as e:
                status = 404 if isinstance(e, NotFound) else 400
                text = (tag("div", str(e), " ", e.hint or "", class_="placeholder p-error")
                        if fragment else error_page(status, str(e), e.hint, **ctx.shell()))
                return HTMLResponse(text, status_code=status, headers=HEADERS)
            except Exception:
                log.exception("gitspace ui: %s failed", request.url.path)
                text = error_page(500, "The view failed unexpectedly (a bug).",
                                  "The server's log on stderr has the details; the repository "
                                  "was only read.", **ctx.shell())
                return HTMLResponse(text, status_code=500, headers=HEADERS)
        return endpoint

    def params(request: Request) -> dict[str, str]:
        return {k: v for k, v in request.query_params.items()}

    def fragment(request: Request) -> bool:
        return request.query_params.get("fragment") == "1"

    routes = [
        Route("/", html(lambda r: timeline.render(ctx, params(r), fragment(r)))),
        Route("/graph", html(lambda r: graph.render(ctx, params(r), fragment(r)))),
        Route("/op/{ref:path}", html(lambda r: op.render(ctx, r.path_params["ref"], params(r)))),
        Route("/sessions", html(lambda r: session.index(ctx, params(r)))),
        Route("/session/{sid}", html(lambda r: session.render(ctx, r.path_params["sid"],
                                                              r.query_params.get("from")))),
        Route("/fork/{sid}", html(lambda r: forks.render(ctx, r.path_params["sid"]))),
        Route("/files", html(lambda r: files.render(ctx, "", "", params(r)))),
        Route("/files/{rev}", html(lambda r: files.render(ctx, r.path_params["rev"], "",
                                                          params(r)))),
        Route("/files/{rev}/{path:path}", html(lambda r: files.render(
            ctx, r.path_params["rev"], r.path_params["path"], params(r)))),
        Route("/compare", html(lambda r: files.compare(ctx, params(r)))),
        Route("/events", lambda r: _events(watch, stopping)),
        Route("/static/code.css", lambda r: _asset(CSS.encode(), "text/css")),
        Route("/static/{name}", _static),
    ]

    async def not_found(request: Request, exc: Exception) -> Response:
        text = error_page(404, f"There is no page {request.url.path}.",
                          "Start from the timeline.", **ctx.shell())
        return HTMLResponse(text, status_code=404, headers=HEADERS)

    app = Starlette(routes=routes, exception_handlers={404: not_found})
    return Guard(app, frozenset(LOOPBACK_NAMES), port, methods=("GET", "HEAD"))


def _events(watch: RefWatch, stopping: Callable[[], bool]) -> Response:
    """Server-sent events: "hello" with the refs' state on connect, "refs" whenever it changes."""

    async def stream() -> AsyncIterator[str]:
        last = await anyio.to_thread.run_sync(watch.state)
        yield f"retry: 1000\nevent: hello\ndata: {last}\n\n"
        quiet = 0.0
        while not stopping():
            await anyio.sleep(POLL)
            now = await anyio.to_thread.run_sync(watch.state)
            if now != last:
                last, quiet = now, 0.0
                yield f"event: refs\ndata: {now}\n\n"
            else:
                quiet += POLL
                if quiet >= KEEPALIVE:
                    quiet = 0.0
                    yield ": still here\n\n"

    return StreamingResponse(stream(), media_type="text/event-stream",
                             headers={**HEADERS, "x-accel-buffering": "no"})


def _asset(data: bytes, media_type: str) -> Response:
    return Response(data, media_type=media_type, headers=HEADERS)


_TYPES = {".css": "text/css", ".js": "text/javascript", ".png": "image/png", ".svg": "image/svg+xml"}


def _static(request: Request) -> Response:
    name = request.path_params["name"]
    path = STATIC / name
    if "/" in name or name.startswith(".") or path.suffix not in _TYPES or not path.is_file():
        return Response("Not found.\n", status_code=404, media_type="text/plain", headers=HEADERS)
    return _asset(path.read_bytes(), _TYPES[path.suffix])
