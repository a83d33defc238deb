"""The resident recorder's server: ``python -m gitspace.harness.resident.server ROOT``.

Invariants (the package's docstring says what the resident is for):
- It serves one checkout, on 127.0.0.1 and the port ``hooks install`` chose for it; the port is
  also what keeps two of them apart (a second one finds it taken, and stops). Its pid file is
  written once the socket is bound and removed when it stops.
- Every request passes ``http_guard.refusal`` (Host, Origin, the secret in constant time, POST
  only) before its body is read; a body is at most the hook's payload cap. ``POST
  /hook/<harness>[?flag...]`` of a known harness, with the flags a hook command takes, is what
  is served, and ``POST /git/<hook>[?arg]``: git's own hooks of the checkout (a commit's
  authorship note, ``provenance/githook.py``) ask here first, so that a commit made while a
  session is open pays for no process start and no import.
- Requests are recorded one at a time, in arrival order, under one lock: each is kept in the
  journal first, what a killed resident left is recorded before it, and it is recorded by
  ``hook.run``, what the hook runs in its own process. The answer (200, with what the harness's
  hook prints) is sent once it is recorded.
- In a checkout of at least ``config.resident_watch_from()`` files (50,000), a shell command's
  end is handed what the watcher saw change since the last scan (``watch.Watcher``: the scan then
  starts no ``git status``; in a smaller one that status costs less than the watch); a turn's
  start and end, and a shell command's end, are scans, after which what the watcher saw before
  them is forgotten.
- It stops after ``config.resident_idle()`` seconds without a request while no session it saw
  start is still open (a ``SessionEnd`` closes one), after four times that in any case (a
  session whose harness died sends no end), and after answering a request that found the
  installed gitspace changed since it started (an upgrade).
"""

from __future__ import annotations

import io
import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from ... import config, http_guard
from ...storage import loose, statefiles
from .. import adapters
from . import home, journal
from .client import NOTES
from .watch import Watcher

CHECK_EVERY = 2.0  # seconds between two looks at whether the installed gitspace changed
# git's hooks served (``githooks._RESIDENT`` asks), each with the arguments git gives it.
GIT_HOOKS: dict[str, list[list[str]]] = {"post-commit": [[]], "post-rewrite": [["amend"], ["rebase"]],
             "post-merge": [["0"], ["1"]]}


def installed() -> tuple[tuple[str, int, int], ...]:
    """What the installed gitspace is made of, as the file system sees it: an upgrade changes it."""
    package = Path(__file__).resolve().parents[2]
    found = []
    for path in sorted(package.rglob("*.py")):
        try:
            st = path.stat()
        except OSError:
            continue
        found.append((str(path.relative_to(package)), st.st_mtime_ns, st.st_size))
    return tuple(found)


class Resident:
    """One checkout's recorder: what every request shares."""

    def __init__(self, root: Path, gitdir: Path, port: int, secret: str) -> None:
        self.root, self.gitdir, self.port, self.secret = root, gitdir, port, secret
        self.hosts = frozenset(f"{name}:{port}" for name in http_guard.LOOPBACK_NAMES)
        self.lock = threading.Lock()
        self.last = time.monotonic()
        self.made_of, self.looked = installed(), time.monotonic()
        self.stale = False
        self.sessions: set[str] = set()  # sessions seen starting and not yet ending
        self.watcher = Watcher(root, gitdir)
        self.scanned: int | None = None  # the watcher's count when the last scan began

    def refusal(self, method: str, headers: dict[str, str]) -> tuple[int, str] | None:
        refused = http_guard.refusal(headers, self.hosts, self.secret, method, ("POST",))
        return None if refused is None else refused[:2]

    def record(self, harness: str, flags: list[str], payload: bytes) -> str:
        """Record one request (see the module docstring); what the recording said (the notes a
        hook writes to stderr)."""
        with self.lock:
            self.last = time.monotonic()
            self._open_or_close(payload)
            kept = journal.keep(self.gitdir, harness, flags, payload)
            try:
                journal.replay(self.gitdir, self._run, keep_only={kept})
                shell_end, scans = _scans(harness, payload)
                mark = self.watcher.mark() if scans else None
                hint = self.watcher.since(self.scanned) if shell_end else None
                said = self._run(harness, flags, payload, hint)
                if mark is not None:
                    self.scanned = mark
                    self.watcher.forget(mark)
            finally:
                journal.done(self.gitdir, kept)
                self.last = time.monotonic()
            self._check_installed()
        return said

    def git_hook(self, name: str, args: list[str], data: bytes) -> int:
        """Run git's hook ``name`` in this checkout, one request at a time as every recording
        is (it takes the checkout's lock as the hook's own process would); its exit code."""
        from ...provenance import githook

        with self.lock:
            self.last = time.monotonic()
            try:
                return githook.run(name, args, data, self.root)
            finally:
                self.last = time.monotonic()
                self._check_installed()

    def _open_or_close(self, payload: bytes) -> None:
        """Count the sessions open (a session's start and end: see ``idle``)."""
        try:
            data = json.loads(payload)
        except (ValueError, RecursionError):
            return
        if not isinstance(data, dict) or not isinstance(data.get("session_id"), str):
            return
        event = data.get("hook_event_name")
        if event == "SessionStart":
            self.sessions.add(data["session_id"])
        elif event == "SessionEnd":
            self.sessions.discard(data["session_id"])

    def idle(self, limit: float) -> bool:
        """Is it time to stop (see the module docstring)?"""
        quiet = time.monotonic() - self.last
        return not self.lock.locked() and (quiet >= limit * 4 or quiet >= limit
                                           and not self.sessions)

    def _run(self, harness: str, flags: list[str], payload: bytes,
             changed: frozenset[str] | None = None) -> str:
        from ..hook import run

        said = io.StringIO()
        run(harness, set(flags), payload, said, str(self.root), changed)
        if said.getvalue():
            sys.stderr.write(said.getvalue())
            sys.stderr.flush()
        return said.getvalue()

    def _check_installed(self) -> None:
        if time.monotonic() - self.looked < CHECK_EVERY:
            return
        self.looked = time.monotonic()
        if installed() != self.made_of:
            self.stale = True


def _scans(harness: str, payload: bytes) -> tuple[bool, bool]:
    """(Is this a shell command's end, does its recording scan the work tree?)"""
    from ..payload import parse

    try:
        event = adapters.adapter(harness).event(parse(payload))
    except Exception:  # noqa: BLE001  (hook.run says what is wrong with it)
        return False, False
    shell_end = event.kind in ("after", "failed") and event.call is not None \
        and event.call.paths is None
    return shell_end, shell_end or event.kind in ("prompt", "stop")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # (a harness keeps its connection open between calls)
    # The answer goes out as its headers and then its body: with Nagle's algorithm on, the body
    # waits for the client's delayed acknowledgement of the headers, about 40 ms a request.
    disable_nagle_algorithm = True
    server: _Server

    def _headers(self) -> dict[str, str]:
        found: dict[str, str] = {}
        for key, value in self.headers.items():
            found.setdefault(key.lower(), value)
        return found

    def _answer(self, status: int, text: str) -> None:
        body = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json" if status == 200 else
                         "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _serve(self) -> None:
        resident = self.server.resident
        refused = resident.refusal(self.command, self._headers())
        if refused is not None:
            self.close_connection = True
            self._answer(refused[0], refused[1] + "\n")
            return
        path, _, query = self.path.partition("?")
        if path.startswith("/git/"):
            self._git(path.removeprefix("/git/"), [a for a in query.split("&") if a])
            return
        name = path.removeprefix("/hook/")
        flags = [f"--{f}" for f in query.split("&") if f]
        if not path.startswith("/hook/") or name not in adapters.ADAPTERS or any(
                f not in ("--quiet-outside", "--commit-transcript") for f in flags):
            self._answer(404, "Only POST /hook/<harness> is served here.\n")
            return
        payload = self._body()
        if payload is None:
            return
        said = resident.record(name, flags, payload)
        # A hook of ours asks for what the recording said; a harness, for what its hook prints.
        notes = self.headers.get(NOTES) == "1"
        self._answer(200, said if notes else adapters.adapter(name).SPEC.stdout)
        if resident.stale:
            self.server.stop()

    def _body(self) -> bytes | None:
        """The request's body, or None once the request was answered with why not."""
        from ..payload import MAX_PAYLOAD

        length = self.headers.get("Content-Length", "")
        if not length.isdigit() or int(length) > MAX_PAYLOAD:
            self.close_connection = True
            self._answer(413 if length.isdigit() else 411,
                         f"A hook's payload is one JSON object of at most {MAX_PAYLOAD >> 20} "
                         "MiB, with its Content-Length.\n")
            return None
        return self.rfile.read(int(length))

    def _git(self, name: str, args: list[str]) -> None:
        resident = self.server.resident
        if args not in GIT_HOOKS.get(name, []):
            self._answer(404, "Only git's post-commit, post-rewrite (amend, rebase) and "
                              "post-merge (0, 1) are served at /git/.\n")
            return
        data = self._body()
        if data is None:
            return
        self._answer(200, f"{resident.git_hook(name, args, data)}\n")
        if resident.stale:
            self.server.stop()

    do_POST = _serve

    def do_GET(self) -> None:  # noqa: N802  (http.server's names)
        self._serve()

    do_PUT = do_DELETE = do_PATCH = do_HEAD = do_GET

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass  # (a request is no news: what it recorded is in the history)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, resident: Resident) -> None:
        self.resident = resident
        super().__init__((home.HOST, resident.port), _Handler)

    def stop(self) -> None:
        threading.Thread(target=self.shutdown, daemon=True).start()

    def handle_error(self, request: object, client_address: object) -> None:
        """A client gone mid-request (a harness stopped waiting) is no fault of the recorder's;
        anything else is said in one line of its log."""
        error = sys.exc_info()[1]
        if not isinstance(error, ConnectionError):
            sys.stderr.write(f"gitspace: resident recorder: {type(error).__name__}: {error}\n")


def _idle(server: _Server, idle: float) -> None:
    """Stop the server after ``idle`` seconds without a request."""
    while True:
        time.sleep(min(idle / 4, 5.0))
        if server.resident.idle(idle):
            server.stop()
            return


def _files(gitdir: Path) -> int:
    """How many entries the checkout's index holds (its header says: "DIRC", version, count);
    0 when it cannot be read. Watching pays for itself only in a large checkout (measured by
    benchmarks/hooks.py: at 1,000 files the watch cost each call about 30 ms, a shell's
    ``git status`` 7)."""
    try:
        fd = os.open(gitdir / "index", os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return 0
    try:
        head = os.read(fd, 12)
    finally:
        os.close(fd)
    return int.from_bytes(head[8:12], "big") if len(head) == 12 and head[:4] == b"DIRC" else 0


def serve(root: Path) -> int:
    """Serve ``root``'s checkout until idle or stale; the exit status."""
    found = loose.find(root)
    if found is None:
        sys.stderr.write(f"gitspace: {root} is no checkout gitspace can find; no resident "
                         "recorder was started.\n")
        return 1
    top, gitdir, _ = found
    port, secret = home.port(gitdir), home.secret(gitdir)
    if port is None or not secret:
        sys.stderr.write("gitspace: no resident recorder is set up here ('gitspace hooks install "
                         "claude-code' sets one up).\n")
        return 1
    try:
        server = _Server(Resident(top, gitdir, port, secret))
        if _files(gitdir) >= config.resident_watch_from():
            server.resident.watcher.start()
    except OSError as e:  # the port is taken: most likely by another resident of this checkout
        if home.alive(gitdir) is None:
            sys.stderr.write(f"gitspace: port {port} is taken ({e.strerror}); the hooks record "
                             "in their own processes.\n")
        return 0
    me = f"{os.getpid()}\n".encode()
    statefiles.write(gitdir, home.PID, me)
    threading.Thread(target=_idle, args=(server, config.resident_idle()), daemon=True).start()
    # ``hooks uninstall`` stops it: after the request it is recording, never in the middle.
    signal.signal(signal.SIGTERM, lambda *_: server.stop())
    try:
        server.serve_forever(poll_interval=0.5)
    finally:
        server.server_close()
        try:
            if statefiles.read(gitdir, home.PID, limit=64) == me:
                statefiles.remove(gitdir, home.PID)
        except (OSError, statefiles.StateRefused):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(serve(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(".")))
