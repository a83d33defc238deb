"""A real git server for the tests: ``git daemon`` with receive-pack on 127.0.0.1, a free port.

Why ``git daemon`` and not Smart HTTP: both speak git's real wire protocol and run the real
``receive-pack`` on the server, so atomic pushes (the ``atomic`` capability), the server's own
compare-and-swap of each ref under its lock, and the rejection of a push that lost a race are the
ones any git host gives. ``git daemon`` ships inside Debian's ``git`` package, which the suite
needs anyway, so nothing else has to be installed (Smart HTTP needs a web server package and a
CGI setup around ``git http-backend``), and it is one process that stops and starts in
milliseconds, which the outage tests do mid-run. What it does not exercise is HTTP itself
(authentication, proxies); gitspace only ever talks to git through ``git fetch``/``git push``,
so that layer is git's, not ours.

Invariants:
- The server runs in its own session (process group): ``stop`` ends the daemon and every
  per-connection child it forked (``upload-pack``, ``receive-pack``), and waits until none is
  left, so a stopped server leaves no process behind and a test can check that.
- ``restart`` listens on the same port again (``--reuseaddr``): clones keep their remote URL.
- The daemon reads no system config and, as global config, only ``global_config`` (empty unless
  a test writes server-side settings there, such as a hostile ``uploadpack.packObjectsHook``).
- Repositories are created permissive, like a default git host (a forced push would be
  accepted), so the tests prove gitspace never forces from the server's own reflog
  (``core.logAllRefUpdates=always``), not from a server that refuses to be forced.
  ``receive.fsckObjects`` is on, as on public hosts: a pushed object that fails fsck is refused.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

START_TIMEOUT = 10.0
STOP_TIMEOUT = 5.0


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def _live_members(pgid: int) -> list[int]:
    """Processes of group ``pgid`` that are not zombies (PID 1 here may never reap them)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path("/proc", entry, "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            found.append(int(entry))
    return found


class GitServer:
    """``git daemon --enable=receive-pack`` serving the bare repositories under ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.repos = root / "repos"
        self.repos.mkdir(parents=True, exist_ok=True)
        self.global_config = root / "server.gitconfig"
        self.global_config.touch()
        self.port: int | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = root / "daemon.log"

    # -- repositories ------------------------------------------------------------------------

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=str(self.global_config),
                   HOME=str(self.root))
        return env

    def git(self, name: str, *args: str) -> str:
        """Run git in the server's bare repository ``name`` (as the host's admin would)."""
        proc = subprocess.run(["git", *args], cwd=self.path(name), env=self.env(),
                              capture_output=True)
        assert proc.returncode == 0, f"server git {' '.join(args)}: {proc.stderr.decode()}"
        return proc.stdout.decode("utf-8", "surrogateescape")

    def create(self, name: str, branch: str = "main") -> str:
        """A new empty bare repository; returns its URL (valid while the port stays the same)."""
        path = self.path(name)
        subprocess.run(["git", "init", "-q", "--bare", "-b", branch, str(path)], env=self.env(),
                       check=True, capture_output=True)
        for key, value in (("core.logAllRefUpdates", "always"), ("receive.fsckObjects", "true"),
                           ("gc.auto", "0")):
            self.git(name, "config", key, value)
        return self.url(name)

    def path(self, name: str) -> Path:
        return self.repos / f"{name}.git"

    def url(self, name: str) -> str:
        assert self.port is not None, "start the server first"
        return f"git://127.0.0.1:{self.port}/{name}.git"

    def refs(self, name: str) -> dict[str, str]:
        out = self.git(name, "for-each-ref", "--format=%(refname) %(objectname)")
        return dict(line.split(" ", 1) for line in out.splitlines())

    # -- the daemon --------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> None:
        """Listen on a free port, or on the same port again after ``stop``."""
        assert not self.running, "the server is already running"
        fixed = self.port is not None
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            port = self.port if fixed else _free_port()
            assert port is not None
            if self._launch(port):
                self.port = port
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"git daemon could not listen on 127.0.0.1:{port}: "
                                     f"{self.log.read_text(errors='replace')[-2000:]}")
            time.sleep(0.05)

    def _launch(self, port: int) -> bool:
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                ["git", "daemon", "--listen=127.0.0.1", f"--port={port}", "--reuseaddr",
                 f"--base-path={self.repos}", "--export-all", "--enable=receive-pack",
                 "--informative-errors", "--init-timeout=10", "--timeout=60",
                 "--max-connections=64", str(self.repos)],
                env=self.env(), stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                start_new_session=True)
        while self.proc.poll() is None:
            if _accepts(port):
                return True
            time.sleep(0.01)
        self.proc = None  # it exited: the port is taken
        return False

    def stop(self) -> None:
        """End the daemon and every connection it serves; return once no process is left."""
        if self.proc is None:
            return
        pgid = self.proc.pid
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(pgid, sig)
            except ProcessLookupError:
                break
            deadline = time.monotonic() + STOP_TIMEOUT
            while time.monotonic() < deadline:
                self.proc.poll()
                if self.proc.returncode is not None and not _live_members(pgid):
                    break
                time.sleep(0.01)
            else:
                continue  # still there: kill harder
            break
        self.proc.wait(timeout=STOP_TIMEOUT)
        left = _live_members(pgid)
        self.proc = None
        assert not left, f"git daemon left processes behind: {left}"

    def restart(self) -> None:
        self.stop()
        self.start()

    def leftover_processes(self, pgid: int) -> list[int]:
        return _live_members(pgid)


@pytest.fixture
def git_server(tmp_path: Path) -> Iterator[GitServer]:
    """A running git server for one test, stopped (with every child) when the test ends."""
    server = GitServer(tmp_path / "server")
    server.start()
    try:
        yield server
    finally:
        server.stop()
