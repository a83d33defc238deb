"""The watcher with a real inotify observer: outside edits become external ops, a burst at a time.

Timing-sensitive by nature, so every test waits for a condition (polling, generous timeouts) and
never asserts on how long anything took.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import call_ok, git, ops
from fake_anthropic import FakeAnthropic, text, tool_use

import gitspace
from gitspace.storage.ledger import Op
from gitspace.team.watch import Watcher, WatchReport

TIMEOUT = 30.0

# watchdog warns when a new folder's watch is registered twice in a race of its own; harmless.
pytestmark = pytest.mark.filterwarnings("ignore:Callback with id:RuntimeWarning")


def wait_for(condition: Callable[[], bool], what: str, timeout: float = TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def clean(root: Path) -> bool:
    """The committed tree equals the disk (gitspace keeps the index in step with both)."""
    return git(root, "status", "--porcelain", "--untracked-files=all") == ""


def external(root: Path) -> list[Op]:
    return [op for op in ops(root) if op.source == "external"]


def settle(watcher: Watcher, root: Path) -> None:
    """Wait until everything on disk is committed and the watcher has nothing left to do."""
    wait_for(lambda: clean(root) and watcher.idle(), "the watcher to commit the edits")


def new_paths(root: Path, before: int) -> set[str]:
    return {p for op in external(root)[before:] for p in op.args["paths"]}


@pytest.fixture
def reports() -> list[WatchReport]:
    return []


@pytest.fixture
def watcher(ws: gitspace.Workspace, reports: list[WatchReport]) -> Iterator[Watcher]:
    w = Watcher(ws.root, author="alice", debounce=0.05, max_wait=2.0, on_report=reports.append)
    w.start()
    try:
        wait_for(lambda: w.stats.flushes >= 1, "the first flush")
        yield w
    finally:
        w.stop()


def test_each_kind_of_file_event_becomes_an_external_op(ws: gitspace.Workspace, watcher: Watcher,
                                                       tmp_path: Path) -> None:
    root = ws.root
    outside = tmp_path / "outside"
    outside.mkdir()

    def moved_in() -> None:
        (outside / "in.txt").write_text("from elsewhere\n")
        os.rename(outside / "in.txt", root / "in.txt")

    def new_tree() -> None:
        (root / "d" / "e").mkdir(parents=True)
        (root / "d" / "e" / "1.txt").write_text("one\n")
        (root / "d" / "2.txt").write_text("two\n")

    steps: list[tuple[str, Callable[[], object], set[str]]] = [
        ("create", lambda: (root / "a.txt").write_text("hello\n"), {"a.txt"}),
        ("modify", lambda: (root / "a.txt").write_text("hello again\n"), {"a.txt"}),
        ("chmod", lambda: os.chmod(root / "a.txt", 0o755), {"a.txt"}),
        ("move", lambda: os.rename(root / "a.txt", root / "b.txt"), {"a.txt", "b.txt"}),
        ("delete", lambda: os.unlink(root / "b.txt"), {"b.txt"}),
        ("symlink", lambda: os.symlink("nowhere", root / "link"), {"link"}),
        ("directory", new_tree, {"d/e/1.txt", "d/2.txt"}),
        ("directory move", lambda: os.rename(root / "d", root / "D"),
         {"d/e/1.txt", "d/2.txt", "D/e/1.txt", "D/2.txt"}),
        ("directory delete", lambda: shutil.rmtree(root / "D"), {"D/e/1.txt", "D/2.txt"}),
        ("move in", moved_in, {"in.txt"}),
        ("move out", lambda: os.rename(root / "in.txt", outside / "in.txt"), {"in.txt"}),
    ]
    for name, action, expected in steps:
        before = len(external(root))
        action()
        settle(watcher, root)
        assert new_paths(root, before) == expected, name
        assert all(op.agent == "alice" and op.tool == "external_edit"
                   for op in external(root)[before:]), name
    assert git(root, "log", "-1", "--format=%an").strip() == "alice"
    assert git(root, "ls-files").split() == [".gitignore", "link"]


def test_editor_style_atomic_saves_commit_only_the_file(ws: gitspace.Workspace) -> None:
    root = ws.root
    with Watcher(root, author="alice", debounce=0.3) as w:
        # tmp file + rename over the original (most editors and atomic writers)
        (root / "notes.md").write_text("draft\n")
        settle(w, root)
        before = len(external(root))
        (root / ".notes.md.tmp4913").write_text("second draft\n")
        os.replace(root / ".notes.md.tmp4913", root / "notes.md")
        # vim with backupcopy=no: rename to a backup, write anew, delete the backup
        os.rename(root / "notes.md", root / "notes.md~")
        (root / "notes.md").write_text("third draft\n")
        os.unlink(root / "notes.md~")
        settle(w, root)
    assert new_paths(root, before) == {"notes.md"}
    assert git(root, "show", "HEAD:notes.md") == "third draft\n"
    every_path = git(root, "log", "--all", "--format=", "--name-only")
    assert "~" not in every_path and "tmp4913" not in every_path


def test_a_burst_of_10000_writes_makes_a_handful_of_commits(ws: gitspace.Workspace) -> None:
    """10,000 writes, round-robin over 10 files (1,000 rewrites each), as fast as we can."""
    root = ws.root
    (root / "burst").mkdir()
    with Watcher(root, author="alice", debounce=0.2, max_wait=2.0) as w:
        wait_for(lambda: w.stats.flushes >= 1, "the first flush")
        commits_before = w.stats.commits
        started = time.monotonic()
        for i in range(10_000):
            with open(root / "burst" / f"f{i % 10}.txt", "w") as out:
                out.write(f"write {i}\n")
        took = time.monotonic() - started
        settle(w, root)
        made = w.stats.commits - commits_before
    # A commit at most each max_wait while the writes go on (a loaded machine writes for longer),
    # and one at the end: never one a write.
    assert 1 <= made <= 10 + int(took / 2.0), f"{made} commits for one burst of {took:.1f} s"
    for n in range(10):
        assert git(root, "show", f"HEAD:burst/f{n}.txt") == f"write {9990 + n}\n"
    assert all(op.args["paths"] for op in external(root)), "an empty external op was committed"


def test_ignored_paths_make_no_commit_until_the_rules_change(ws: gitspace.Workspace,
                                                            watcher: Watcher) -> None:
    root = ws.root
    (root / ".gitignore").write_text(".gitspace/\nbuild/\n*.log\n")
    settle(watcher, root)
    before = len(external(root))
    (root / "build" / "obj").mkdir(parents=True)
    (root / "build" / "obj" / "x.o").write_bytes(b"\0" * 100)
    (root / "run.log").write_text("noise\n")
    (root / ".gitspace" / "sessions").mkdir(parents=True)
    (root / ".gitspace" / "sessions" / "s.json").write_text("{}")
    (root / "real.txt").write_text("signal\n")
    settle(watcher, root)
    assert new_paths(root, before) == {"real.txt"}
    assert watcher.stats.dropped > 0

    # Dropping the *.log rule makes run.log visible: the .gitignore edit brings it in.
    (root / ".gitignore").write_text(".gitspace/\nbuild/\n")
    settle(watcher, root)
    assert new_paths(root, before + 1) == {".gitignore", "run.log"}
    # Likewise when an op changes the rules: what it uncovers is an outside change.
    call_ok(ws, "str_replace", {"path": ".gitignore", "old_str": "build/\n", "new_str": ""})
    settle(watcher, root)
    assert new_paths(root, before + 2) == {"build/obj/x.o"}


def test_gitspace_own_writes_make_no_commit_and_no_scan(ws: gitspace.Workspace,
                                                       watcher: Watcher) -> None:
    root = ws.root
    scans, flushes = watcher.stats.scans, watcher.stats.flushes
    for i in range(10):
        call_ok(ws, "create", {"path": f"notes/n{i}.md", "file_text": f"note {i}\n"})
    call_ok(ws, "str_replace", {"path": "notes/n1.md", "old_str": "note", "new_str": "memo"})
    call_ok(ws, "checkpoint", {"name": "ten"})
    call_ok(ws, "delete", {"path": "notes/n2.md"})
    call_ok(ws, "restore", {"name": "ten"})
    call_ok(ws, "undo", {})
    wait_for(lambda: watcher.stats.flushes > flushes, "the watcher to look at the op's writes")
    time.sleep(0.3)
    settle(watcher, root)
    assert external(root) == []
    assert watcher.stats.scans == scans, "gitspace's own writes made the watcher scan the tree"


def test_ops_and_the_watcher_never_interleave_or_duplicate(ws: gitspace.Workspace) -> None:
    root = ws.root
    with Watcher(root, author="alice", debounce=1.0, max_wait=3.0) as w:
        wait_for(lambda: w.stats.flushes >= 1, "the first flush")
        # An op on a file just edited outside records that edit first, as its own external op;
        # the watcher, seeing a file that already equals the tip, adds nothing.
        call_ok(ws, "create", {"path": "shared.txt", "file_text": "one\n"})
        (root / "shared.txt").write_text("one\nedited outside\n")
        result = call_ok(ws, "str_replace", {"path": "shared.txt", "old_str": "one",
                                             "new_str": "ONE"})
        assert result.external_op is not None
        settle(w, root)
        assert [op.args["paths"] for op in external(root)] == [["shared.txt"]]

        # Ops in one thread, outside edits in another, both as fast as they go.
        done = threading.Event()
        agent = gitspace.open(root, agent="busy")

        def tool_ops() -> None:
            try:
                for i in range(40):
                    call_ok(agent, "create", {"path": f"tool/t{i}.txt", "file_text": f"{i}\n"})
            finally:
                done.set()

        worker = threading.Thread(target=tool_ops)
        worker.start()
        i = 0
        while not done.is_set():
            (root / f"outside/o{i % 7}.txt").parent.mkdir(exist_ok=True)
            (root / f"outside/o{i % 7}.txt").write_text(f"{i}\n")
            i += 1
            time.sleep(0.002)
        worker.join()
        agent.close()
        settle(w, root)
    recorded = {p for op in external(root) for p in op.args["paths"]}
    assert recorded - {"shared.txt"} == {f"outside/o{n}.txt" for n in range(min(i, 7))}
    assert sum(op.tool == "create" for op in ops(root)) == 41
    assert all(op.args["paths"] for op in external(root))
    assert clean(root)


def test_restore_undo_and_switch_while_watching_commit_nothing_extra(ws: gitspace.Workspace,
                                                                    watcher: Watcher) -> None:
    root = ws.root
    call_ok(ws, "create", {"path": "plan.md", "file_text": "v1\n"})
    call_ok(ws, "checkpoint", {"name": "v1"})
    (root / "plan.md").write_text("v2 by hand\n")
    (root / "extra.md").write_text("more\n")
    settle(watcher, root)
    assert len(external(root)) == 1
    call_ok(ws, "restore", {"name": "v1"})
    settle(watcher, root)
    assert (root / "plan.md").read_text() == "v1\n" and not (root / "extra.md").exists()
    call_ok(ws, "undo", {})  # undoes the restore: the hand edits come back, as an op
    settle(watcher, root)
    assert (root / "plan.md").read_text() == "v2 by hand\n"
    call_ok(ws, "branch", {"name": "retry", "from": "v1"})  # switches: files change on disk
    settle(watcher, root)
    assert git(root, "branch", "--show-current").strip() == "retry"
    assert (root / "plan.md").read_text() == "v1\n"
    time.sleep(0.3)
    settle(watcher, root)
    assert len(external(root)) == 0  # on retry, forked before the outside edit
    assert len([op for op in ops(root, "main") if op.source == "external"]) == 1
    assert [op.tool for op in ops(root, "main")][-2:] == ["restore", "undo"]


def test_files_over_the_cap_are_reported_once_and_never_committed(ws: gitspace.Workspace,
                                                                  reports: list[WatchReport]) -> None:
    root = ws.root
    with Watcher(root, author="alice", debounce=0.05, max_file_bytes=1000,
                 on_report=reports.append) as w:
        (root / "big.bin").write_bytes(b"x" * 5000)
        (root / "small.txt").write_text("fits\n")
        wait_for(lambda: any(r.kind == "too_large" for r in reports), "the size-cap report")
        wait_for(lambda: "small.txt" in git(root, "ls-files"), "small.txt to be committed")
        (root / "small.txt").write_text("fits again\n")
        wait_for(lambda: git(root, "show", "HEAD:small.txt") == "fits again\n", "the second edit")
        (root / "big.bin").write_bytes(b"y" * 6000)
        wait_for(lambda: sum(r.kind == "too_large" for r in reports) == 2, "the second report")
        wait_for(w.idle, "the watcher to settle")
    too_large = [r for r in reports if r.kind == "too_large"]
    assert [r.files for r in too_large] == [("big.bin",), ("big.bin",)]
    assert "5,000 bytes" in too_large[0].text and "1,000-byte cap" in too_large[0].text
    assert "big.bin" not in git(root, "log", "--all", "--format=", "--name-only")
    assert not [r for r in reports if r.kind == "error"]


def test_a_failed_flush_is_reported_and_retried(ws: gitspace.Workspace, watcher: Watcher,
                                                reports: list[WatchReport]) -> None:
    root = ws.root
    git(root, "checkout", "--quiet", "--detach")  # no branch to record on: every flush fails
    (root / "x.txt").write_text("written while detached\n")
    wait_for(lambda: any(r.kind == "error" for r in reports), "an error report")
    git(root, "checkout", "--quiet", "main")
    settle(watcher, root)
    [error, *_] = [r for r in reports if r.kind == "error"]
    assert "HEAD is detached" in error.text and "Will try again." in error.text
    assert new_paths(root, 0) == {"x.txt"}


def _children() -> int:
    return sum(len(Path(task, "children").read_text().split())
               for task in Path("/proc/self/task").iterdir())


def test_a_long_churn_keeps_descriptors_and_processes_flat(ws: gitspace.Workspace) -> None:
    root = ws.root
    counts = []
    with Watcher(root, author="alice", debounce=0.02, max_wait=1.0) as w:
        wait_for(lambda: w.stats.flushes >= 1, "the first flush")
        for i in range(60):
            folder = root / f"churn{i % 3}"
            folder.mkdir(exist_ok=True)
            (folder / f"f{i % 5}.txt").write_text(f"round {i}\n")
            if i % 4 == 3:
                shutil.rmtree(folder)
            commits = w.stats.commits
            wait_for(lambda c=commits: w.stats.commits > c and clean(root), f"round {i}")
            if i in (10, 59):
                counts.append((len(os.listdir("/proc/self/fd")), _children()))
    assert counts[0] == counts[1], f"(fds, child processes) grew: {counts}"
    assert _children() <= counts[0][1]


def _watch_process(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-m", "gitspace", "-C", str(root), "watch", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})})
    assert proc.stdout is not None
    first = proc.stdout.readline()
    if not first.startswith("Watching "):  # stop it first: its stderr ends only when it does
        proc.kill()
        _, err = proc.communicate(timeout=TIMEOUT)
        raise AssertionError(f"the first line is not the banner: {first!r}\n{err}")
    return proc


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_commits_pending_edits_and_exits_cleanly(ws: gitspace.Workspace,
                                                         sig: signal.Signals) -> None:
    root = ws.root
    args, env = (["--author", "carol"], None) if sig == signal.SIGTERM else (
        [], {"GITSPACE_AUTHOR": "dave"})
    (root / "before.txt").write_text("pending when the watcher starts\n")
    proc = _watch_process(root, "--debounce", "30", "--max-wait", "60", *args, env=env)
    assert proc.stdout is not None
    assert "before.txt" in proc.stdout.readline()  # the first flush is over; the next is far off
    (root / "pending.txt").write_text("written just before the signal\n")
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 0, err
    assert out.startswith("Recorded outside edits as op") and "pending.txt" in out
    assert out.strip().splitlines()[-1].startswith("Stopped watching")
    assert git(root, "log", "-1", "--format=%an").strip() == ("carol" if args else "dave")
    assert clean(root)


def test_run_with_watch_records_what_the_agent_does_outside_its_tools(
        ws: gitspace.Workspace, fake_api: FakeAnthropic) -> None:
    root = ws.root

    def shell_command(body: dict[str, object]) -> None:
        # The agent's own shell tool ran between two model calls: it wrote a file.
        (root / "shell.txt").write_text("made by a shell command\n")
        wait_for(lambda: "shell.txt" in git(root, "ls-files"), "the watcher during the run")

    fake_api.reply(tool_use("toolu_1", "plan_add", {"step": "run a script"}), stop_reason="tool_use")
    fake_api.reply(text("Done."), check=shell_command)
    env = {k: v for k, v in os.environ.items() if k != "GITSPACE_AGENT"}
    env.update(ANTHROPIC_API_KEY="sk-ant-test", ANTHROPIC_BASE_URL=fake_api.base_url,
               GITSPACE_AUTHOR="shell")
    out = subprocess.run([sys.executable, "-m", "gitspace", "-C", str(root), "--agent", "claude",
                          "run", "Plan and script", "--model", "m", "--watch"],
                         capture_output=True, text=True, env=env, timeout=120)
    fake_api.done()
    assert out.returncode == 0, out.stderr
    assert "Recorded outside edits as op" in out.stdout
    assert [(op.tool, op.agent) for op in ops(root)][-2:] == [("plan_add", "claude"),
                                                              ("external_edit", "shell")]
    assert external(root)[0].args["paths"] == ["shell.txt"]
    assert clean(root)


def test_git_and_agent_worktrees_inside_it_are_not_watched(ws: gitspace.Workspace,
                                                           watcher: Watcher) -> None:
    from gitspace.team import attach

    root = ws.root
    bob = attach.attach(root, "bob").path  # a worktree inside .git, busy with its own ops
    settle(watcher, root)
    events = watcher.stats.events
    with gitspace.open(bob, agent="bob") as agent:
        for i in range(5):
            call_ok(agent, "create", {"path": f"deep/bob{i}.txt", "file_text": f"{i}\n"})
    call_ok(ws, "checkpoint", {"name": "refs-only"})  # writes under .git only
    time.sleep(0.5)
    assert watcher.stats.events == events, "events from inside .git reached the watcher"


def test_new_top_level_folders_are_watched_as_they_come_and_go(ws: gitspace.Workspace,
                                                               watcher: Watcher,
                                                               reports: list[WatchReport],
                                                               tmp_path: Path) -> None:
    root = ws.root
    (root / "fresh").mkdir()
    time.sleep(0.2)
    (root / "fresh" / "sub").mkdir()
    (root / "fresh" / "sub" / "a.txt").write_text("a\n")
    settle(watcher, root)
    assert "fresh/sub/a.txt" in new_paths(root, 0)
    outside = tmp_path / "outside"
    (outside / "inner").mkdir(parents=True)
    (outside / "inner" / "b.txt").write_text("b\n")
    os.rename(outside, root / "moved_in")  # a whole tree arrives at once
    settle(watcher, root)
    assert "moved_in/inner/b.txt" in new_paths(root, 0)
    (root / "moved_in" / "inner" / "c.txt").write_text("c\n")
    os.rename(root / "moved_in", root / "renamed")
    (root / "renamed" / "d.txt").write_text("d\n")
    settle(watcher, root)
    shutil.rmtree(root / "fresh")
    settle(watcher, root)
    (root / "fresh").mkdir()  # the same name again: a new folder, a new watch
    time.sleep(0.2)
    (root / "fresh" / "e.txt").write_text("e\n")
    settle(watcher, root)
    assert git(root, "ls-files").split() == [
        ".gitignore", "fresh/e.txt", "renamed/d.txt", "renamed/inner/b.txt", "renamed/inner/c.txt"]
    assert not [r for r in reports if r.kind == "error"]


def test_stop_says_when_the_last_edits_could_not_be_recorded(ws: gitspace.Workspace) -> None:
    root = ws.root
    w = Watcher(root, author="alice", debounce=30, max_wait=60)
    w.start()
    wait_for(lambda: w.stats.flushes >= 1, "the first flush")
    git(root, "checkout", "--quiet", "--detach")  # the last flush cannot record anything
    (root / "late.txt").write_text("written just before stopping\n")
    with pytest.raises(gitspace.GitspaceError, match="last edits are not recorded") as caught:
        w.stop()
    assert "HEAD is detached" in str(caught.value)
    assert caught.value.hint and "snapshot" in caught.value.hint
    assert (root / "late.txt").exists()


def test_the_watch_command_exits_1_when_the_last_commit_fails(ws: gitspace.Workspace) -> None:
    root = ws.root
    proc = _watch_process(root, "--debounce", "30", "--max-wait", "60")
    time.sleep(0.5)
    git(root, "checkout", "--quiet", "--detach")
    (root / "late.txt").write_text("not recorded\n")
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 1, (out, err)
    assert "pending edits committed" not in out
    assert "last edits are not recorded" in err and "snapshot" in err
