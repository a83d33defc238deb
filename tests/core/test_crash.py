"""kill -9 at any instant: the repository stays valid, reopening repairs it, no acknowledged op is
lost. Crashes are real: a child process is killed (SIGKILL) or exits via os._exit mid-op."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import assert_clean, git, head, op_ids, ops, work_tree_files

import gitspace
from gitspace.core.timeline import verify

LOOP = textwrap.dedent("""
    import random, sys
    from pathlib import Path
    import gitspace
    root, seed = Path(sys.argv[1]), int(sys.argv[2])
    rng = random.Random(seed)
    ws = gitspace.open(root, agent="crasher")
    ws.call("view", {"path": ".gitignore"})  # loads what the first op would (tools, GitPython)
    print("ready", flush=True)
    checkpoints = []
    for n in range(10**6):
        kind = rng.choice(["create", "append", "append", "replace", "undo", "checkpoint",
                           "restore", "rename"])
        if kind == "create":
            r = ws.call("create", {"path": f"d{n % 3}/f{rng.randrange(4)}.txt",
                                   "file_text": f"{seed}-{n}\\n" * rng.randrange(1, 50)})
        elif kind == "append":
            r = ws.call("append", {"path": "log.txt", "text": f"{seed}-{n}\\n"})
        elif kind == "replace":
            state = root / "state.txt"
            if state.exists():
                r = ws.call("str_replace", {"path": "state.txt", "old_str": state.read_text(),
                                            "new_str": f"state {seed}-{n}"})
            else:
                r = ws.call("create", {"path": "state.txt", "file_text": f"state {seed}-{n}"})
        elif kind == "undo":
            r = ws.call("undo", {})
        elif kind == "checkpoint":
            name = f"cp-{seed}-{n}"
            r = ws.call("checkpoint", {"name": name})
            if r.ok:
                checkpoints.append(name)
        elif kind == "restore" and checkpoints:
            r = ws.call("restore", {"name": rng.choice(checkpoints)})
        else:
            src = root / "d0" / "f0.txt"
            r = ws.call("rename", {"old_path": "d0/f0.txt", "new_path": f"moved/{n}.txt"}) \\
                if src.exists() else ws.call("append", {"path": "log.txt", "text": "r\\n"})
        if r.ok and r.op:
            print(r.op, flush=True)
        elif not r.ok and r.error is None:
            print("BUG", r.text, flush=True)
""")


def _acknowledged(output: str) -> list[str]:
    """Op ids the child finished printing (a torn last line was never acknowledged)."""
    lines = output.split("\n")[:-1]  # the part after the last newline is incomplete
    assert not [ln for ln in lines if ln.startswith("BUG")], output
    return [ln for ln in lines if ln and ln != "ready"]


def _reopen_and_check(root: Path, acknowledged: list[str]) -> None:
    with gitspace.open(root, agent="checker") as ws:
        recorded = [op.op_id for op in ops(root)]
        assert len(recorded) == len(set(recorded)), "an op id appears twice on the branch"
        missing = set(acknowledged) - set(recorded)
        assert not missing, f"acknowledged ops lost: {sorted(missing)}"
        assert verify(ws).ok
    assert_clean(root)
    assert git(root, "diff-index", "--cached", "HEAD") == ""
    assert not [p for p in work_tree_files(root) if p.name.startswith(".gitspace-")], \
        "a temporary file was left in the work tree"


def test_random_sigkill_never_loses_an_acknowledged_op(ws_root: Path) -> None:
    gitspace.init(ws_root, agent="crasher").close()
    rng = random.Random(20240611)
    acknowledged: list[str] = []
    for round_ in range(30):
        child = subprocess.Popen(
            [sys.executable, "-c", LOOP, str(ws_root), str(round_)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        assert child.stdout is not None
        assert child.stdout.readline() == "ready\n", child.stderr.read() if child.stderr else ""
        time.sleep(rng.uniform(0.005, 0.150))
        child.send_signal(signal.SIGKILL)
        out, err = child.communicate()
        assert child.returncode == -signal.SIGKILL, err
        acknowledged += _acknowledged(out)
        _reopen_and_check(ws_root, acknowledged)
    assert len(acknowledged) > 30, "the children hardly ran any ops; the test proves nothing"


# -- deterministic crash points --------------------------------------------------------------

CRASH_AT = textwrap.dedent("""
    import os, sys
    from pathlib import Path
    import gitspace
    from gitspace.core import writer
    from gitspace.storage import gitindex, gitrepo
    root, point, tool, args = Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    ws = gitspace.open(root, agent="crasher")
    calls = {"n": 0}

    def die_on(owner, name, nth=1, when=lambda *a, **k: True):
        original = getattr(owner, name)
        def wrapper(*a, **k):
            if when(*a, **k):
                calls["n"] += 1
                if calls["n"] == nth:
                    os._exit(9)
            return original(*a, **k)
        setattr(owner, name, wrapper)

    def die_renaming_lock(folder):
        original_replace = os.replace
        def replace(src, dst, *a, **k):
            if str(src).endswith(".lock") and folder in str(src):
                os._exit(9)
            return original_replace(src, dst, *a, **k)
        os.replace = replace

    if point == "before-cas":
        die_on(gitrepo.GitRepo, "cas_ref")
    elif point == "holding-ref-lock":
        die_renaming_lock("/refs/heads/")
    elif point == "holding-tag-lock":
        die_renaming_lock("/refs/tags/")
    elif point == "after-cas-before-files":
        die_on(writer.Writer, "put_file")
    elif point == "between-files":
        die_on(writer.Writer, "put_file", nth=2)
    elif point == "after-files-before-index":
        die_on(writer.Writer, "sync_index")
    elif point == "holding-index-lock":
        die_on(gitindex.Index, "encode")
    elif point == "before-journal-removed":
        die_on(writer.Writer, "journal_remove")
    import json
    r = ws.call(tool, json.loads(args))
    print("returned", r.ok, r.text, flush=True)
""")

POINTS = ["before-cas", "holding-ref-lock", "after-cas-before-files", "between-files",
          "after-files-before-index", "holding-index-lock", "before-journal-removed"]


def _crash(root: Path, point: str, tool: str, args: str) -> None:
    proc = subprocess.run([sys.executable, "-c", CRASH_AT, str(root), point, tool, args],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 9, f"the child did not crash at {point}: {proc.stdout}{proc.stderr}"
    assert proc.stdout == ""


@pytest.mark.parametrize("point", POINTS)
def test_crash_point_is_finished_on_reopen(ws_root: Path, point: str) -> None:
    with gitspace.init(ws_root, agent="crasher") as ws:
        ws.call("create", {"path": "src/a.txt", "file_text": "a\n"})
        ws.call("create", {"path": "src/b.txt", "file_text": "b\n"})
    before = op_ids(ws_root)
    tip = head(ws_root)
    _crash(ws_root, point, "rename", '{"old_path": "src", "new_path": "dst"}')
    assert (ws_root / ".git" / "gitspace" / "journal.json").exists()

    started = time.monotonic()
    with gitspace.open(ws_root, agent="crasher") as ws:
        assert time.monotonic() - started < 3, "recovery waited on a lock the dead process held"
        # Roll forward: the op whose journal was written is finished, never half-applied.
        after = ops(ws_root)
        assert [o.op_id for o in after[:-1]] == before
        assert (after[-1].tool, after[-1].args) == (
            "rename", {"new_path": "dst", "old_path": "src"})
        assert git(ws_root, "rev-parse", "HEAD^").strip() == tip
        assert sorted(p.relative_to(ws_root).as_posix() for p in ws_root.rglob("*.txt")) == [
            "dst/a.txt", "dst/b.txt"]
        assert_clean(ws_root)
        assert git(ws_root, "diff-index", "--cached", "HEAD") == ""
        # And the workspace keeps working.
        result = ws.call("append", {"path": "dst/a.txt", "text": "more\n"})
        assert result.ok, result.text
        assert (ws_root / "dst" / "a.txt").read_text() == "a\nmore\n"
    assert_clean(ws_root)


def test_crash_in_a_switch_is_finished_on_reopen(ws_root: Path) -> None:
    with gitspace.init(ws_root, agent="crasher") as ws:
        ws.call("create", {"path": "a.txt", "file_text": "main\n"})
        ws.call("branch", {"name": "side"})
        ws.call("create", {"path": "a.txt", "file_text": "side\n"})
        ws.call("create", {"path": "b.txt", "file_text": "only on side\n"})
    _crash(ws_root, "between-files", "switch", '{"name": "main"}')
    with gitspace.open(ws_root, agent="crasher"):
        assert git(ws_root, "symbolic-ref", "--short", "HEAD").strip() == "main"
        assert (ws_root / "a.txt").read_text() == "main\n"
        assert not (ws_root / "b.txt").exists()
    assert_clean(ws_root)


def test_crash_while_creating_a_checkpoint_is_finished_on_reopen(ws_root: Path) -> None:
    with gitspace.init(ws_root, agent="crasher") as ws:
        ws.call("create", {"path": "a.txt", "file_text": "a\n"})
    tip = head(ws_root)
    _crash(ws_root, "holding-tag-lock", "checkpoint", '{"name": "cp1"}')
    assert (ws_root / ".git" / "refs" / "tags" / "gitspace" / "cp1.lock").exists()
    with gitspace.open(ws_root, agent="crasher") as ws:
        # The journal names the tag: recovery removes the dead process's lock and creates it.
        assert git(ws_root, "rev-parse", "gitspace/cp1^{commit}").strip() == tip
        assert ws.call("checkpoint", {"name": "cp2"}).ok
    assert_clean(ws_root)
