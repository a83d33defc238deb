"""The path policy's rules exactly (core/paths.py): what git refuses (``git_refusal``), who owns
what (``owner_refusal``), what history may not write (``history_refusal``, ``check_tree_paths``),
the content rules git applies to ``.gitmodules`` and ``.gitattributes`` (``content_refusal``),
and what a refusal shows: the path as it was typed, cut at 200 characters.

tests/test_hostile_path_policy.py shows every writer refuses these paths; this file pins which
rule refuses each one and the sentence it says, so that a weakened rule is noticed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gitspace.core import paths
from gitspace.errors import PathRefused

LINK, FILE = 0o120000, 0o100644
EMPTY_PART = "it has an empty, '.' or '..' part"
BAD_URL = b'[submodule "x"]\n\turl = -u./payload\n\tpath = x\n'
GOOD_URL = b'[submodule "x"]\n\turl = https://example.com/x\n\tpath = x\n'
OWNED = {
    "gitspace": ("the .gitspace folder belongs to gitspace (session files and their .gitignore)",
                 "Keep your own files elsewhere in the workspace."),
    "constraints": ("constraint scripts are code that gitspace runs, and agents may not write them",
                    "A person adds or edits scripts in constraints/, then runs 'gitspace snapshot'."),
    "gitmodules": ("a .gitmodules file is git's submodule configuration, which agents may not write",
                   "Describe the submodule in a note; a person runs 'git submodule add'."),
}


def refused(call: object) -> PathRefused:
    assert callable(call)
    with pytest.raises(PathRefused) as caught:
        call()
    return caught.value


# -- git_refusal ----------------------------------------------------------------------------


@pytest.mark.parametrize(("rel", "mode", "why"), [
    ("a//b", None, EMPTY_PART),
    ("a/./b", None, EMPTY_PART),
    ("a/../b", None, EMPTY_PART),
    ("a/", None, EMPTY_PART),
    ("../.GIT", None, EMPTY_PART),  # parts are judged in order
    (".GIT/..", None, "'.GIT' is a name git treats as .git on some file systems"),
    ("x/GIT~1", None, "'GIT~1' is a name git treats as .git on some file systems"),
    (".gitmodules/x", None, "git fsck rejects a folder named '.gitmodules'"),
    ("a/GI7EBA~1/b", None, "git fsck rejects a folder named 'GI7EBA~1'"),  # its hashed 8.3 name
    ("a/.GITATTRIBUTES/b", None, "git fsck rejects a folder named '.GITATTRIBUTES'"),
    (".g\u200citattributes/b", None,
     "git fsck rejects a folder named '.g\\u200citattributes'"),  # (shown escaped)
    (".gitmodules", LINK, "git refuses .gitmodules as a symbolic link"),
    ("sub/gitmod~1", LINK, "git refuses .gitmodules as a symbolic link"),
    ("sub/GI7EBA~1", LINK, "git refuses .gitmodules as a symbolic link"),
    ("sub/.g\u200citmodules", LINK, "git refuses .gitmodules as a symbolic link"),
    ("sub/.gitmodules/x", LINK, "git fsck rejects a folder named '.gitmodules'"),
])
def test_what_git_refuses_and_why(rel: str, mode: int | None, why: str) -> None:
    assert paths.git_refusal(rel, mode) == why


@pytest.mark.parametrize(("rel", "mode"), [
    ("notes/todo.md", None), ("a b/c d", None), (".gitmodules", None), (".gitmodules", FILE),
    ("sub/.gitattributes", LINK), ("sub/.gitattributes", None), ("x.git/y", None),
    (".gitmodules.md/x", None), ("constraints/x", LINK), (".gitmodules", 0o120001),
])
def test_what_git_accepts(rel: str, mode: int | None) -> None:
    assert paths.git_refusal(rel, mode) is None


# -- owner_refusal --------------------------------------------------------------------------


@pytest.mark.parametrize(("rel", "owner"), [
    (".gitspace/x", "gitspace"), (".GITSPACE", "gitspace"), ("GITSPA~1/x", "gitspace"),
    (".g\u200citspace/x", "gitspace"),
    ("constraints/evil", "constraints"), ("CONSTRAINTS/evil", "constraints"),
    ("CONSTR~1/evil", "constraints"), ("constrain\u200cts/x", "constraints"),
    (".gitmodules", "gitmodules"), ("a/b/.gitmodules", "gitmodules"), ("sub/GI7EBA~1", "gitmodules"),
    ("a/.g\u200citmodules", "gitmodules"),
])
def test_who_owns_a_path_and_what_to_do_instead(rel: str, owner: str) -> None:
    assert paths.owner_refusal(rel) == OWNED[owner]


@pytest.mark.parametrize("rel", ["notes/x", "a/.gitspace/x", "a/constraints/x", "gitspace/x",
                                 "constraints.md", ".gitmodules.md"])
def test_what_no_one_else_owns(rel: str) -> None:
    assert paths.owner_refusal(rel) is None


# -- history_refusal and check_tree_paths ------------------------------------------------------


NEVER_FROM_HISTORY = "the .gitspace folder belongs to gitspace and is never written from history"


@pytest.mark.parametrize(("rel", "mode", "why"), [
    (".gitspace/x", None, NEVER_FROM_HISTORY),
    (".gitspace/sessions/forged.json", FILE, NEVER_FROM_HISTORY),
    ("GITSPA~1/a/b", None, NEVER_FROM_HISTORY),
    (".G\u200cITSPACE", None, NEVER_FROM_HISTORY),
    (".gitspace/../x", None, EMPTY_PART),  # git's refusal comes first
    (".GIT/config", None, "'.GIT' is a name git treats as .git on some file systems"),
    ("sub/.gitmodules", LINK, "git refuses .gitmodules as a symbolic link"),
    ("a/.gitspace/x", None, None), ("constraints/x", None, None), ("sub/.gitmodules", FILE, None),
    ("notes/a.md", LINK, None),
])
def test_what_history_may_not_write(rel: str, mode: int | None, why: str | None) -> None:
    assert paths.history_refusal(rel, mode) == why


def tree_refusal(states: dict[str, tuple[bytes, int] | None]) -> str | None:
    try:
        paths.check_tree_paths(states, "switch")
    except PathRefused as e:
        assert e.hint == ("Leave that path alone; if a commit holds it, repair the history with "
                          "git.")
        return e.message
    return None


def test_a_move_that_would_write_what_history_may_not_is_refused_by_path_and_rule() -> None:
    assert tree_refusal({"a.txt": (b"a\n", FILE), "gone.txt": None, "constraints/x": None}) is None
    assert tree_refusal({"a.txt": (b"a\n", FILE), ".gitspace/x": None}) == (
        f"switch would write '.gitspace/x', which gitspace never writes: {NEVER_FROM_HISTORY}.")
    assert tree_refusal({"sub/.gitmodules": (b"../elsewhere", LINK)}) == (
        "switch would write 'sub/.gitmodules', which gitspace never writes: git refuses "
        ".gitmodules as a symbolic link.")
    assert tree_refusal({"sub/.gitmodules": (GOOD_URL, FILE), "sub/.gitmodules.md": None}) is None
    assert tree_refusal({"sub/.gitmodules": None}) is None  # a removal has no content to judge
    assert tree_refusal({"a/b/.gitmodules": (BAD_URL, FILE)}) == (
        "switch would write 'a/b/.gitmodules', which gitspace never writes: git fsck says "
        "gitmodulesUrl: disallowed submodule url: -u./payload.")


# -- content_refusal ------------------------------------------------------------------------


@pytest.mark.parametrize(("rel", "data", "why"), [
    (".gitmodules", BAD_URL, "git fsck says gitmodulesUrl: disallowed submodule url: -u./payload"),
    ("a/b/GI7EBA~1", BAD_URL, "git fsck says gitmodulesUrl: disallowed submodule url: -u./payload"),
    ("a/b/.g\u200citmodules", BAD_URL,
     "git fsck says gitmodulesUrl: disallowed submodule url: -u./payload"),
    ("a/b/.gitattributes", b"a" * 3000 + b" text\n",
     "git fsck says gitattributesLineLength: .gitattributes has too long lines to parse"),
    ("a/b/GITATT~1", b"a" * 3000 + b" text\n",
     "git fsck says gitattributesLineLength: .gitattributes has too long lines to parse"),
    ("a/b/.gitattr\u200cibutes", b"a" * 3000 + b" text\n",
     "git fsck says gitattributesLineLength: .gitattributes has too long lines to parse"),
    (".gitmodules", GOOD_URL, None), (".gitmodules/notes.md", BAD_URL, None),
    ("notes.md", BAD_URL, None),
])
def test_the_content_git_refuses_in_its_own_files(rel: str, data: bytes, why: str | None) -> None:
    assert paths.content_refusal(rel, data) == why


# -- what a refusal shows ---------------------------------------------------------------------


def test_an_agent_may_not_write_what_is_owned_or_what_git_refuses_and_is_shown_as_typed() -> None:
    assert paths.check_writable("notes/a.md") == "notes/a.md"
    owned = refused(lambda: paths.check_writable("constraints/x", "./constraints/x"))
    assert owned.message == f"The path './constraints/x' was refused: {OWNED['constraints'][0]}."
    assert owned.hint == OWNED["constraints"][1]
    owned = refused(lambda: paths.check_writable(".gitspace/x"))
    assert owned.message == f"The path '.gitspace/x' was refused: {OWNED['gitspace'][0]}."
    git = refused(lambda: paths.check_writable(".gitattributes/x", "./.gitattributes/x/"))
    assert git.message == ("The path './.gitattributes/x/' was refused: git fsck rejects a folder "
                           "named '.gitattributes'.")
    assert git.hint == paths.HINT
    git = refused(lambda: paths.check_writable("a/GIT~1"))
    assert git.message == ("The path 'a/GIT~1' was refused: 'GIT~1' is a name git treats as .git "
                           "on some file systems.")


@pytest.mark.parametrize(("path", "why"), [
    ("a//.git/x", EMPTY_PART), ("../.git", EMPTY_PART), ("a/./.git", EMPTY_PART),
    (".gitmodules/x", "git fsck rejects a folder named '.gitmodules'"),
    ("a/.GITATTRIBUTES/b", "git fsck rejects a folder named '.GITATTRIBUTES'"),
])
def test_normalize_refuses_in_order_and_says_what_git_would(path: str, why: str) -> None:
    error = refused(lambda: paths.normalize(path))
    assert error.message == f"The path {path!r} was refused: {why}."
    assert error.hint == paths.HINT


def test_a_path_too_deep_is_shown_by_its_first_200_characters() -> None:
    deep = "/".join(["abcd"] * (paths.MAX_DEPTH + 1))
    error = refused(lambda: paths.normalize(deep))
    assert error.message == (f"The path {deep[:200] + '...'!r} was refused: it is more than "
                             f"{paths.MAX_DEPTH} folders deep.")


def deep_root(tmp_path: Path, length: int) -> Path:
    """A folder whose path is ``length`` bytes long."""
    root, remaining = tmp_path, length - len(os.fsencode(tmp_path))
    while remaining > 0:  # each part adds a slash and its name
        n = min(200, remaining - 1)
        if remaining - (n + 1) == 1:
            n -= 1  # (no part could fill a single byte)
        root, remaining = root / ("d" * n), remaining - (n + 1)
    assert len(os.fsencode(root)) == length
    root.mkdir(parents=True)
    return root


def test_a_path_too_long_for_the_system_is_shown_as_typed_and_cut_at_200_characters(
        tmp_path: Path) -> None:
    limit = os.pathconf(tmp_path, "PC_PATH_MAX")
    root = deep_root(tmp_path, limit - 32 - 200)  # room for a path of exactly 200 bytes
    fits = "n/" + "x" * 198
    assert paths.resolve(root, fits)[0] == fits
    assert paths.resolve(root, "./" + fits + "/")[0] == fits  # what counts is the canonical path
    over = fits + "y"
    why = f"inside this workspace it would be longer than the system's limit of {limit:,} bytes"
    error = refused(lambda: paths.resolve(root, over))
    assert error.message == f"The path {over[:200] + '...'!r} was refused: {why}."
    error = refused(lambda: paths.resolve(root, "./" + over))
    assert error.message == f"The path {'./' + over[:198] + '...'!r} was refused: {why}."
    short = "x" * 200
    error = refused(lambda: paths.check_length(root, "n/" + short, short))
    assert error.message == f"The path {short!r} was refused: {why}."  # 200 characters: whole
    error = refused(lambda: paths.check_length(root, "n/" + short))  # nothing typed: the path
    assert error.message == f"The path {('n/' + short)[:200] + '...'!r} was refused: {why}."


def test_resolve_for_writing_shows_the_path_as_typed(tmp_path: Path) -> None:
    error = refused(lambda: paths.resolve(tmp_path, "./.gitspace/x", write=True))
    assert error.message == f"The path './.gitspace/x' was refused: {OWNED['gitspace'][0]}."
    assert paths.resolve(tmp_path, "./notes/a.md", write=True) == ("notes/a.md",
                                                                   tmp_path / "notes" / "a.md")
