"""The one path policy: what a path may look like, and who may write it.

Invariants:
- a path that passes ``resolve`` names a location inside the work tree, outside ``.git``, reached
  without following any symbolic link, spelled in one canonical way (NFC, ``/``-separated, no
  ``.``/``..``/empty parts), short enough for the system to open, and free of characters that
  could disguise it. Everything else is refused with a sentence that says why, before any file is
  touched.
- no path gitspace writes or commits is one git itself would refuse (``git_refusal``): git's
  ``verify_path`` with ``core.protectNTFS`` and ``core.protectHFS`` both on, so no component is a
  name that some file system treats as ``.git`` (``.GIT``, ``GIT~1``, ``.git.``, ``.git ``,
  ``.git::$INDEX_ALLOCATION``, ``.g\\u200cit``...), and nothing ``git fsck --strict`` rejects
  (``.gitmodules`` as a symbolic link, ``.gitmodules``/``.gitattributes`` as a folder, content
  of either that git's own checks refuse: storage/fsck.py asks git). This holds for agent paths,
  for the writes of constraint scripts, for outside edits gitspace commits, and for paths
  arriving from history or a remote (``history_refusal``).
- who owns what (``owner_refusal``): ``.gitspace/`` belongs to gitspace alone (sessions,
  their ``.gitignore``), ``constraints/`` to people (scripts are code gitspace runs), and
  ``.gitmodules`` to git; an agent writes none of them, under any spelling a file system would
  read as the same name. docs/trust.md states the whole rule.

The alias checks (storage/gitnames.py, shared with the work-tree writer's last-line check) are
ports of git's ``is_ntfs_dot_generic`` and ``is_hfs_dot_generic``.
"""

from __future__ import annotations

import functools
import os
import re
import unicodedata
from collections.abc import Mapping
from pathlib import Path

from ..errors import PathRefused
from ..storage.gitnames import aliases, is_dotgit

_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
# Characters that look like separators or dots but are not: refused rather than guessed at.
_LOOKALIKES = set("\u2215\u2044\u29f8\uff0f\uff3c\u2024\uff0e\u3002\ufe52\u2025\u2026")
MAX_PATH_BYTES = 4096
MAX_PART_BYTES = 255
MAX_DEPTH = 64  # folders deep; git and gitspace walk trees recursively
# Bytes the system needs beyond root + path: the separator, the NUL, and put_file's tmp names.
_PATH_SLACK = 32
HINT = "Use a plain relative path inside the workspace, like 'notes/todo.md'."


def _refuse(path: str, why: str, hint: str = HINT) -> PathRefused:
    return PathRefused(f"The path {path!r} was refused: {why}.", hint=hint)


# -- what git refuses, what the owners keep --------------------------------------------------


def git_refusal(rel: str, mode: int | None = None) -> str | None:
    """Why git (``verify_path``, ``fsck --strict``) would refuse ``rel`` as a tree entry of
    ``mode`` (None: any), or None when it would not."""
    parts = rel.split("/")
    for index, part in enumerate(parts):
        if part in ("", ".", ".."):
            return "it has an empty, '.' or '..' part"
        if is_dotgit(part):
            return f"{part!r} is a name git treats as .git on some file systems"
        last = index == len(parts) - 1
        if not last and (aliases(part, ".gitmodules") or aliases(part, ".gitattributes")):
            return f"git fsck rejects a folder named {part!r}"
        if last and mode == 0o120000 and aliases(part, ".gitmodules"):
            return "git refuses .gitmodules as a symbolic link"
    return None


def content_refusal(rel: str, data: bytes) -> str | None:
    """Why ``git fsck --strict`` would reject ``data`` as the content of ``rel``, or None. Only
    ``.gitmodules`` and ``.gitattributes`` have content rules, and git itself judges them."""
    name = rel.rsplit("/", 1)[-1]
    if aliases(name, ".gitmodules") or aliases(name, ".gitattributes"):
        from ..storage import fsck  # here: it starts git, and a harness's hook never needs it

        return fsck.refusal(name, data)
    return None


def owner_refusal(rel: str) -> tuple[str, str] | None:
    """(why, hint) when ``rel`` belongs to someone other than an agent: gitspace, people, git."""
    parts = rel.split("/")
    if aliases(parts[0], ".gitspace"):
        return ("the .gitspace folder belongs to gitspace (session files and their .gitignore)",
                "Keep your own files elsewhere in the workspace.")
    if aliases(parts[0], "constraints"):
        return ("constraint scripts are code that gitspace runs, and agents may not write them",
                "A person adds or edits scripts in constraints/, then runs 'gitspace snapshot'.")
    if any(aliases(part, ".gitmodules") for part in parts):
        return ("a .gitmodules file is git's submodule configuration, which agents may not write",
                "Describe the submodule in a note; a person runs 'git submodule add'.")
    return None


def history_refusal(rel: str, mode: int | None = None) -> str | None:
    """Why gitspace will not write ``rel`` from a tree (history, a remote, a replay), or None."""
    why = git_refusal(rel, mode)
    if why is None and aliases(rel.split("/", 1)[0], ".gitspace"):
        why = "the .gitspace folder belongs to gitspace and is never written from history"
    return why


def check_tree_paths(states: Mapping[str, tuple[bytes, int] | None], doing: str) -> None:
    """Refuse (PathRefused, before anything is written) a move that would write or delete a path
    ``history_refusal`` rejects; ``states`` maps each path to its new (data, mode), or None."""
    for rel, state in states.items():
        why = history_refusal(rel, None if state is None else state[1])
        if why is None and state is not None:
            why = content_refusal(rel, state[0])
        if why is not None:
            raise PathRefused(f"{doing} would write {rel!r}, which gitspace never writes: {why}.",
                              hint="Leave that path alone; if a commit holds it, repair the "
                              "history with git.")


# -- agent paths -----------------------------------------------------------------------------


def normalize(path: object, *, allow_root: bool = False) -> str:
    """The canonical relative form of an agent-supplied path, or PathRefused."""
    if not isinstance(path, str):
        raise PathRefused(f"A path must be a string, not {type(path).__name__}.")
    text = path
    if text in ("", ".", "./") and allow_root:
        return ""
    if not text:
        raise _refuse(path, "it is empty")
    if "\0" in text or any(unicodedata.category(c) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")
                           for c in text):
        raise _refuse(path, "it contains control, format or unassigned characters")
    if unicodedata.normalize("NFC", text) != text:
        raise _refuse(path, "it is not in Unicode normal form C")
    if any(c in _LOOKALIKES for c in text):
        raise _refuse(path, "it contains a character that imitates a slash or a dot")
    if "\\" in text:
        raise _refuse(path, "it contains a backslash")
    if _PERCENT.search(text):
        raise _refuse(path, "it contains URL-encoded characters")
    if text.startswith("/") or text.startswith("~") or re.match(r"^[A-Za-z]:", text):
        raise _refuse(path, "it is absolute; paths are relative to the workspace root")
    if text.startswith("./"):
        text = text[2:]
    text = text.rstrip("/") if allow_root or text.endswith("/") else text
    if len(text.encode()) > MAX_PATH_BYTES:
        raise _refuse(path[:200] + "...", f"it is longer than {MAX_PATH_BYTES:,} bytes")
    parts = text.split("/")
    if len(parts) > MAX_DEPTH:
        raise _refuse(path[:200] + "...", f"it is more than {MAX_DEPTH} folders deep")
    for part in parts:
        if part in ("", ".", ".."):
            raise _refuse(path, "it has an empty, '.' or '..' part")
        if is_dotgit(part):
            raise _refuse(path, "it points into .git")
        if len(part.encode()) > MAX_PART_BYTES:
            raise _refuse(path, "one of its parts is longer than 255 bytes")
    why = git_refusal(text)
    if why is not None:
        raise _refuse(path, why)
    return text


def check_length(root: Path, rel: str, shown: object = None) -> None:
    """Refuse a path the system could not open under ``root`` (PATH_MAX counts the whole path)."""
    limit = _path_max(str(root))
    if len(os.fsencode(root)) + len(rel.encode()) + _PATH_SLACK > limit:
        text = str(shown if shown is not None else rel)
        raise _refuse(text[:200] + ("..." if len(text) > 200 else ""),
                      f"inside this workspace it would be longer than the system's limit of "
                      f"{limit:,} bytes")


@functools.lru_cache(maxsize=64)
def _path_max(root: str) -> int:
    try:
        return os.pathconf(root, "PC_PATH_MAX")
    except (OSError, ValueError, AttributeError):
        return MAX_PATH_BYTES


def check_writable(rel: str, shown: object = None) -> str:
    """Refuse a path an agent may not write (owner_refusal, git_refusal); return it."""
    owned = owner_refusal(rel)
    if owned is not None:
        raise _refuse(str(shown if shown is not None else rel), owned[0], owned[1])
    why = git_refusal(rel)
    if why is not None:
        raise _refuse(str(shown if shown is not None else rel), why)
    return rel


def resolve(root: Path, path: object, *, allow_root: bool = False,
            write: bool = False) -> tuple[str, Path]:
    """(canonical relative path, absolute path), refusing any symbolic link on the way; with
    ``write``, also any path an agent may not write."""
    rel = normalize(path, allow_root=allow_root)
    check_length(root, rel, path)
    if write:
        check_writable(rel, path)
    current = root
    for part in rel.split("/") if rel else []:
        current = current / part
        if os.path.islink(current):
            raise _refuse(str(path), f"{current.relative_to(root)} is a symbolic link")
    return rel, current
