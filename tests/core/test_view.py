"""core/view.py: a checkout opened to read finishes what a crash cut short, and writes nothing else."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import call_ok, git

import gitspace
from gitspace import faults
from gitspace.core import view, writer
from gitspace.core.snapshot import pending_changes
from gitspace.errors import NotAWorkspace


def test_the_view_looks_for_the_writers_own_journal() -> None:
    assert view.JOURNAL == writer.JOURNAL


def test_a_view_reads_what_a_workspace_reads(ws: gitspace.Workspace) -> None:
    call_ok(ws, "create", {"path": "a.txt", "file_text": "one\n"})
    (ws.root / "a.txt").write_text("two\n")
    (ws.root / "b.txt").write_text("new\n")
    with view.open(ws.root) as seen:
        assert seen.owned and seen.root == ws.root
        assert sorted(pending_changes(seen)[0]) == sorted(pending_changes(ws)[0]) == [
            "a.txt", "b.txt"]
        assert seen.files.read("a.txt") == (b"two\n", 0o100644)


def test_a_view_of_a_checkout_of_the_persons_own_is_not_owned(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    (tmp_path / "x.txt").write_text("x\n")
    git(tmp_path, "add", "x.txt")
    git(tmp_path, "-c", "user.name=P", "-c", "user.email=p@p", "commit", "-qm", "mine")
    with view.open(tmp_path) as seen:
        assert not seen.owned
    assert not (tmp_path / ".git" / "gitspace").exists(), "a read of their checkout wrote there"


def test_a_change_a_crash_cut_short_is_finished_before_the_read(ws: gitspace.Workspace,
                                                               tmp_path: Path) -> None:
    call_ok(ws, "create", {"path": "a.txt", "file_text": "one\n"})
    crashed = tmp_path / "crashed"
    # The op's ref moved, its file not yet written: the crash's instant, copied.
    with faults.inject("file.replace", lambda: shutil.copytree(ws.root, crashed, symlinks=True)):
        call_ok(ws, "str_replace", {"path": "a.txt", "old_str": "one", "new_str": "two"})
    assert (crashed / ".git" / writer.JOURNAL).exists()
    with view.open(crashed) as seen:
        assert pending_changes(seen) == ({}, []), "the crash's half-made op shown as yours"
    assert not (crashed / ".git" / writer.JOURNAL).exists()
    assert (crashed / "a.txt").read_text() == "two\n"


def test_a_folder_that_is_not_there_is_refused(tmp_path: Path) -> None:
    with pytest.raises(NotAWorkspace, match="does not exist"):
        view.open(tmp_path / "nowhere")
