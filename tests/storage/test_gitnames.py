"""storage/gitnames.py ``unquoted_path``: a path git printed C-quoted (``core.quotePath``)
reads back as the bytes git holds, for every kind of byte git quotes."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from gitspace.storage.gitnames import unquoted_path

NAMES = ["plain.txt", "a b.txt", "é.txt", 'say "hi".txt', "back\\slash", "tab\there",
         "line\nbreak", "bell\x07", "\x7fdel", "𝄞 clef"]


def test_every_name_git_quotes_reads_back_as_git_holds_it(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    names = [*NAMES, os.fsdecode(b"not-utf8-\xff")]
    for name in names:
        (tmp_path / name).write_bytes(b"x\n")
    subprocess.run(["git", "-C", str(tmp_path), "add", "."], check=True)
    quoted = subprocess.run(["git", "-C", str(tmp_path), "ls-files"], check=True,
                            capture_output=True).stdout.decode("utf-8", "surrogateescape")
    raw = subprocess.run(["git", "-C", str(tmp_path), "ls-files", "-z"], check=True,
                         capture_output=True).stdout.decode("utf-8", "surrogateescape")
    assert sum(row.startswith('"') for row in quoted.splitlines()) == len(names) - 2  # (not: plain, a b)
    assert [unquoted_path(row) for row in quoted.splitlines()] == raw.rstrip("\0").split("\0")
    assert sorted(raw.rstrip("\0").split("\0")) == sorted(names)


def test_text_that_is_not_quoted_is_left_as_it_is() -> None:
    for text in ["", '"', 'a"', '"a', "plain", "\\303"]:
        assert unquoted_path(text) == text
    assert unquoted_path('"\\303\\251"') == "é" and unquoted_path('"a\\\\b\\"c"') == 'a\\b"c'
