"""The path policy's refusals exactly: each sentence and its hint, every character category it
refuses, and the root forms it accepts only when asked. (Hostile paths through every tool are in
test_paths.py; the length limits in test_limits.py.)"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gitspace.core import paths
from gitspace.errors import PathRefused

HINT = "Use a plain relative path inside the workspace, like 'notes/todo.md'."


def refusal(path: object, **options: bool) -> PathRefused:
    with pytest.raises(PathRefused) as caught:
        paths.normalize(path, **options)
    return caught.value


@pytest.mark.parametrize(("path", "why"), [
    ("", "it is empty"),
    ("a\0b", "it contains control, format or unassigned characters"),
    ("e\u0301", "it is not in Unicode normal form C"),
    ("a\u2215b", "it contains a character that imitates a slash or a dot"),
    ("a\\b", "it contains a backslash"),
    ("a%2fb", "it contains URL-encoded characters"),
    ("/etc/passwd", "it is absolute; paths are relative to the workspace root"),
    ("a//b", "it has an empty, '.' or '..' part"),
    (".GIT./config", "it points into .git"),
    ("n" * 256, "one of its parts is longer than 255 bytes"),
])
def test_each_refusal_says_exactly_why_with_the_same_hint(path: str, why: str) -> None:
    refused = refusal(path)
    assert refused.message == f"The path {path!r} was refused: {why}."
    assert refused.hint == HINT


@pytest.mark.parametrize(("path", "why"), [
    ("d/" * 2048 + "f", "it is longer than 4,096 bytes"),
    ("d/" * 64 + "f", "it is more than 64 folders deep"),
])
def test_a_refused_long_path_is_shown_by_its_first_200_characters(path: str, why: str) -> None:
    refused = refusal(path)
    assert refused.message == f"The path {path[:200] + '...'!r} was refused: {why}."
    assert refused.hint == HINT


@pytest.mark.parametrize("char", ["\x01", "\u200b", "\ud800", "\ue000", "\u0378", "\u2028",
                                  "\u2029"])  # Cc Cf Cs Co Cn Zl Zp
def test_every_refused_character_category(char: str) -> None:
    assert "control, format or unassigned" in refusal(f"a{char}b").message


def test_a_path_that_is_not_a_string() -> None:
    refused = refusal(7)
    assert refused.message == "A path must be a string, not int." and refused.hint is None


@pytest.mark.parametrize("root_form", ["", ".", "./"])
def test_the_root_only_when_asked(root_form: str) -> None:
    assert paths.normalize(root_form, allow_root=True) == ""
    assert refusal(root_form).message.startswith(f"The path {root_form!r} was refused")


def test_resolve_gives_the_absolute_path_and_refuses_a_link_on_the_way(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert paths.resolve(tmp_path, "real/a.txt") == ("real/a.txt", tmp_path / "real" / "a.txt")
    assert paths.resolve(tmp_path, ".", allow_root=True) == ("", tmp_path)
    with pytest.raises(PathRefused) as caught:
        paths.resolve(tmp_path, ".")
    assert caught.value.message == "The path '.' was refused: it has an empty, '.' or '..' part."
    with pytest.raises(PathRefused) as linked:
        paths.resolve(tmp_path, "link/a.txt")
    assert linked.value.message == ("The path 'link/a.txt' was refused: link is a symbolic "
                                    "link.")
    assert linked.value.hint == HINT


def test_resolve_refuses_a_path_one_byte_over_what_fits_in_the_folder(tmp_path: Path) -> None:
    length = 4096 - 32 - len(os.fsencode(tmp_path))  # the most that fits, 32 bytes to spare
    folders = ("f" * 200 + "/") * ((length - 20) // 201)
    rel = folders + "g" * (length - len(folders))
    assert paths.resolve(tmp_path, rel) == (rel, tmp_path / rel)
    with pytest.raises(PathRefused) as caught:
        paths.resolve(tmp_path, rel + "g")
    assert caught.value.message == (f"The path {(rel + 'g')[:200] + '...'!r} was refused: inside "
                                    "this workspace it would be longer than the system's limit "
                                    "of 4,096 bytes.")


def test_only_slashes_and_only_dots_and_spaces_are_trimmed() -> None:
    assert paths.normalize("notesX/") == "notesX"  # one trailing slash goes, nothing else
    assert paths.normalize("X/", allow_root=True) == "X"
    assert paths.normalize(".gitX/a") == ".gitX/a"  # not .git: only dots and spaces are trimmed
    assert "points into .git" in refusal(".git. /a").message


def test_resolve_of_the_root_under_a_root_reached_by_a_link(tmp_path: Path) -> None:
    """The root itself is the caller's; only what lies beneath it is checked for links."""
    (tmp_path / "real").mkdir()
    (tmp_path / "via").symlink_to(tmp_path / "real")
    assert paths.resolve(tmp_path / "via", "", allow_root=True) == ("", tmp_path / "via")
