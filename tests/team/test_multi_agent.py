"""Several agents on one existing repository at once: separate worktrees and one shared branch.

Real processes start together: three agents each in a worktree of their own, and three more
writing into one shared worktree (one branch). Afterwards every acknowledged op is on its branch
exactly once, in each writer's order, ``git fsck`` passes, and the user's checkout is unchanged.
All the while ``gitspace ui`` serves the repository and a reader keeps loading its pages: the view
holds no lock an op needs, so every writer finishes as it would without it.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import git, git_run, ops
from ui_server import fetch, serving
from user_repo import checkout_state, make_user_repo, status

import gitspace
from gitspace.core.timeline import verify
from gitspace.errors import LockTimeout
from gitspace.team import attach

WORKER = textwrap.dedent("""
    import sys
    import gitspace
    root, me, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    ws = gitspace.open(root, agent=me)
    print("ready", flush=True)
    sys.stdin.readline()  # start together
    for n in range(count):
        # shared.txt first: each agent's latest op is then on a file of its own (see the undo).
        for path in ("shared.txt", f"own/{me}.txt"):
            r = ws.call("append", {"path": path, "text": f"{me}:{n}\\n"})
            if not r.ok:
                print("FAILED", r.text.replace("\\n", " "), flush=True)
                sys.exit(1)
            print(r.op, flush=True)
    ws.close()
""")

OPS = 15
SOLO = ["solo-0", "solo-1", "solo-2"]
TEAM = ["team-0", "team-1", "team-2"]


@contextmanager
def reading(view: str) -> Iterator[list[int]]:
    """A reader that loads the view's pages (timeline, graph of every branch, an agent branch's
    timeline) in a loop for the block; the statuses it got, in order."""
    answers: list[int] = []
    done = threading.Event()

    def read() -> None:
        pages = ("/", "/graph", "/?branch=agent/team", "/?branch=*&q=team")
        while not done.is_set():
            for page in pages:
                try:
                    answers.append(fetch(view + page)[0])
                except OSError:  # no answer at all (refused, reset, timed out)
                    answers.append(-1)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        yield answers
    finally:
        done.set()
        reader.join(timeout=60)


def test_agents_on_separate_worktrees_and_on_one_shared_branch(tmp_path: Path) -> None:
    user = make_user_repo(tmp_path / "user")
    before, listed = checkout_state(user), status(user)
    user_main = git(user, "rev-parse", "main")
    places = {name: attach.attach(user, name).path for name in SOLO}
    shared = attach.attach(user, "team").path
    places.update(dict.fromkeys(TEAM, shared))

    with serving(user) as view, reading(view) as answers:
        children = {
            name: subprocess.Popen([sys.executable, "-c", WORKER, str(path), name, str(OPS)],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
            for name, path in places.items()
        }
        for child in children.values():
            assert child.stdout is not None and child.stdout.readline() == "ready\n"
        for child in children.values():
            assert child.stdin is not None
            child.stdin.write("go\n")
            child.stdin.flush()
        acknowledged = {}
        for name, child in children.items():
            out, err = child.communicate(timeout=120)
            assert child.returncode == 0, out + err
            acknowledged[name] = out.split()
            assert len(acknowledged[name]) == 2 * OPS
    assert len(answers) >= 4 and set(answers) == {200}, f"the view failed meanwhile: {answers}"

    for name in SOLO:
        recorded = ops(user, f"agent/{name}")
        assert [op.op_id for op in recorded] == acknowledged[name]
        assert {op.agent for op in recorded} == {name}
    team = ops(user, "agent/team")
    counts = Counter(op.op_id for op in team)
    assert len(team) == 2 * OPS * len(TEAM)
    assert all(counts[i] == 1 for name in TEAM for i in acknowledged[name]), "an op was lost"
    lines = (shared / "shared.txt").read_text().splitlines()
    for name in TEAM:
        assert [line for line in lines if line.startswith(name)] == [
            f"{name}:{n}" for n in range(OPS)], f"{name}'s appends are missing or out of order"
        assert (shared / "own" / f"{name}.txt").read_text() == "".join(
            f"{name}:{n}\n" for n in range(OPS))

    # On the shared branch, each agent's undo reverts its own latest op, not the newest one.
    for name in TEAM:
        with gitspace.open(shared, agent=name) as ws:
            result = ws.call("undo", {})
            assert result.ok, result.text
            assert ops(user, "agent/team")[-1].undo_of == (acknowledged[name][-1],)
        assert (shared / "own" / f"{name}.txt").read_text() == "".join(
            f"{name}:{n}\n" for n in range(OPS - 1))
    assert (shared / "shared.txt").read_text().splitlines() == lines

    for path in {*places.values()}:
        assert status(path) == ""
        with gitspace.open(path) as ws:
            assert verify(ws).ok
    fsck = git_run(user, "fsck", "--strict", "--no-progress")
    assert fsck.returncode == 0, fsck.stdout.decode() + fsck.stderr.decode()
    assert checkout_state(user) == before and status(user) == listed
    assert git(user, "rev-parse", "main") == user_main  # no agent moved the user's branch


def test_a_busy_worktree_blocks_only_writers_in_that_worktree(tmp_path: Path) -> None:
    user = make_user_repo(tmp_path / "user")
    a, b = attach.attach(user, "a").path, attach.attach(user, "b").path
    with gitspace.open(a, agent="a") as ws_a, gitspace.open(a, agent="a2") as ws_a2, \
            gitspace.open(b, agent="b") as ws_b:
        with ws_a.writer.locked():
            assert ws_b.call("create", {"path": "b.txt", "file_text": "b\n"}).ok
            with pytest.raises(LockTimeout):
                with ws_a2.writer.locked(timeout=0.2):
                    pass
        assert ws_a2.call("create", {"path": "a.txt", "file_text": "a\n"}).ok
