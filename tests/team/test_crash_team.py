"""kill -9 during ``merge`` and ``pull``, at random moments: the repository stays sound, the next
gitspace command repairs what the dead one left, and the user's own checkout is untouched.

The kills are real: a child process runs the command and is sent SIGKILL after a random delay,
alone (its git children live on, as after the OOM killer) or with its whole process group (its
git children die mid-write, as after a closed terminal).
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

from conftest import git, git_run, head
from hostile import commit
from user_repo import checkout_state, index_entries, make_user_repo, status

import gitspace
from gitspace.team import attach, merge
from gitspace.team import remote as sync

CHILD = textwrap.dedent("""
    import sys
    from pathlib import Path
    import gitspace
    from gitspace.team import merge, remote
    what, path = sys.argv[1], Path(sys.argv[2])
    print("ready", flush=True)
    if what == "merge":
        merge.merge(path, "bob")
    else:
        with gitspace.open(path, agent="bob") as ws:
            remote.pull(ws, sys.argv[3])
    print("done", flush=True)
""")


def run_and_kill(what: str, path: Path, delay: float, group: bool, *extra: str) -> bool:
    """Run ``what`` in a child, SIGKILL it after ``delay`` seconds; True if it finished first."""
    child = subprocess.Popen([sys.executable, "-c", CHILD, what, str(path), *extra],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
    assert child.stdout is not None
    assert child.stdout.readline() == "ready\n", child.stderr.read() if child.stderr else ""
    time.sleep(delay)
    if group:
        os.killpg(child.pid, signal.SIGKILL)
    else:
        child.send_signal(signal.SIGKILL)
    out, err = child.communicate()
    if child.returncode != -signal.SIGKILL:
        assert child.returncode == 0, err
    if not group:  # its git children may still be finishing their last write
        time.sleep(0.3)
    return "done" in out


def duration(what: str, path: Path, *extra: str) -> float:
    """How long ``what`` takes here, from the child's "ready" to its "done": the kills land
    within that, whatever this machine's speed."""
    child = subprocess.Popen([sys.executable, "-c", CHILD, what, str(path), *extra],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline() == "ready\n"
    started = time.monotonic()
    assert child.stdout.readline() == "done\n", child.stderr.read() if child.stderr else ""
    took = time.monotonic() - started
    child.communicate()
    return took


def fsck(root: Path) -> None:
    proc = git_run(root, "fsck", "--strict", "--no-progress")
    assert proc.returncode == 0, proc.stdout.decode() + proc.stderr.decode()


def locks_and_journals(common: Path) -> list[str]:
    return [str(Path(d, n).relative_to(common)) for d, _, names in os.walk(common) for n in names
            if n.endswith(".lock") or n in ("journal.json", "merge.json", "merge-index")]


def _others(d: dict[str, Any], merged: set[str]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k not in merged}


def test_kill_9_during_merge_into_the_users_checkout(tmp_path: Path) -> None:
    template = make_user_repo(tmp_path / "template")
    base = head(template)
    added = {f"docs/part{n:03}.md": f"part {n}\n" for n in range(300)}  # read-tree takes a while
    work = commit(template, base, {**added, "README.md": "# project, by bob\n"})
    git(template, "update-ref", "refs/heads/agent/bob", work)
    merged = {*added, "README.md"}
    rng = random.Random(20250101)
    timings = []
    for n in range(2):  # the quicker of two: the first pays for cold caches
        shutil.copytree(template, tmp_path / f"timed{n}", symlinks=True)
        git(tmp_path / f"timed{n}", "update-index", "-q", "--refresh")
        timings.append(duration("merge", tmp_path / f"timed{n}"))
    took = min(timings)
    killed = finished = rounds = 0
    # Ten rounds, and more while fewer than four were killed mid-way (on a loaded machine a kill
    # aimed at the middle lands after the end more often): the test must see merges cut short.
    for round_ in range(30):
        if round_ >= 10 and killed >= 4:
            break
        rounds += 1
        user = tmp_path / f"user{round_}"
        shutil.copytree(template, user, symlinks=True)
        git(user, "update-index", "-q", "--refresh")  # the copy's stat data, as git would
        before, listed, entries = checkout_state(user), status(user), index_entries(user)
        done = run_and_kill("merge", user, rng.uniform(0.0, took), group=round_ % 2 == 1)
        finished += done
        killed += not done
        fsck(user)
        repaired = merge.repair(user)
        assert not locks_and_journals(user / ".git"), locks_and_journals(user / ".git")
        after = checkout_state(user)
        if head(user, "main") == base:  # the merge did not happen: nothing of it remains
            assert after == before and status(user) == listed, f"round {round_}"
            assert not done
        else:  # it happened whole: only its files changed, the rest byte for byte
            assert head(user, "main^2") == work
            assert after["HEAD"] == before["HEAD"]
            assert _others(after["files"], merged) == _others(before["files"], merged)
            assert _others(index_entries(user), merged) == _others(entries, merged)
            assert (user / "README.md").read_text() == "# project, by bob\n"
            assert all((user / p).read_text() == t for p, t in added.items())
            assert status(user) == listed
            assert not repaired or not done
        fsck(user)
        again = merge.merge(user, "bob")  # and the next merge just works
        assert head(user, "main^2") == work and status(user) == listed
        assert again.commit is None or again.checkout
        shutil.rmtree(user)
    print(f"merge: {killed} killed mid-way, {finished} finished first (a merge takes {took:.2f} s)")
    assert killed >= 4, f"only {killed} of {rounds} merges were killed mid-way: it proved little"


def test_kill_9_during_pull_in_an_agents_worktree(tmp_path: Path) -> None:
    user = make_user_repo(tmp_path / "user")
    bob = attach.attach(user, "bob").path
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    git(user, "push", "-q", str(bare), "agent/bob")
    feeder = tmp_path / "feeder"
    git(tmp_path, "clone", "-q", "--no-checkout", str(bare), str(feeder))
    before, listed = checkout_state(user), status(user)
    rng = random.Random(7)
    tip = head(user, "agent/bob")
    history = [tip]
    killed = rounds = 0
    for round_ in range(30):  # (ten, and more while fewer than three were cut short: see above)
        if round_ >= 10 and killed >= 3:
            break
        rounds += 1
        # The remote moves on: bob's branch gets a commit touching many files (one of them a
        # folder that becomes a file), and a new agent branch and checkpoint appear.
        files: dict[str, str | None] = {f"data/{round_}/f{n:03}.txt": f"{round_} {n}\n"
                                        for n in range(100)}
        files[f"flip{round_ % 2}"] = None
        files[f"flip{round_ % 2}/x" if round_ % 4 < 2 else f"flip{round_ % 2}"] = f"{round_}\n"
        tip = commit(feeder, tip, files, f"round {round_}\n")
        history.append(tip)
        git(feeder, "push", "-q", "origin", f"{tip}:refs/heads/agent/bob",
            f"{tip}:refs/heads/agent/other{round_}")
        git(feeder, "push", "-q", "origin", f"{tip}:refs/tags/gitspace/cp{round_}")
        done = run_and_kill("pull", bob, rng.uniform(0.0, 0.7), round_ % 2 == 1, str(bare))
        killed += not done
        fsck(user)
        with gitspace.open(bob, agent="bob"):  # reopening repairs
            pass
        assert not locks_and_journals(user / ".git"), locks_and_journals(user / ".git")
        assert head(bob) in history
        assert git(bob, "status", "--porcelain", "--untracked-files=all",
                   "--ignored=no") == "", f"round {round_}"
        assert git(bob, "diff-index", "--cached", "HEAD") == ""
        git(bob, "write-tree")
        assert checkout_state(user) == before and status(user) == listed
    with gitspace.open(bob, agent="bob") as ws:
        sync.pull(ws, str(bare))
    assert head(bob) == tip
    assert checkout_state(user) == before and status(user) == listed
    fsck(user)
    print(f"pull: {killed} of {rounds} killed mid-way")
    assert killed >= 3, f"only {killed} of {rounds} pulls were killed mid-way: it proved little"
