"""``bounded.read_tail``: the end of a file another program keeps writing (a harness's
transcript), at most ``limit`` bytes, never through a link, never from a fifo."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from gitspace.errors import FileRefused
from gitspace.storage import bounded


def test_the_tail_of_a_large_file_and_the_whole_of_a_small_one(tmp_path: Path) -> None:
    big = tmp_path / "big.jsonl"
    big.write_bytes(b"x" * 100_000 + b"\nlast line\n")
    assert bounded.read_tail(big, 20, what="The transcript") == (b"x" * 9 + b"\nlast line\n",
                                                                  False)
    small = tmp_path / "small.jsonl"
    small.write_bytes(b"one\n")
    assert bounded.read_tail(small, 20, what="The transcript") == (b"one\n", True)
    assert bounded.read_tail(tmp_path / "absent", 20, what="The transcript") is None


def test_a_link_is_refused_and_its_target_never_read(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("private\n")
    (tmp_path / "link.jsonl").symlink_to(secret)
    with pytest.raises(FileRefused, match="symbolic link"):
        bounded.read_tail(tmp_path / "link.jsonl", 100, what="The transcript")


def test_a_fifo_or_a_folder_is_refused_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    done: list[BaseException] = []

    def read() -> None:
        try:
            bounded.read_tail(fifo, 100, what="The transcript")
        except BaseException as e:  # noqa: BLE001  (checked below)
            done.append(e)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(10)
    assert not reader.is_alive(), "a fifo blocked the reader"
    assert isinstance(done[0], FileRefused) and "a fifo" in str(done[0])
    with pytest.raises(FileRefused, match="a folder"):
        bounded.read_tail(tmp_path, 100, what="The transcript")
