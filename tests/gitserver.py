"""Real git servers for the tests, on 127.0.0.1 at a free port: ``git daemon`` with receive-pack,
and a smart-HTTP host (git's own ``git http-backend`` behind Debian's lighttpd) with basic
authentication and a protected branch.

Both speak git's real wire protocol and run the real ``receive-pack`` on the server, so atomic
pushes (the ``atomic`` capability), the server's own compare-and-swap of each ref under its
lock, and the rejection of a push that lost a race are the ones any git host gives.

- ``GitServer`` (``git daemon``) ships inside Debian's ``git`` package and is one process that
  stops and starts in milliseconds. Its repositories are created permissive, like a default git
  host (a forced push would be accepted), so the tests prove gitspace never forces from the
  server's own reflog (``core.logAllRefUpdates=always``), not from a server that refuses it.
- ``HttpGitServer`` is what teams use (GitHub, GitLab, Gitea speak the same smart HTTP): every
  request needs basic authentication (user ``fleet``, a password made per server), push goes
  through HTTP POSTs to a CGI, and a ``pre-receive`` hook refuses a non-fast-forward push to, or
  the deletion of, the repository's branch, as a protected branch does. Clients get the password
  from a git credential helper (``credential.helper=store --file=...`` in the clone's own
  config, the file mode 600): never from the command line, the URL or the environment.
  ``make test`` installs lighttpd when it is missing; without it the fixture fails saying so.

Invariants (both):
- The server runs in its own session (process group): ``stop`` ends it and every child it
  started (``upload-pack``, ``receive-pack``, CGI processes), and waits until none is left, so a
  stopped server leaves no process behind and a test can check that.
- ``restart`` listens on the same port again: clones keep their remote URL.
- ``git daemon`` logs every request (``--verbose``) to ``log``, with the protocol version a
  client asked for, so a test can check what a client spoke.
- Server-side git reads no system config and, as global config, only ``global_config`` (empty
  unless a test writes server-side settings there, such as a hostile
  ``uploadpack.packObjectsHook``). ``receive.fsckObjects`` is on, as on public hosts.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

START_TIMEOUT = 10.0
STOP_TIMEOUT = 5.0
LIGHTTPD = "/usr/sbin/lighttpd"
HTTP_BACKEND = "/usr/lib/git-core/git-http-backend"
USER = "fleet"


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

    kind = "daemon"

    def __init__(self, root: Path) -> None:
        self.root = root
        self.repos = root / "repos"
        self.repos.mkdir(parents=True, exist_ok=True)
        self.global_config = root / "server.gitconfig"
        self.global_config.touch()
        self.port: int | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = root / "server.log"

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

    # -- clients -----------------------------------------------------------------------------

    def client_config(self) -> list[str]:
        """``git -c`` settings a client needs before it has a config of its own (none here)."""
        return []

    def authorize(self, clone: Path) -> None:
        """Give a clone what it needs to talk to this server (nothing: git daemon is open)."""

    # -- the process -------------------------------------------------------------------------

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
                raise AssertionError(f"{self.kind} could not listen on 127.0.0.1:{port}: "
                                     f"{self.log.read_text(errors='replace')[-2000:]}")
            time.sleep(0.05)

    def command(self, port: int) -> list[str]:
        return ["git", "daemon", "--listen=127.0.0.1", f"--port={port}", "--reuseaddr",
                f"--base-path={self.repos}", "--export-all", "--enable=receive-pack",
                "--informative-errors", "--init-timeout=10", "--timeout=60",
                "--max-connections=64", "--verbose", str(self.repos)]

    def _launch(self, port: int) -> bool:
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(self.command(port), env=self.env(),
                                         stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                         start_new_session=True)
        while self.proc.poll() is None:
            if _accepts(port):
                return True
            time.sleep(0.01)
        self.proc = None  # it exited: the port is taken
        return False

    def stop(self) -> None:
        """End the server and every connection it serves; return once no process is left."""
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
        assert not left, f"{self.kind} left processes behind: {left}"

    def restart(self) -> None:
        self.stop()
        self.start()


PROTECT = """#!/bin/sh
# A protected branch, as a host has: {ref} only moves forward and is never deleted.
zero=0000000000000000000000000000000000000000
while read -r old new ref; do
    [ "$ref" = "{ref}" ] || continue
    if [ "$new" = "$zero" ]; then
        echo "{ref} is a protected branch: it cannot be deleted." >&2
        exit 1
    fi
    if [ "$old" != "$zero" ] && ! git merge-base --is-ancestor "$old" "$new"; then
        echo "{ref} is a protected branch: a non-fast-forward push is refused." >&2
        exit 1
    fi
done
"""

CONFIG = """server.modules = ("mod_alias", "mod_auth", "mod_authn_file", "mod_cgi", "mod_setenv")
server.bind = "127.0.0.1"
server.port = {port}
server.document-root = "{root}/www"
server.errorlog = "{root}/server.log"
server.pid-file = ""
alias.url = ("/git/" => "{backend}/")
$HTTP["url"] =~ "^/git/" {{
    cgi.assign = ("" => "")
    setenv.set-environment = (
        "GIT_PROJECT_ROOT" => "{repos}", "GIT_HTTP_EXPORT_ALL" => "1",
        "GIT_CONFIG_NOSYSTEM" => "1", "GIT_CONFIG_GLOBAL" => "{global_config}",
        "HOME" => "{root}", "PATH" => "/usr/bin:/bin")
    auth.backend = "plain"
    auth.backend.plain.userfile = "{root}/users"
    auth.require = ("" => ("method" => "basic", "realm" => "git", "require" => "valid-user"))
}}
"""


class HttpGitServer(GitServer):
    """``git http-backend`` behind lighttpd: basic authentication, a protected branch."""

    kind = "http"

    def __init__(self, root: Path) -> None:
        if not Path(LIGHTTPD).exists():
            raise AssertionError(f"{LIGHTTPD} is missing: the smart-HTTP test host needs Debian's "
                                 "lighttpd. 'make test' installs it (as root); or run "
                                 "'apt-get install lighttpd'.")
        super().__init__(root)
        (root / "www").mkdir(exist_ok=True)
        self.password = secrets.token_urlsafe(12)
        (root / "users").write_text(f"{USER}:{self.password}\n")
        self.credentials = root / "credentials"  # git-credential-store's file, mode 600

    def create(self, name: str, branch: str = "main") -> str:
        url = super().create(name, branch)
        hook = self.path(name) / "hooks" / "pre-receive"
        hook.write_text(PROTECT.format(ref=f"refs/heads/{branch}"))
        hook.chmod(0o755)
        return url

    def url(self, name: str) -> str:
        assert self.port is not None, "start the server first"
        return f"http://127.0.0.1:{self.port}/git/{name}.git"

    def credential_file(self, password: str | None = None, name: str = "credentials") -> Path:
        """A git-credential-store file holding ``USER`` and ``password`` (the right one unless
        given) for this server."""
        assert self.port is not None, "start the server first"
        path = self.root / name
        path.touch(mode=0o600)
        path.write_text(f"http://{USER}:{password or self.password}@127.0.0.1%3a{self.port}\n")
        return path

    def client_config(self, password: str | None = None) -> list[str]:
        return ["-c", f"credential.helper=store --file={self.credential_file(password)}"]

    def authorize(self, clone: Path, password: str | None = None,
                  name: str = "credentials") -> None:
        store = self.credential_file(password, name)
        subprocess.run(["git", "config", "credential.helper", f"store --file={store}"],
                       cwd=clone, check=True, capture_output=True)

    def command(self, port: int) -> list[str]:
        conf = self.root / "lighttpd.conf"
        conf.write_text(CONFIG.format(port=port, root=self.root, repos=self.repos,
                                      backend=HTTP_BACKEND, global_config=self.global_config))
        return [LIGHTTPD, "-D", "-f", str(conf)]


SERVERS = {"daemon": GitServer, "http": HttpGitServer}


def serving(kind: str, root: Path) -> Iterator[GitServer]:
    server = SERVERS[kind](root)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def git_server(tmp_path: Path) -> Iterator[GitServer]:
    """A running ``git daemon`` for one test, stopped (with every child) when the test ends."""
    yield from serving("daemon", tmp_path / "server")


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[HttpGitServer]:
    """A running smart-HTTP host for one test, stopped (with every child) when it ends."""
    server = HttpGitServer(tmp_path / "server")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(params=sorted(SERVERS))
def any_server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[GitServer]:
    """Each of the two servers in turn."""
    yield from serving(request.param, tmp_path / "server")

