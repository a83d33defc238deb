"""A race: another process swaps a folder for a link to the outside while the agent writes into it.

Bounded in time (``RACE_SECONDS``; the reads in rounds). The racer runs in its own process, so
it truly runs between the writer's system calls: it moves the folder aside, puts a link to the
outside folder in its place, waits a moment, then puts the folder back. The agent meanwhile
creates, appends, edits, renames and deletes files in that folder and below, and undoes, switches
branches and restores a checkpoint (writers of many paths at once). An op may fail (a link stood
in its way: an expected error, rolled back) but nothing may land outside, and afterwards the
repository is sound: ``git fsck --strict`` passes and, once what the racer left is recorded, the
status is clean.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from conftest import git_run
from hostile import Outside, assert_sound, fingerprint

import gitspace

RACE_SECONDS = 8.0  # at least; on until enough ops ran (``enough``), at most RACE_LIMIT
RACE_LIMIT = 30.0

RACER = textwrap.dedent("""
    import os, random, sys, threading, time
    root, outside = sys.argv[1], sys.argv[2]
    rng = random.Random(int(sys.argv[3]))
    targets = sys.argv[4].split(",") if len(sys.argv) > 4 else ["box", "box", "box/sub"]
    asked, resumed = threading.Event(), threading.Event()
    def control():  # "pause": stop between two swaps (nothing moved aside) until "go"
        for line in sys.stdin:
            if line.strip() == "pause":
                resumed.clear()
                asked.set()
            else:
                resumed.set()
    threading.Thread(target=control, daemon=True).start()
    print("ready", flush=True)
    n = 0
    while True:
        if asked.is_set():
            asked.clear()
            print("paused", flush=True)
            resumed.wait()
        n += 1
        target = os.path.join(root, rng.choice(targets))
        aside = os.path.join(root, f".aside-{n}")
        try:
            os.rename(target, aside)
        except OSError:
            time.sleep(0.0005)
            continue
        try:
            os.symlink(outside, target)
        except OSError:
            pass  # the agent made the folder again first
        time.sleep(rng.uniform(0, 0.001))
        try:
            if os.path.islink(target):
                os.unlink(target)
            os.rename(aside, target)  # back, unless the agent made a new folder meanwhile
        except OSError:
            pass
        time.sleep(rng.uniform(0, 0.006))
""")


def start_racer(root: Path, outside: Outside, seed: int, targets: str | None = None
                ) -> subprocess.Popen[str]:
    """The racer, in a process group of its own, once it is ready to swap."""
    racer = subprocess.Popen([sys.executable, "-c", RACER, str(root), str(outside.path),
                              str(seed), *([targets] if targets else [])],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             start_new_session=True)
    assert racer.stdout is not None and racer.stdout.readline() == "ready\n"
    return racer


def pause(racer: subprocess.Popen[str]) -> None:
    """Hold the racer between two swaps (whatever it moved aside it has tried to put back)."""
    assert racer.stdin is not None and racer.stdout is not None
    racer.stdin.write("pause\n")
    racer.stdin.flush()
    assert racer.stdout.readline() == "paused\n"


def resume(racer: subprocess.Popen[str]) -> None:
    assert racer.stdin is not None
    racer.stdin.write("go\n")
    racer.stdin.flush()


def stop(racer: subprocess.Popen[str]) -> None:
    os.killpg(racer.pid, signal.SIGKILL)
    racer.wait()


def test_a_folder_swapped_for_a_link_mid_write_never_sends_a_write_outside(
        tmp_path: Path) -> None:
    outside = Outside(tmp_path / "outside")
    root = tmp_path / "ws"
    with gitspace.init(root, agent="racer") as ws:
        for rel in ("box/a.txt", "box/log.txt", "box/sub/deep.txt"):
            assert ws.call("create", {"path": rel, "file_text": "start\n"}).ok
        assert ws.call("checkpoint", {"name": "start"}).ok
        # Another branch whose files differ under box/: switching writes many paths at once.
        assert ws.call("branch", {"name": "other"}).ok
        for n in range(10):
            assert ws.call("create", {"path": f"box/sub/o{n}.txt", "file_text": f"o {n}\n"}).ok
        assert ws.call("switch", {"name": "main"}).ok
    racer = start_racer(root, outside, 7)
    rng = random.Random(11)
    done = failed = 0
    unexpected = []
    recorded: dict[str, int] = {}
    try:
        with gitspace.open(root, agent="racer") as ws:
            start = time.monotonic()
            n = 0

            def enough() -> bool:
                return done > 150 and all(recorded.get(k) for k in ("undo", "switch", "restore"))

            while time.monotonic() - start < RACE_SECONDS or (
                    not enough() and time.monotonic() - start < RACE_LIMIT):
                n += 1
                kind = rng.choice(["create", "create", "deep", "append", "replace", "rename",
                                   "delete", "undo", "switch", "restore"])
                if kind == "create":
                    call = ("create", {"path": f"box/f{n % 50}.txt", "file_text": f"{n}\n"})
                elif kind == "deep":
                    call = ("create", {"path": f"box/sub/s{n % 7}/g.txt", "file_text": f"{n}\n"})
                elif kind == "append":
                    call = ("append", {"path": "box/log.txt", "text": f"{n}\n"})
                elif kind == "replace":
                    call = ("create", {"path": "box/a.txt", "file_text": f"a {n}\n"})
                elif kind == "rename":
                    call = ("rename", {"old_path": f"box/f{n % 50}.txt",
                                       "new_path": f"box/sub/r{n}.txt"})
                elif kind == "delete":
                    call = ("delete", {"path": f"box/f{(n * 7) % 50}.txt"})
                elif kind == "undo":  # (every writer: undo, switch and restore write many paths)
                    call = ("undo", {})
                elif kind == "switch":
                    call = ("switch", {"name": "other" if ws.branch() == "main" else "main"})
                else:
                    call = ("restore", {"name": "start"})
                try:
                    result = ws.call(*call)
                except Exception as e:  # noqa: BLE001 — a bug: counted, and the race goes on
                    unexpected.append(f"{call}: {type(e).__name__}: {e}")
                    continue
                if result.ok:
                    done += 1
                    recorded[kind] = recorded.get(kind, 0) + 1
                else:
                    failed += 1
                    if result.error is None:
                        unexpected.append(result.text)
    finally:
        stop(racer)
    print(f"race: {done} ops recorded, {failed} refused; recorded by kind: {recorded}")  # -rP
    outside.unchanged()
    assert not unexpected, f"{len(unexpected)} unexpected errors: {unexpected[:5]}"
    assert done > 100, f"only {done} ops succeeded ({failed} failed): the race proved nothing"
    assert all(recorded.get(k) for k in ("undo", "switch", "restore")), \
        f"a writer of many paths never ran: {recorded}"
    fsck = git_run(root, "fsck", "--strict", "--no-progress")
    assert fsck.returncode == 0, fsck.stderr.decode()
    for leftover in (root / "box", root / "box" / "sub"):  # the racer was killed mid-swap
        if leftover.is_symlink():
            leftover.unlink()
    with gitspace.open(root, agent="racer") as ws:
        ws.snapshot()  # what the racer moved around is an outside edit like any other
    outside.unchanged()
    assert_sound(root)


# The worklog scripts: each checks the path, then opens the log (or its segments).
WORKLOG_READS = [("peek", {"path": "box/log.jsonl"}), ("last_n", {"path": "box/log.jsonl", "n": 5}),
                 ("range", {"path": "box/log.jsonl", "start": "1990-01-01", "end": "2030-01-01"})]


def _entry(text: str, ts: str = "2024-05-01T10:00:00+00:00") -> str:
    """One worklog line (constraints/_worklog.py's format)."""
    return json.dumps({"ts": ts, "text": text, "tags": []}) + "\n"


READ_ROUNDS = 8  # rounds of every read while the racer swaps
ROUND_CAP = 80  # more rounds only until each reading tool has answered at least once


def _put_box_back(root: Path) -> bool:
    """Put ``box`` back as the tree has it, with the racer paused; True if it was not.

    A read-only script that ran while ``box`` was the racer's link saw the racer put the folder
    back, took that for the script's own change and undid it to what was on disk before the run:
    the link (and the folder's files aside). From then on the racer swaps a link for a link, its
    own folder stays aside, and every read of ``box`` meets a link: a race of one state, no longer
    a folder swapped for a link now and then.
    """
    status = git_run(root, "--no-optional-locks", "status", "--porcelain",
                     "--untracked-files=all").stdout
    if not status:
        return False
    for aside in root.glob(".aside-*"):
        if aside.is_symlink():
            aside.unlink()
        else:
            shutil.rmtree(aside)
    box = root / "box"
    if box.is_symlink() or (box.exists() and not box.is_dir()):
        box.unlink()
    for args in (("checkout", "--", "box"), ("clean", "-fdq", "--", "box")):
        assert git_run(root, *args).returncode == 0
    assert not git_run(root, "--no-optional-locks", "status", "--porcelain",
                       "--untracked-files=all").stdout
    return True


def test_reads_through_a_folder_swapped_for_a_link_never_show_outside_content(
        tmp_path: Path) -> None:
    """The same racer, against the tools that read: view, search (git grep), the grep script and
    the worklog scripts (peek, last_n, range) must never hand the agent a byte of the outside
    folder's files, which have the same names as the workspace's.

    Each round ends with the racer paused and ``box`` put back as the tree has it when a
    script's undo left it otherwise (``_put_box_back``), so every round races a folder that is
    there most of the time; rounds go on past ``READ_ROUNDS`` until view and search have each
    answered at least once (a refusal while the link stands proves nothing about what a read
    shows), up to ``ROUND_CAP``.
    """
    outside = Outside(tmp_path / "outside")
    secret = b"SECRET outside\n"
    (tmp_path / "outside" / "a.txt").write_bytes(secret)  # (before the fingerprint is taken:
    (tmp_path / "outside" / "sub" / "deep.txt").write_bytes(secret)  # Outside re-reads it)
    (tmp_path / "outside" / "log.jsonl").write_text(  # (peek shows times)
        _entry("SECRET outside", ts="1999-12-31T23:00:00+00:00"))
    outside.before = fingerprint(outside.path)
    root = tmp_path / "ws"
    with gitspace.init(root, agent="reader") as ws:
        for rel in ("box/a.txt", "box/sub/deep.txt"):
            assert ws.call("create", {"path": rel, "file_text": "inside\n"}).ok
        assert ws.call("create", {"path": "box/log.jsonl", "file_text": _entry("inside")}).ok
        for tool, args in WORKLOG_READS:  # they read the log (the race may refuse them all)
            result = ws.call(tool, args)
            assert result.ok and "2024-05-01" in result.text, result.text
    # Only "box": a racer renaming "box/sub" while gitspace has put back a link at "box" (a
    # script's changes are undone to what was on disk, link included) would move the outside
    # folder's own files about, and the outside check would judge the racer, not gitspace.
    racer = start_racer(root, outside, 5, "box")
    calls = [("view", {"path": "box/a.txt"}), ("view", {"path": "box/sub/deep.txt"}),
             ("view", {"path": "box"}), ("search", {"pattern": "S.CRET", "path": "box"}),
             ("search", {"pattern": "S.CRET"}), ("grep", {"pattern": "S.CRET", "path": "box"}),
             *WORKLOG_READS]
    answered: dict[str, int] = {}
    leaked, unexpected = [], []
    rounds = put_back = 0
    try:
        with gitspace.open(root, agent="reader") as ws:
            while rounds < ROUND_CAP and (
                    rounds < READ_ROUNDS or not all(answered.get(t) for t in ("view", "search"))):
                rounds += 1
                for tool, args in calls:
                    try:
                        result = ws.call(tool, args)
                    except Exception as e:  # noqa: BLE001 — a bug: counted, the race goes on
                        unexpected.append(f"{tool} {args}: {type(e).__name__}: {e}")
                        continue
                    if "SECRET outside" in result.text or "1999-12-31" in result.text:
                        leaked.append(f"{tool} {args}: {result.text[:200]}")
                    if result.ok:
                        answered[tool] = answered.get(tool, 0) + 1
                    elif result.error is None:
                        unexpected.append(result.text)
                pause(racer)
                put_back += _put_box_back(root)
                resume(racer)
    finally:
        stop(racer)
    print(f"read race: {rounds} rounds, box put back after {put_back}, answered {answered}")
    assert not leaked, f"{len(leaked)} reads showed outside content: {leaked[:3]}"
    assert not unexpected, f"{len(unexpected)} unexpected errors: {unexpected[:5]}"
    assert all(answered.get(t) for t in ("view", "search")), f"the reads never ran: {answered}"
    outside.unchanged()
    with gitspace.open(root, agent="reader") as ws:
        for leftover in (root / "box", root / "box" / "sub"):  # the racer was killed mid-swap
            if leftover.is_symlink():
                leftover.unlink()
        ws.snapshot()
    assert_sound(root)


SCRIPT_SECONDS = 8.0


def test_a_script_writing_while_its_folder_is_swapped_never_writes_outside(
        tmp_path: Path) -> None:
    """append_entry (a mutating constraint script, a process of its own) checks the path, then
    makes folders and opens the file: the racer swaps the log's folder for a link to the
    outside meanwhile. No line, file or folder may land outside; every call is recorded or
    refused."""
    outside = Outside(tmp_path / "outside")
    root = tmp_path / "ws"
    with gitspace.init(root, agent="writer") as ws:
        assert ws.call("append_entry", {"path": "box/w.jsonl", "text": "start"}).ok
        assert ws.call("append_entry", {"path": "box/log", "text": "start"}).ok  # segmented
    racer = start_racer(root, outside, 9, "box")
    done = failed = 0
    unexpected = []
    try:
        with gitspace.open(root, agent="writer") as ws:
            deadline = time.monotonic() + SCRIPT_SECONDS
            n = 0
            while time.monotonic() < deadline:
                n += 1
                path = ("box/w.jsonl", "box/log", f"box/new{n % 5}/w.jsonl")[n % 3]
                try:
                    result = ws.call("append_entry", {"path": path, "text": f"entry {n}"})
                except Exception as e:  # noqa: BLE001 — a bug: counted, the race goes on
                    unexpected.append(f"{path}: {type(e).__name__}: {e}")
                    continue
                done += result.ok
                failed += not result.ok
                if not result.ok and result.error is None:
                    unexpected.append(result.text)
    finally:
        stop(racer)
    print(f"script race: {done} appends recorded, {failed} refused")  # shown with pytest -rP
    outside.unchanged()
    assert not unexpected, f"{len(unexpected)} unexpected errors: {unexpected[:5]}"
    assert done > 5, f"only {done} appends succeeded ({failed} failed): the race proved nothing"
    with gitspace.open(root, agent="writer") as ws:
        if (root / "box").is_symlink():  # the racer was killed mid-swap
            (root / "box").unlink()
        ws.snapshot()
    outside.unchanged()
    assert_sound(root)
