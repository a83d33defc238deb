"""A fleet through the smart-HTTP host (tests/gitserver.py's ``HttpGitServer``: basic
authentication, a protected branch): credentials only from a git credential helper, a wrong
password stops with a clear sentence and loses nothing, and the protected branch never sees a
forced update from sync.

The four-clone runs against this host (with and without a restart mid-run) are
tests/team/test_fleet.py's, parametrized over both servers.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import assert_clean, call_ok, git, state
from fleet import assert_never_forced, machine, remote_ops, seed
from gitserver import HttpGitServer

import gitspace
from gitspace.errors import Conflict
from gitspace.team.remote import AccessDenied
from gitspace.team.sync import sync
from gitspace.team.sync_watch import Watch


def everything_gitspace_keeps(ws: gitspace.Workspace) -> str:
    """The clone's config and every file of gitspace's own state, as text."""
    parts = [git(ws.root, "config", "--list", "--show-origin")]
    for path in sorted(ws.writer.state_dir.rglob("*")):
        if path.is_file():
            parts.append(path.read_text(errors="replace"))
    return "\n".join(parts)


def test_a_wrong_password_is_a_clear_error_and_nothing_is_lost(
        tmp_path: Path, http_server: HttpGitServer) -> None:
    a = seed(tmp_path, http_server)
    b = machine(tmp_path, http_server, 1)
    mine = [call_ok(b, "append", {"path": "shared/log.md", "text": f"b{n}\n"}).op
            for n in range(2)]
    http_server.authorize(b.root, password="not-the-password", name="wrong")
    before, remote_before = state(b.root), http_server.refs("fleet")
    for attempt in (lambda: sync(b), lambda: Watch(b, "origin", every=5.0).step()):
        with pytest.raises(AccessDenied) as denied:
            attempt()
        text = denied.value.message + " " + (denied.value.hint or "")
        assert "origin refused this clone's credentials" in text
        assert "Authentication failed" in text and "credential helper" in text
        assert "Nothing was changed here" in text
        assert http_server.password not in text and "not-the-password" not in text
        assert state(b.root) == before and http_server.refs("fleet") == remote_before
        http_server.authorize(b.root, password="not-the-password", name="wrong")
    assert http_server.password not in everything_gitspace_keeps(b)
    assert_clean(b.root)
    # The right password again: every op goes out once, nothing was forced.
    http_server.authorize(b.root)
    done = sync(b)
    assert done.pushed == 2
    assert [op.op_id for op in remote_ops(http_server)][-2:] == mine
    assert sync(a).pulled == 2
    assert_never_forced(http_server)
    a.close()
    b.close()


def test_the_watch_ends_on_a_wrong_password_instead_of_retrying(
        tmp_path: Path, http_server: HttpGitServer) -> None:
    seed(tmp_path, http_server).close()
    b = machine(tmp_path, http_server, 1)
    queued = call_ok(b, "append", {"path": "shared/log.md", "text": "queued\n"}).op
    http_server.authorize(b.root, password="not-the-password", name="wrong")
    env = {k: v for k, v in os.environ.items() if k != "GITSPACE_AGENT"}
    watcher = subprocess.run(
        [sys.executable, "-m", "gitspace", "-C", str(b.root), "sync", "--watch", "--every", "0.2"],
        capture_output=True, text=True, env=env, timeout=60)
    assert watcher.returncode == 1, watcher.stderr
    assert "refused this clone's credentials" in watcher.stderr
    assert "Traceback" not in watcher.stderr and http_server.password not in watcher.stderr
    assert queued not in [op.op_id for op in remote_ops(http_server)]
    assert b.repo.read_ref("refs/heads/main") == b.tip()
    assert_clean(b.root)
    b.close()


def test_sync_never_forces_the_protected_branch(tmp_path: Path,
                                               http_server: HttpGitServer) -> None:
    a = seed(tmp_path, http_server)
    b = machine(tmp_path, http_server, 1)
    for n in range(2):
        call_ok(a, "append", {"path": "shared/log.md", "text": f"a{n}\n"})
        call_ok(b, "append", {"path": "shared/log.md", "text": f"b{n}\n"})
        sync(a)
        sync(b)  # re-runs b's op on a's: a fast-forward, which the protected branch takes
    assert sync(a).pulled == 1
    assert git(a.root, "rev-parse", "HEAD") == git(b.root, "rev-parse", "HEAD")
    assert len(remote_ops(http_server)) == 3 + 4
    assert_never_forced(http_server)
    a.close()
    b.close()


def test_a_push_the_host_refuses_for_its_own_reason_stops_and_keeps_the_ops(
        tmp_path: Path, http_server: HttpGitServer) -> None:
    seed(tmp_path, http_server).close()
    b = machine(tmp_path, http_server, 1)
    mine = call_ok(b, "append", {"path": "shared/log.md", "text": "b1\n"}).op
    hook = http_server.path("fleet") / "hooks" / "pre-receive"
    protect = hook.read_text()
    hook.write_text("#!/bin/sh\necho 'policy: the branch is frozen for the release' >&2\nexit 1\n")
    remote_before = http_server.refs("fleet")
    with pytest.raises(Conflict) as refused:
        sync(b)
    assert "origin refused the push" in refused.value.message
    assert "the branch is frozen for the release" in refused.value.message
    assert refused.value.hint is not None
    assert refused.value.hint.startswith("The server's message says why; a hook or a protected")
    assert http_server.refs("fleet") == remote_before
    assert mine not in [op.op_id for op in remote_ops(http_server)]
    hook.write_text(protect)
    assert sync(b).pushed == 1  # the op was kept here, and goes out once the host takes it
    assert [op.op_id for op in remote_ops(http_server)][-1] == mine
    assert_never_forced(http_server)
    assert_clean(b.root)
    b.close()
