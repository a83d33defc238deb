"""storage/statefiles.py: gitspace's own state under a git directory, never through a link.

A folder that is a link is refused with what to do, and nothing is written where it points; a
state file is replaced whole by rename (a link at its name is replaced, its target untouched);
a fifo or a link at a state file's name is refused unread, never opened to block; removing a
link removes the link.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import gitspace
from gitspace.storage import statefiles


def test_a_link_where_gitspace_keeps_its_state_is_refused_with_what_to_do(
        tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "gitspace").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(gitspace.GitspaceError) as refused:
        statefiles.folder(tmp_path, "gitspace")
    folder = tmp_path / "gitspace"
    assert refused.value.message == (
        f"{folder} is not a folder (a link or a file stands there), so gitspace will not keep "
        "its state in it.")
    assert refused.value.hint == f"Move {folder} away, then run the command again."
    assert not list((tmp_path / "elsewhere").iterdir())

def test_a_state_file_is_replaced_whole_never_written_through_a_link(tmp_path: Path) -> None:
    target = tmp_path / "someone's.txt"
    target.write_text("theirs\n")
    statefiles.folder(tmp_path, "gitspace")
    (tmp_path / "gitspace" / "journal.json").symlink_to(target)
    statefiles.write(tmp_path, "gitspace/journal.json", b"{}")
    assert target.read_text() == "theirs\n"
    assert not (tmp_path / "gitspace" / "journal.json").is_symlink()
    assert statefiles.read(tmp_path, "gitspace/journal.json") == b"{}"
    assert statefiles.names(tmp_path, "gitspace") == ["journal.json"]  # no temporary file left
    statefiles.write(tmp_path, "gitspace/a/b/deep.json", b"1")  # folders made on the way
    assert statefiles.read(tmp_path, "gitspace/a/b/deep.json") == b"1"
    assert statefiles.read(tmp_path, "gitspace/absent.json") is None


def test_a_fifo_or_a_link_at_a_state_files_name_is_refused_unread(tmp_path: Path) -> None:
    statefiles.folder(tmp_path, "gitspace")
    os.mkfifo(tmp_path / "gitspace" / "journal.json")  # reading it would block for ever
    with pytest.raises(statefiles.StateRefused) as refused:
        statefiles.read(tmp_path, "gitspace/journal.json")
    assert refused.value.hint is not None and "Move" in refused.value.hint
    (tmp_path / "gitspace" / "journal.json").unlink()
    (tmp_path / "gitspace" / "journal.json").symlink_to("/dev/zero")
    with pytest.raises(statefiles.StateRefused):
        statefiles.read(tmp_path, "gitspace/journal.json")
    statefiles.remove(tmp_path, "gitspace/journal.json")  # the link goes, /dev/zero stays
    assert statefiles.names(tmp_path, "gitspace") == [] and Path("/dev/zero").exists()
    statefiles.remove(tmp_path, "gitspace/journal.json")  # absent: nothing to do
    statefiles.remove(tmp_path, "nowhere/journal.json")
