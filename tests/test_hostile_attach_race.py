"""Races against ``attach --at DIR``: the folder a person names for an agent's worktree.

- Another process swaps ``DIR`` for a link to an (empty) outside folder, over and over, while
  attach and detach run: git must never check the agent's files out through the link (it wrote
  ``.git`` there: git accepts an empty folder, and follows a link to one).
- Several ``attach --at`` of one folder at once: one wins, the others are refused with a
  sentence; git keeps one record, and nothing half-made is left.
- The person makes ``DIR`` and writes a file there while attach runs (before, during, after):
  the file is never lost.

Each ends with ``git fsck --strict`` clean, the user's checkout as it was, no stray folder beside
``DIR``, and nothing outside changed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from conftest import git
from hostile import Outside, fsck, gitspace_argv, status

RACE_SECONDS = 6.0  # at least; on until some attaches were refused and some got through
RACE_LIMIT = 30.0

SWAPPER = textwrap.dedent("""
    import os, random, sys, time
    at, target = sys.argv[1], sys.argv[2]
    rng = random.Random(7)
    print("ready", flush=True)
    while True:
        try:
            os.symlink(target, at)
            time.sleep(rng.uniform(0, 0.003))
            os.unlink(at)
        except OSError:
            pass
        time.sleep(rng.uniform(0, 0.003))
""")


def _user(tmp_path: Path) -> Path:
    user = tmp_path / "user"
    user.mkdir()
    git(user, "init", "-q", "-b", "main")
    (user / "a.txt").write_text("the user's file\n")
    git(user, "add", "a.txt")
    git(user, "commit", "-q", "-m", "start")
    return user


def _worktrees(user: Path) -> list[str]:
    return [line.split(" ", 1)[1] for line in git(user, "worktree", "list", "--porcelain")
            .splitlines() if line.startswith("worktree ")]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), capture_output=True, text=True, timeout=120)


def test_a_link_swapped_in_at_the_folder_never_receives_the_checkout(tmp_path: Path) -> None:
    user = _user(tmp_path)
    outside = Outside(tmp_path / "outside")
    (outside.path / "empty").mkdir()
    outside.settled()
    parent = tmp_path / "agents"
    parent.mkdir()
    at = parent / "bob"
    before = status(user)
    swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, str(at), str(outside.path / "empty")],
                               stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert swapper.stdout is not None and swapper.stdout.readline() == "ready\n"
    tries = attached = 0
    try:
        start = time.monotonic()
        while time.monotonic() - start < RACE_SECONDS or (
                not 0 < attached < tries and time.monotonic() - start < RACE_LIMIT):
            tries += 1
            made = _run(*gitspace_argv(user, "attach", "--agent", "bob", "--at", str(at)))
            assert "Traceback" not in made.stderr and "bug" not in made.stderr, made.stderr
            outside.unchanged()
            if made.returncode == 0:
                attached += 1
                assert not at.is_symlink() and (at / "a.txt").read_text() == "the user's file\n"
                gone = _run(*gitspace_argv(user, "detach", "bob", "--force"))
                assert gone.returncode == 0, gone.stderr
            else:
                assert made.returncode == 1 and "hint" in made.stderr.lower(), made.stderr
            outside.unchanged()
    finally:
        os.killpg(swapper.pid, signal.SIGKILL)
        swapper.wait()
    assert attached > 0, f"not one of {tries} attaches got through the swapping"
    if at.is_symlink():
        at.unlink()
    git(user, "worktree", "prune")
    fsck(user)
    assert status(user) == before
    assert _worktrees(user) == [str(user)]
    assert sorted(os.listdir(parent)) in ([], ["bob"]), os.listdir(parent)
    outside.unchanged()


def test_attaches_of_one_folder_at_once_leave_one_worktree(tmp_path: Path) -> None:
    user = _user(tmp_path)
    outside = Outside(tmp_path / "outside")
    at = tmp_path / "agents" / "shared"
    before = status(user)
    procs = [subprocess.Popen(gitspace_argv(user, "attach", "--agent", f"a{i}", "--at", str(at)),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(4)]
    results = [(p.wait(timeout=120), *p.communicate()) for p in procs]
    won = [i for i, (code, _, _) in enumerate(results) if code == 0]
    assert len(won) == 1, results
    for code, _, err in results:
        assert code in (0, 1) and "Traceback" not in err, err
        if code == 1:
            assert "hint" in err.lower(), err
    assert _worktrees(user) == [str(user), str(at)]
    assert (at / "a.txt").read_text() == "the user's file\n"
    assert sorted(os.listdir(at.parent)) == ["shared"], os.listdir(at.parent)
    fsck(user)
    assert status(user) == before
    outside.unchanged()


WRITER = textwrap.dedent("""
    import os, sys, time
    at, delay = sys.argv[1], float(sys.argv[2])
    time.sleep(delay)
    os.makedirs(at, exist_ok=True)
    with open(os.path.join(at, "mine.txt"), "w") as f:
        f.write("the person's note\\n")
""")


WRITER_DELAYS = (0.0, 0.1, 0.2, 0.3, 0.45, 0.7)  # seconds: before, during and after an attach


def test_a_file_the_person_puts_at_the_folder_meanwhile_is_never_lost(tmp_path: Path) -> None:
    """While ``attach --at DIR`` runs, the person (or another program) makes ``DIR`` and writes a
    file there, at a different moment each round (before, during, after). Whether the attach
    wins or is refused, the file is there afterwards with what was written: gitspace never
    removes a folder it did not make."""
    user = _user(tmp_path)
    outside = Outside(tmp_path / "outside")
    at = tmp_path / "agents" / "bob"
    at.parent.mkdir()
    before = status(user)
    for delay in WRITER_DELAYS:
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(at), str(delay)])
        made = _run(*gitspace_argv(user, "attach", "--agent", "bob", "--at", str(at)))
        assert writer.wait(timeout=60) == 0
        assert "Traceback" not in made.stderr, made.stderr
        assert made.returncode in (0, 1), made.stderr
        assert (at / "mine.txt").read_text() == "the person's note\n", (made.returncode, made.stderr)
        (at / "mine.txt").unlink()
        if made.returncode == 0:
            assert (at / "a.txt").read_text() == "the user's file\n"
            gone = _run(*gitspace_argv(user, "detach", "bob"))
            assert gone.returncode == 0, gone.stderr
        else:
            assert "hint" in made.stderr.lower(), made.stderr
            at.rmdir()  # (the person's own empty folder)
        assert not at.exists(), os.listdir(at)
        assert sorted(os.listdir(at.parent)) == [], os.listdir(at.parent)
    git(user, "worktree", "prune")
    fsck(user)
    assert status(user) == before
    assert _worktrees(user) == [str(user)]
    outside.unchanged()
