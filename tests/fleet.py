"""A fleet on one branch, set up for tests: a seeded remote on the test git server, clones of it
("machines") with agents of their own, and what the server's branches hold.

Shared by the sync, fleet, crash, hostile-remote and CLI tests: import these by name, never from a
test module.
"""

from __future__ import annotations

from pathlib import Path

from conftest import call_ok, git
from fleet_agent import BOARD
from gitserver import GitServer

import gitspace
from gitspace.errors import LedgerError
from gitspace.storage import ledger
from gitspace.storage.refs import ZERO
from gitspace.team.sync import sync


def seed(tmp_path: Path, server: GitServer, name: str = "fleet") -> gitspace.Workspace:
    """The first machine: a workspace with a shared board and log, synced to a new remote."""
    url = server.create(name)
    ws = gitspace.init(tmp_path / "m0", agent="agent-0")
    call_ok(ws, "create", {"path": "shared/board.md", "file_text": BOARD})
    call_ok(ws, "create", {"path": "shared/log.md", "file_text": "log\n"})
    git(ws.root, "remote", "add", "origin", url)
    server.authorize(ws.root)
    sync(ws)
    return ws


def machine(tmp_path: Path, server: GitServer, n: int, name: str = "fleet",
            agent: str | None = None) -> gitspace.Workspace:
    """Another machine: a clone of the remote, with an agent of its own."""
    target = tmp_path / f"m{n}"
    clone(server, server.url(name), target)
    return gitspace.open(target, agent=agent or f"agent-{n}")


def clone(server: GitServer, url: str, target: Path) -> Path:
    """``git clone`` from ``server``; the clone keeps the server's credential helper."""
    git(target.parent, *server.client_config(), "clone", "-q", url, str(target))
    server.authorize(target)
    return target


def remote_ops(server: GitServer, name: str = "fleet") -> list[ledger.Op]:
    """The ops on the remote's main branch, oldest first."""
    return ops_of(server.path(name))


def ops_of(bare: Path, rev: str = "refs/heads/main") -> list[ledger.Op]:
    """The ops on ``rev`` of a bare repository, oldest first (a malformed block is none)."""
    out = git(bare, "log", "-z", "--format=%B", "--reverse", rev, "--")
    found = []
    for message in out.split("\0"):
        if message.strip():
            try:
                op = ledger.parse_message(message.lstrip("\n"))
            except LedgerError:
                continue  # a malformed block (a hostile remote's) is not an op
            if op is not None:
                found.append(op)
    return found


def assert_never_forced(server: GitServer, name: str = "fleet") -> None:
    """Every update the server ever logged kept the old commit in the new one's history."""
    bare = server.path(name)
    logs = [p for p in (bare / "logs" / "refs").rglob("*") if p.is_file()]
    assert logs, "the server logged no ref update"
    for log in logs:
        for line in log.read_text().splitlines():
            old, new = line.split()[:2]
            if old != ZERO and new != ZERO:
                assert git(bare, "merge-base", "--is-ancestor", old, new) == "", (log, line)
