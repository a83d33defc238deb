"""kill -9 of a sync at random moments: the clone stays consistent, and the next sync finishes
the job without putting any op on the remote twice.

Each round gives the killed clone work of every kind (the remote moved, so its unpushed ops are
re-run; one holds a checkpoint that moves with it), starts a sync in a process of its own, and
kills it at a random moment of the sync (after its imports, timed from a line it prints). Then:
the clone opens (finishing an interrupted op) with ``git fsck --strict`` and ``git status``
clean, and one more sync leaves every op on the remote exactly once, the checkpoints at their
ops, and nothing of the killed sync behind (no lock, no journal, no scratch folder).
"""

from __future__ import annotations

import random
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from conftest import assert_clean, call_ok, git, git_run
from fleet import assert_never_forced, machine, ops_of, seed
from gitserver import GitServer

import gitspace
from gitspace.storage import ledger
from gitspace.team.sync import sync

ROUNDS = 8
SYNC_ONCE = ("import sys, gitspace\n"
             "from gitspace.team.sync import sync\n"
             "ws = gitspace.open(sys.argv[1], agent='agent-1')\n"
             "print('go', flush=True)\n"
             "sync(ws)\n")


def _sync_in_child(root: Path) -> subprocess.Popen[bytes]:
    child = subprocess.Popen([sys.executable, "-c", SYNC_ONCE, str(root)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert child.stdout is not None
    assert child.stdout.readline() == b"go\n"
    return child


def test_kill_9_at_random_moments(tmp_path: Path, git_server: GitServer) -> None:
    a = seed(tmp_path, git_server)
    b = machine(tmp_path, git_server, 1)
    rng = random.Random(1617)
    made: list[str] = []
    duration = 0.0
    killed_midway = 0
    for r in range(ROUNDS):
        call_ok(a, "append", {"path": "shared/log.md", "text": f"a{r}\n"})
        sync(a)
        made.append(call_ok(b, "append", {"path": "shared/log.md", "text": f"b{r}\n"}).op or "")
        call_ok(b, "checkpoint", {"name": f"b-{r}"})
        made.append(call_ok(b, "str_replace", {"path": "shared/board.md",
                                               "old_str": f"slot-1: v{r}\n",
                                               "new_str": f"slot-1: v{r + 1}\n"}).op or "")
        b.close()
        child = _sync_in_child(b.root)
        start = time.monotonic()
        if r == 0:  # the first sync runs to the end: how long one takes
            assert child.wait(timeout=60) == 0, child.stderr.read() if child.stderr else ""
            duration = time.monotonic() - start
        else:
            time.sleep(rng.uniform(0, duration))
            killed_midway += child.poll() is None
            child.kill()
            child.wait()
        for stream in (child.stdout, child.stderr):
            if stream is not None:
                stream.close()
        # Consistent at once: opening finishes an interrupted op; git agrees with what it finds.
        b = gitspace.open(b.root, agent="agent-1")
        fsck = git_run(b.root, "fsck", "--strict", "--no-progress")
        assert fsck.returncode == 0, fsck.stdout.decode() + fsck.stderr.decode()
        assert git(b.root, "status", "--porcelain", "--untracked-files=all") == ""
        # The next sync finishes the job.
        sync(b)
        assert_clean(b.root)
        state = b.repo.gitdir / "gitspace"
        assert not (state / "sync-journal.json").exists()
        assert not any((state / "sync-scratch").iterdir())
        on_remote = Counter(op.op_id for op in ops_of(git_server.path("fleet")))
        assert [on_remote[op] for op in made] == [1] * len(made)
        assert git(b.root, "rev-parse", "HEAD") == git_server.refs("fleet")["refs/heads/main"] + "\n"
        for n in range(r + 1):  # each checkpoint is on the branch, at the op it was made after
            tagged = git(b.root, "rev-parse", f"refs/tags/gitspace/b-{n}^{{commit}}").strip()
            assert git(b.root, "merge-base", "--is-ancestor", tagged, "HEAD") == ""
            op = ledger.parse_message(git(b.root, "log", "-1", "--format=%B", tagged))
            assert op is not None and op.op_id == made[2 * n]
    assert killed_midway >= ROUNDS // 3, f"only {killed_midway} kills landed inside a sync"
    assert_never_forced(git_server)
    a.close()
    b.close()
