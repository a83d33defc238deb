"""The op transaction on real repositories: one op = one commit, failures change nothing,
outside edits are never folded into a tool's commit, and git's environment cannot redirect us."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    assert_clean,
    call_ok,
    changed_files,
    git,
    git_run,
    head,
    lock_files,
    message_of,
    ops,
    state,
    work_tree_files,
)

import gitspace
from gitspace.core import transaction, writer
from gitspace.errors import (
    BadArguments,
    FileRefused,
    PathRefused,
    ToolFailed,
    system_hint,
)

MiB = 1 << 20


def trailer(root: Path, key: str, rev: str = "HEAD") -> str:
    """A trailer value as git's own trailer parser reads it."""
    return git(root, "log", "-1", f"--format=%(trailers:key={key},valueonly)", rev).strip()


def write(root: Path, rel: str, data: str | bytes) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)


# -- one op, one commit ----------------------------------------------------------------------


def test_one_op_is_one_commit_with_trailers_author_and_committer(ws: gitspace.Workspace) -> None:
    root = ws.root
    before = head(root)
    result = ws.call("create", {"path": "notes/todo.md", "file_text": "- explore\n"},
                     tool_use_id="toolu_01ABC")
    assert result.ok and result.text == "File created successfully at: notes/todo.md"
    assert result.changed == ["notes/todo.md"] and result.external_op is None
    assert head(root) == result.commit
    assert git(root, "rev-list", "--count", f"{before}..HEAD").strip() == "1"
    assert git(root, "rev-parse", "HEAD^").strip() == before
    assert git(root, "log", "-1", "--format=%an <%ae>|%cn <%ce>").strip() == (
        "tester <tester@gitspace>|gitspace <gitspace@localhost>")
    assert message_of(root) == (
        "create notes/todo.md\n\n"
        "Result:\nFile created successfully at: notes/todo.md\n\n"
        "Gitspace-Format: 4\n"
        f"Gitspace-Op: {result.op}\n"
        "Gitspace-Tool: create\n"
        "Gitspace-Source: tool\n"
        'Gitspace-Args: {"file_text":"- explore\\n","path":"notes/todo.md"}\n'
        "Gitspace-Agent: tester\n"
        "Gitspace-Tool-Use-Id: toolu_01ABC\n"
        f"Gitspace-After: {trailer(root, 'Gitspace-Op', 'HEAD~1')}\n\n"
    )
    assert trailer(root, "Gitspace-Op") == result.op
    assert trailer(root, "Gitspace-Tool") == "create"
    assert changed_files(root) == ["notes/todo.md"]
    assert git(root, "show", "HEAD:notes/todo.md") == "- explore\n"
    assert_clean(root)


def test_each_mutating_tool_makes_exactly_one_commit(ws: gitspace.Workspace) -> None:
    root = ws.root
    calls: list[tuple[str, dict[str, Any]]] = [
        ("create", {"path": "a.txt", "file_text": "one\ntwo\n"}),
        ("str_replace", {"path": "a.txt", "old_str": "two", "new_str": "TWO"}),
        ("insert", {"path": "a.txt", "insert_line": 1, "insert_text": "one and a half\n"}),
        ("append", {"path": "a.txt", "text": "three\n"}),
        ("rename", {"old_path": "a.txt", "new_path": "d/b.txt"}),
        ("delete", {"path": "d/b.txt"}),
    ]
    for tool, args in calls:
        before = head(root)
        result = call_ok(ws, tool, args)
        assert git(root, "rev-list", "--count", f"{before}..HEAD").strip() == "1", tool
        assert trailer(root, "Gitspace-Tool") == tool
        assert trailer(root, "Gitspace-Op") == result.op
        assert_clean(root)
    assert [op.tool for op in ops(root)] == ["init", *(t for t, _ in calls)]


def test_unchanged_call_makes_no_commit(ws: gitspace.Workspace) -> None:
    call_ok(ws, "create", {"path": "a.txt", "file_text": "same\n"})
    before = state(ws.root)
    for tool, args in [
        ("create", {"path": "a.txt", "file_text": "same\n"}),
        ("str_replace", {"path": "a.txt", "old_str": "same", "new_str": "same"}),
    ]:
        result = call_ok(ws, tool, args)
        assert result.text.startswith("unchanged"), (tool, result.text)
        assert result.op is None and result.commit is None and result.tool == tool
    assert state(ws.root) == before
    assert_clean(ws.root)


def test_read_only_tools_never_commit(ws: gitspace.Workspace) -> None:
    call_ok(ws, "create", {"path": "a.txt", "file_text": "alpha\nbeta\n"})
    before = state(ws.root)
    assert "2\tbeta" in call_ok(ws, "view", {"path": "a.txt"}).text
    assert "a.txt" in call_ok(ws, "view", {"path": "."}).text
    assert "a.txt:2:beta" in call_ok(ws, "search", {"pattern": "be.a"}).text
    assert "create a.txt" in call_ok(ws, "log", {}).text
    assert state(ws.root) == before


# -- failures change nothing -----------------------------------------------------------------


def _setup(root: Path) -> None:
    write(root, "big.txt", b"x" * (MiB + 1))
    write(root, "blob.bin", b"\x00\x01\x02binary\n")
    write(root, "latin1.txt", "caf\xe9\n".encode("latin-1"))


FAILURES = [
    ("missing argument", "create", {"path": "a.txt"}, BadArguments, "file_text"),
    ("unknown argument", "create", {"path": "a.txt", "file_text": "", "mode": 7}, BadArguments,
     "mode"),
    ("wrong type", "insert", {"path": "a.txt", "insert_line": "1", "insert_text": "x"},
     BadArguments, "insert_line"),
    ("no match", "str_replace", {"path": "a.txt", "old_str": "zebra", "new_str": "x"}, ToolFailed,
     "did not appear verbatim in a.txt"),
    ("two matches", "str_replace", {"path": "a.txt", "old_str": "dup", "new_str": "x"},
     ToolFailed, "appears 2 times in a.txt, at lines 2, 4"),
    ("insert past end", "insert", {"path": "a.txt", "insert_line": 6, "insert_text": "x\n"},
     ToolFailed, "within the range [0, 5]"),
    ("negative insert", "insert", {"path": "a.txt", "insert_line": -1, "insert_text": "x\n"},
     BadArguments, "insert_line"),
    ("missing file", "str_replace", {"path": "nope.txt", "old_str": "a", "new_str": "b"},
     ToolFailed, "nope.txt does not exist"),
    ("escape", "create", {"path": "../evil.txt", "file_text": "x"}, PathRefused, "'..'"),
    ("into .git", "create", {"path": ".git/config", "file_text": "x"}, PathRefused, ".git"),
    ("too large to write", "create", {"path": "huge.txt", "file_text": "y" * (MiB + 1)},
     FileRefused, "1,048,577 bytes is over the 1,048,576-byte cap"),
    ("too large to edit", "append", {"path": "big.txt", "text": "z"}, FileRefused,
     "big.txt is 1,048,577 bytes"),
    ("binary edit", "str_replace", {"path": "blob.bin", "old_str": "binary", "new_str": "text"},
     FileRefused, "binary data"),
    ("binary append", "append", {"path": "blob.bin", "text": "more"}, FileRefused, "binary data"),
    ("not utf-8", "insert", {"path": "latin1.txt", "insert_line": 0, "insert_text": "x\n"},
     FileRefused, "not UTF-8"),
    ("rename onto existing", "rename", {"old_path": "a.txt", "new_path": "b.txt"}, ToolFailed,
     "already exists"),
    ("rename into itself", "rename", {"old_path": "d", "new_path": "d/e"}, ToolFailed,
     "onto itself"),
    ("delete missing", "delete", {"path": "ghost.txt"}, ToolFailed, "ghost.txt does not exist"),
    # I/O failures after the ref moved: the write fails, the ref is swapped back.
    ("parent is a file", "create", {"path": "a.txt/child.txt", "file_text": "x"}, ToolFailed,
     "A parent of a.txt/child.txt is a file"),
    ("file over a folder", "create", {"path": "d", "file_text": "x"}, ToolFailed,
     "d is a folder in the work tree"),
    ("rename under a file", "rename", {"old_path": "b.txt", "new_path": "a.txt/b.txt"}, ToolFailed,
     "A parent of a.txt/b.txt is a file"),
]


@pytest.mark.parametrize("why,tool,args,error,words", FAILURES, ids=[f[0] for f in FAILURES])
def test_failed_op_changes_nothing(ws: gitspace.Workspace, why: str, tool: str,
                                   args: dict[str, Any], error: type, words: str) -> None:
    root = ws.root
    call_ok(ws, "create", {"path": "a.txt", "file_text": "one\ndup\ntwo\ndup\nthree\n"})
    call_ok(ws, "create", {"path": "b.txt", "file_text": "bee\n"})
    call_ok(ws, "create", {"path": "d/inner.txt", "file_text": "in\n"})
    _setup(root)
    before = state(root)
    result = ws.call(tool, args)
    assert not result.ok
    assert isinstance(result.error, error), result.text
    assert words in result.text
    assert result.op is None and result.commit is None
    assert state(root) == before
    assert not lock_files(root)
    assert not (root / ".git" / "gitspace" / "journal.json").exists()
    assert not [p for p in work_tree_files(root) if p.name.startswith(".gitspace-")], \
        "a temporary file was left behind"
    for rel in ("big.txt", "blob.bin", "latin1.txt"):
        (root / rel).unlink()
    assert_clean(root)


def test_failure_after_partial_multi_file_write_rolls_back(ws: gitspace.Workspace) -> None:
    """A folder rename whose second write fails puts the first file back."""
    root = ws.root
    call_ok(ws, "create", {"path": "src/a.txt", "file_text": "a\n"})
    call_ok(ws, "create", {"path": "src/b.txt", "file_text": "b\n"})
    call_ok(ws, "create", {"path": "blocker", "file_text": "I am a file\n"})
    before = state(root)
    result = ws.call("rename", {"old_path": "src", "new_path": "blocker/src"})
    assert not result.ok and "A parent of blocker/src/a.txt is a file" in result.text
    assert state(root) == before
    assert_clean(root)


def test_a_write_over_the_file_size_cap_is_refused_with_what_to_do(
        ws: gitspace.Workspace) -> None:
    result = ws.call("create", {"path": "big.txt", "file_text": "x" * (MiB + 1)})
    assert isinstance(result.error, FileRefused), result.text
    assert result.error.message == (
        "Refused to write big.txt: 1,048,577 bytes is over the 1,048,576-byte cap.")
    assert result.error.hint == "Split the content into smaller files."
    assert not (ws.root / "big.txt").exists()


def test_a_refused_write_says_what_the_system_said_and_where() -> None:
    failure = writer.write_failed(OSError(errno.ENOSPC, "No room (quota)", "/ws/a.txt"))
    assert failure.message == "A write failed: No room (quota) (/ws/a.txt). Nothing was changed."
    assert failure.hint == system_hint(errno.ENOSPC)


# -- outside edits ---------------------------------------------------------------------------


def test_outside_edit_of_touched_file_is_its_own_op(ws: gitspace.Workspace) -> None:
    root = ws.root
    call_ok(ws, "create", {"path": "a.txt", "file_text": "one\ntwo\n"})
    call_ok(ws, "create", {"path": "b.txt", "file_text": "bee\n"})
    base = head(root)
    write(root, "a.txt", "one\ntwo\nthree (by hand)\n")
    write(root, "b.txt", "bee edited by hand\n")
    write(root, "c.txt", "new by hand\n")

    result = call_ok(ws, "str_replace", {"path": "a.txt", "old_str": "two", "new_str": "TWO"})
    assert result.external_op is not None and result.external_op != result.op
    assert git(root, "rev-list", "--count", f"{base}..HEAD").strip() == "2"
    external, tool = ops(root)[-2:]
    assert (external.op_id, external.tool, external.source, external.agent) == (
        result.external_op, "external_edit", "external", "unknown")
    assert external.args == {"count": 1, "paths": ["a.txt"]}
    assert (tool.op_id, tool.tool, tool.source) == (result.op, "str_replace", "tool")
    # The outside change is exactly the external commit; the tool's change exactly the op.
    assert changed_files(root, "HEAD~1") == ["a.txt"]
    assert git(root, "show", "HEAD~1:a.txt") == "one\ntwo\nthree (by hand)\n"
    assert git(root, "log", "-1", "--format=%an|%cn", "HEAD~1").strip() == "unknown|gitspace"
    assert 'Outside changes found before str_replace.\n\nFiles:\n"a.txt"\n' in message_of(
        root, "HEAD~1")  # (git log shows the person which files changed outside)
    assert git(root, "diff", "HEAD~1", "HEAD") == git(root, "diff", "HEAD~1", "HEAD", "--", "a.txt")
    diff = git(root, "diff", "-U0", "HEAD~1", "HEAD", "--", "a.txt")
    assert [ln for ln in diff.splitlines() if ln[:1] in "+-" and ln[:3] not in ("+++", "---")] == [
        "-two", "+TWO"]
    assert (root / "a.txt").read_text() == "one\nTWO\nthree (by hand)\n"

    # Untouched outside edits are still pending, not committed by the op.
    status = git(root, "status", "--porcelain", "--untracked-files=all")
    assert sorted(status.splitlines()) == [" M b.txt", "?? c.txt"]
    tip = head(root)
    snap = ws.snapshot()
    assert snap.ok and snap.op and snap.changed == ["b.txt", "c.txt"]
    assert git(root, "rev-parse", "HEAD^").strip() == tip
    last = ops(root)[-1]
    assert (last.op_id, last.source, last.tool) == (snap.op, "external", "external_edit")
    assert last.args == {"count": 2, "paths": ["b.txt", "c.txt"]}
    assert git(root, "log", "-1", "--format=%s").strip() == "external edit of b.txt and 1 more"
    assert changed_files(root) == ["b.txt", "c.txt"]
    assert_clean(root)
    assert ws.snapshot().text.startswith("unchanged")


def test_outside_delete_of_touched_file_is_recorded_first(ws: gitspace.Workspace) -> None:
    root = ws.root
    call_ok(ws, "create", {"path": "a.txt", "file_text": "one\n"})
    (root / "a.txt").unlink()
    result = call_ok(ws, "create", {"path": "a.txt", "file_text": "fresh\n"})
    assert result.external_op is not None
    assert git(root, "diff-tree", "-r", "--name-status", "--no-commit-id", "HEAD~1").strip() == (
        "D\ta.txt")
    assert git(root, "show", "HEAD:a.txt") == "fresh\n"
    assert_clean(root)


def test_outside_edit_external_author_is_configurable(ws_root: Path) -> None:
    gitspace.init(ws_root, agent="tester").close()
    with gitspace.open(ws_root, agent="tester", external_author="alice") as ws:
        call_ok(ws, "create", {"path": "a.txt", "file_text": "1\n"})
        write(ws_root, "a.txt", "2\n")
        call_ok(ws, "append", {"path": "a.txt", "text": "3\n"})
        assert ops(ws_root)[-2].agent == "alice"
        assert git(ws_root, "log", "-1", "--format=%an", "HEAD~1").strip() == "alice"
        assert (ws_root / "a.txt").read_text() == "2\n3\n"
        assert_clean(ws_root)


def test_snapshot_skips_ignored_and_oversized_files(ws: gitspace.Workspace) -> None:
    root = ws.root
    write(root, ".gitignore", ".gitspace/\n*.log\nbuild/\n")
    write(root, "debug.log", "noise\n")
    write(root, "build/out.txt", "artifact\n")
    write(root, "huge.dat", b"h" * (MiB + 1))
    write(root, "note.txt", "keep me\n")
    write(root, ".gitspace/session.json", "{}\n")
    result = ws.snapshot()
    assert result.ok and result.changed == [".gitignore", "note.txt"]
    assert "huge.dat (1,048,577 bytes, over the 1,048,576-byte cap)" in result.text
    tree = git(root, "ls-tree", "-r", "--name-only", "HEAD").split()
    assert sorted(tree) == [".gitignore", "note.txt"]
    assert git(root, "status", "--porcelain", "--untracked-files=all") == "?? huge.dat\n"
    assert (root / "huge.dat").stat().st_size == MiB + 1
    (root / "huge.dat").unlink()
    assert_clean(root)


def test_snapshot_with_nothing_pending_is_unchanged(ws: gitspace.Workspace) -> None:
    before = state(ws.root)
    result = ws.snapshot()
    assert result.ok and result.op is None and result.text.startswith("unchanged")
    assert state(ws.root) == before


# -- git's environment and hooks -------------------------------------------------------------


def _other_repo(tmp_path: Path) -> tuple[Path, tuple[str, bytes, str]]:
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    write(other, "theirs.txt", "theirs\n")
    git(other, "add", "theirs.txt")
    git(other, "commit", "-q", "-m", "theirs")
    return other, _fingerprint(other)


def _fingerprint(repo: Path) -> tuple[str, bytes, str]:
    return (head(repo), (repo / ".git" / "index").read_bytes(),
            git(repo, "status", "--porcelain", "--untracked-files=all"))


def test_inherited_git_variables_do_not_redirect(
    tmp_path: Path, ws_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other, fingerprint = _other_repo(tmp_path)
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    monkeypatch.setenv("GIT_INDEX_FILE", str(other / ".git" / "index"))
    monkeypatch.setenv("GIT_OBJECT_DIRECTORY", str(other / ".git" / "objects"))
    with gitspace.init(ws_root, agent="tester") as ws:
        call_ok(ws, "create", {"path": "a.txt", "file_text": "mine\n"})
    with gitspace.open(ws_root, agent="tester") as ws:
        assert ws.root == ws_root
        call_ok(ws, "append", {"path": "a.txt", "text": "more\n"})
        call_ok(ws, "checkpoint", {"name": "cp"})
        call_ok(ws, "undo", {})
        write(ws_root, "outside.txt", "x\n")
        assert ws.snapshot().ok
        assert "mine" in call_ok(ws, "search", {"pattern": "mine"}).text
    assert _fingerprint(other) == fingerprint
    assert not (other / "a.txt").exists()
    assert [op.tool for op in ops(ws_root)] == [
        "init", "create", "append", "undo", "external_edit"]
    assert (ws_root / "a.txt").read_text() == "mine\n"
    assert_clean(ws_root)


def test_user_hooks_never_run(tmp_path: Path, ws: gitspace.Workspace) -> None:
    root = ws.root
    marker = tmp_path / "hook-ran"
    script = f"#!/bin/sh\necho \"$0\" >> {marker}\nexit 1\n"
    hook_dirs = [root / ".git" / "hooks", tmp_path / "user-hooks"]
    for folder in hook_dirs:
        folder.mkdir(exist_ok=True)
        for name in ("pre-commit", "post-commit", "commit-msg", "prepare-commit-msg",
                     "post-checkout", "reference-transaction", "post-index-change",
                     "pre-auto-gc", "post-rewrite"):
            hook = folder / name
            hook.write_text(script)
            hook.chmod(0o755)
    # Prove the hooks are live for plain git, then point core.hooksPath at the other folder.
    git(root, "-c", "core.hooksPath=/dev/null", "config", "core.hooksPath", str(hook_dirs[1]))
    proc = git_run(root, "commit", "--allow-empty", "-q", "-m", "probe")
    assert proc.returncode != 0 and marker.exists()
    marker.unlink()

    call_ok(ws, "create", {"path": "a.txt", "file_text": "1\n"})
    call_ok(ws, "str_replace", {"path": "a.txt", "old_str": "1", "new_str": "2"})
    call_ok(ws, "checkpoint", {"name": "cp"})
    call_ok(ws, "undo", {})
    call_ok(ws, "redo", {})
    call_ok(ws, "branch", {"name": "side"})
    call_ok(ws, "delete", {"path": "a.txt"})
    call_ok(ws, "switch", {"name": "main"})
    call_ok(ws, "restore", {"name": "cp"})
    write(root, "b.txt", "outside\n")
    assert ws.snapshot().ok
    call_ok(ws, "search", {"pattern": "2"})
    assert not marker.exists(), marker.read_text()
    assert_clean(root)


def test_index_file_is_standard_git_index(ws: gitspace.Workspace) -> None:
    """After ops, the index git reads agrees with HEAD's tree entry for entry."""
    call_ok(ws, "create", {"path": "x/y/z.txt", "file_text": "z\n"})
    call_ok(ws, "create", {"path": "run.sh", "file_text": "#!/bin/sh\n"})
    index = git(ws.root, "ls-files", "-s").splitlines()
    tree = git(ws.root, "ls-tree", "-r", "HEAD").splitlines()
    assert [ln.split()[1] + " " + ln.split()[-1] for ln in index] == [
        ln.split()[2] + " " + ln.split()[-1] for ln in tree]
    assert git(ws.root, "diff-index", "--cached", "HEAD") == ""
    assert stat.S_IMODE(os.stat(ws.root / "run.sh").st_mode) == 0o644
    assert_clean(ws.root)


def test_a_disk_state_over_its_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_bytes(b"x" * 5)
    with pytest.raises(FileRefused, match="big.txt is 5 bytes, over the 4-byte cap"):
        transaction.disk_state(tmp_path, "big.txt", limit=4)
    assert transaction.disk_state(tmp_path, "big.txt", limit=5) == (b"xxxxx", 0o100644)

