"""storage/foreign.py: a file read in another program's folder and a new one written beside it,
never through a link, never over a file, never seen half-written."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gitspace.errors import FileRefused
from gitspace.storage import foreign


def test_a_new_file_is_written_whole_and_private(tmp_path: Path) -> None:
    (tmp_path / "old.jsonl").write_bytes(b"old\n")
    with foreign.Folder(tmp_path, "The transcript") as folder:
        assert folder.read("old.jsonl", 100) == b"old\n"
        assert folder.read("absent.jsonl", 100) is None
        folder.create("new.jsonl", b"x" * 100_000)
    assert (tmp_path / "new.jsonl").read_bytes() == b"x" * 100_000
    assert (tmp_path / "new.jsonl").stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.jsonl", "old.jsonl"]


def test_a_name_taken_is_never_replaced(tmp_path: Path) -> None:
    (tmp_path / "taken").write_bytes(b"theirs")
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    with foreign.Folder(tmp_path, "The transcript") as folder:
        for name in ("taken", "link"):
            with pytest.raises(foreign.Exists):
                folder.create(name, b"mine")
    assert (tmp_path / "taken").read_bytes() == b"theirs"
    assert not (tmp_path / "elsewhere").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "taken"]  # no temporary left


def test_a_link_for_the_folder_or_the_file_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "t.jsonl").write_bytes(b"secret")
    (tmp_path / "folder-link").symlink_to(real)
    with pytest.raises(FileRefused, match="not a folder"):
        with foreign.Folder(tmp_path / "folder-link", "The transcript"):
            pass
    (real / "file-link.jsonl").symlink_to(real / "t.jsonl")
    with foreign.Folder(real, "The transcript") as folder:
        with pytest.raises(FileRefused, match="symbolic link"):
            folder.read("file-link.jsonl", 100)
    with pytest.raises(FileRefused, match="does not exist"):
        with foreign.Folder(tmp_path / "absent", "The transcript"):
            pass


def test_a_fifo_or_a_file_over_the_limit_is_refused_unread(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")  # (opened without blocking: nobody writes to it)
    (tmp_path / "big").write_bytes(b"x" * 101)
    with foreign.Folder(tmp_path, "The transcript") as folder:
        with pytest.raises(FileRefused, match="not a regular file"):
            folder.read("fifo", 100)
        with pytest.raises(FileRefused, match="over the 100-byte cap"):
            folder.read("big", 100)


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "../x", "a\0b"])
def test_only_plain_names(tmp_path: Path, name: str) -> None:
    with foreign.Folder(tmp_path, "The transcript") as folder:
        with pytest.raises(FileRefused, match="not a plain file name"):
            folder.create(name, b"x")
        with pytest.raises(FileRefused, match="not a plain file name"):
            folder.read(name, 10)
    assert list(tmp_path.iterdir()) == []


def test_a_folder_swapped_after_opening_is_not_where_the_file_goes(tmp_path: Path) -> None:
    real, other = tmp_path / "real", tmp_path / "other"
    real.mkdir()
    other.mkdir()
    with foreign.Folder(real, "The transcript") as folder:
        real.rename(tmp_path / "moved")
        real.symlink_to(other)  # what a racing process plants after the check
        folder.create("new.jsonl", b"mine")
    assert (tmp_path / "moved" / "new.jsonl").read_bytes() == b"mine"
    assert list(other.iterdir()) == []


def test_a_failed_write_leaves_nothing(tmp_path: Path) -> None:
    # A real failure, not a stand-in: the process may write files of at most 10 bytes (the
    # kernel's file size limit), as a full disk would stop it.
    script = f"""
import resource, signal
from pathlib import Path
from gitspace.storage import foreign
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (10, 10))
with foreign.Folder(Path({str(tmp_path)!r}), "The transcript") as folder:
    try:
        folder.create("new.jsonl", b"x" * 1000)
    except OSError as e:
        print("refused", e.errno)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.stdout.split() == ["refused", str(errno.EFBIG)], out.stderr
    assert list(tmp_path.iterdir()) == []
