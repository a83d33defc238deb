"""The test git servers are real ones: wire protocol, atomic pushes, ref races, outages, cleanup;
the smart-HTTP host's authentication and protected branch."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

from conftest import git, git_run
from fleet import clone
from gitserver import GitServer, HttpGitServer, _live_members


def _clone(url: str, target: Path) -> Path:
    git(target.parent, "clone", "-q", url, str(target))
    return target


def _commit(root: Path, name: str) -> str:
    (root / name).write_text(name + "\n")
    git(root, "add", name)
    git(root, "commit", "-q", "-m", name)
    return git(root, "rev-parse", "HEAD").strip()


def test_push_and_clone_over_the_wire(tmp_path: Path, git_server: GitServer) -> None:
    url = git_server.create("r")
    assert url.startswith("git://127.0.0.1:")
    a = _clone(url, tmp_path / "a")
    tip = _commit(a, "one")
    git(a, "push", "-q", "origin", "main")
    assert git_server.refs("r") == {"refs/heads/main": tip}
    b = _clone(url, tmp_path / "b")
    assert git(b, "rev-parse", "HEAD").strip() == tip


def test_atomic_push_moves_all_refs_or_none(tmp_path: Path, git_server: GitServer) -> None:
    url = git_server.create("r")
    a = _clone(url, tmp_path / "a")
    _commit(a, "one")
    git(a, "push", "-q", "origin", "main")
    b = _clone(url, tmp_path / "b")
    theirs = _commit(b, "theirs")
    git(b, "push", "-q", "origin", "main")
    _commit(a, "mine")  # main can no longer fast-forward; topic could be created
    proc = git_run(a, "push", "--atomic", "origin", "main:refs/heads/main",
                   "main:refs/heads/topic")
    assert proc.returncode != 0
    assert "atomic" in proc.stderr.decode()
    assert git_server.refs("r") == {"refs/heads/main": theirs}  # topic was not created either


def test_the_server_decides_a_ref_race(tmp_path: Path, git_server: GitServer) -> None:
    """Two pushes that each saw the same old tip: the server's ref lock lets exactly one win."""
    url = git_server.create("r")
    a = _clone(url, tmp_path / "a")
    base = _commit(a, "base")
    git(a, "push", "-q", "origin", "main")
    b = _clone(url, tmp_path / "b")
    _commit(a, "from-a")
    _commit(b, "from-b")
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "pre-receive").write_text("#!/bin/sh\nsleep 1\n")  # both pushes pass the check
    (hooks / "pre-receive").chmod(0o755)
    git_server.git("r", "config", "core.hooksPath", str(hooks))
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    pushes = [subprocess.Popen(["git", "push", "--porcelain", "origin", "main"], cwd=root, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
              for root in (a, b)]
    results = [(p.wait(timeout=30), p.communicate()) for p in pushes]
    codes = sorted(code for code, _ in results)
    assert codes[0] == 0 and codes[1] != 0, results
    loser = next(out + err for code, (out, err) in results if code != 0).decode()
    assert "cannot lock ref 'refs/heads/main'" in loser, loser
    tip = git_server.refs("r")["refs/heads/main"]
    assert tip != base and git_server.git("r", "merge-base", "--is-ancestor", base, tip) == ""


def test_stop_ends_every_connection_and_restart_keeps_the_url(tmp_path: Path,
                                                             git_server: GitServer) -> None:
    url = git_server.create("r")
    a = _clone(url, tmp_path / "a")
    _commit(a, "one")
    git(a, "push", "-q", "origin", "main")
    # A client that connects and says nothing keeps a forked child of the daemon busy.
    hung = socket.create_connection(("127.0.0.1", git_server.port or 0))
    assert git_server.proc is not None
    pgid = git_server.proc.pid
    git_server.stop()
    hung.close()
    assert not _live_members(pgid)
    failed = git_run(a, "fetch", "origin")
    assert failed.returncode != 0 and "127.0.0.1" in failed.stderr.decode()
    git_server.start()
    assert git_server.url("r") == url
    _commit(a, "two")
    git(a, "push", "-q", "origin", "main")
    assert git_server.git("r", "fsck", "--strict", "--no-progress") == ""


def test_a_pushed_object_that_fails_fsck_is_refused(tmp_path: Path, git_server: GitServer) -> None:
    url = git_server.create("r")
    a = _clone(url, tmp_path / "a")
    _commit(a, "one")
    tree = git(a, "mktree", input=b"100644 blob " + git(a, "rev-parse", "HEAD:one").encode()
               .strip() + b"\t.GIT\n").strip()
    bad = git(a, "commit-tree", tree, "-p", "HEAD", "-m", "hasDotgit").strip()
    proc = git_run(a, "push", "origin", f"{bad}:refs/heads/main")
    assert proc.returncode != 0
    assert "refs/heads/main" not in git_server.refs("r")


# -- the smart-HTTP host --------------------------------------------------------------------


def test_http_needs_the_password_from_a_credential_helper(tmp_path: Path,
                                                          http_server: HttpGitServer) -> None:
    url = http_server.create("r")
    assert url.startswith("http://127.0.0.1:") and http_server.password not in url
    anonymous = git_run(tmp_path, "clone", "-q", url, str(tmp_path / "anon"))
    assert anonymous.returncode != 0
    assert "Authentication failed" in anonymous.stderr.decode() or \
        "could not read Username" in anonymous.stderr.decode()
    wrong = git_run(tmp_path, *http_server.client_config("not-the-password"), "clone", "-q", url,
                    str(tmp_path / "wrong"))
    assert wrong.returncode != 0 and "Authentication failed" in wrong.stderr.decode()
    a = clone(http_server, url, tmp_path / "a")
    tip = _commit(a, "one")
    git(a, "push", "-q", "origin", "main")  # the clone's own config names the helper
    assert http_server.refs("r") == {"refs/heads/main": tip}
    assert http_server.password not in git(a, "config", "--list")


def test_http_protects_the_branch_from_forced_pushes_and_deletion(
        tmp_path: Path, http_server: HttpGitServer) -> None:
    url = http_server.create("r")
    a = clone(http_server, url, tmp_path / "a")
    _commit(a, "one")
    git(a, "push", "-q", "origin", "main")
    tip = _commit(a, "two")
    git(a, "push", "-q", "origin", "main")
    git(a, "reset", "-q", "--hard", "HEAD~1")
    _commit(a, "rewritten")
    forced = git_run(a, "push", "--force", "origin", "main")
    assert forced.returncode != 0
    assert "protected branch: a non-fast-forward push is refused" in forced.stderr.decode()
    deleted = git_run(a, "push", "origin", ":main")
    assert deleted.returncode != 0 and "cannot be deleted" in deleted.stderr.decode()
    git(a, "push", "-q", "origin", "HEAD:refs/heads/topic")  # other branches are not protected
    git(a, "push", "-q", "--force", "origin", "HEAD~1:refs/heads/topic")
    assert http_server.refs("r")["refs/heads/main"] == tip


def test_http_stops_every_process_and_restarts_on_the_same_url(
        tmp_path: Path, http_server: HttpGitServer) -> None:
    url = http_server.create("r")
    a = clone(http_server, url, tmp_path / "a")
    _commit(a, "one")
    git(a, "push", "-q", "origin", "main")
    hung = socket.create_connection(("127.0.0.1", http_server.port or 0))
    assert http_server.proc is not None
    pgid = http_server.proc.pid
    http_server.stop()
    hung.close()
    assert not _live_members(pgid)
    failed = git_run(a, "fetch", "origin")
    assert failed.returncode != 0 and "127.0.0.1" in failed.stderr.decode()
    http_server.start()
    assert http_server.url("r") == url
    _commit(a, "two")
    git(a, "push", "-q", "origin", "main")
    assert http_server.git("r", "fsck", "--strict", "--no-progress") == ""
