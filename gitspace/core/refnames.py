"""Names for the refs gitspace creates: branches and checkpoints.

Invariant: a new branch or checkpoint name is one ``git check-ref-format`` accepts, that no ref
gitspace or git already means something by can be confused with, and that cannot collide with an
existing ref on a case-insensitive file system. Refused:
- git's own names: ``HEAD`` and the pseudo-refs (``FETCH_HEAD``, ``ORIG_HEAD``, ``MERGE_HEAD``...),
  in any case, as the whole name or as any component of it;
- a name that reads as a full ref or a namespace: a first component ``refs``, and for branches
  ``gitspace`` (the checkpoints' tag folder) or any existing tag's name;
- a name that reads as an object id (40 or 64 hex digits) or an op id (a 26-character ULID);
- for a checkpoint, an existing branch's name; for either, a name equal to an existing one but for
  case, or a folder of an existing one, or inside one (git cannot store both).
Every name starts with a letter or digit, so none can be read as a command-line option.
"""

from __future__ import annotations

import re

from ..errors import BadArguments, GitspaceError
from ..storage import gitnames, ledger

TYPE_CHECKING = False  # (the workspace is only named here: a read imports refnames without it)
if TYPE_CHECKING:
    from .workspace import Workspace

_PSEUDO = re.compile(r"(?:[a-z_]*_)?head", re.I)  # HEAD, FETCH_HEAD, ORIG_HEAD, MERGE_HEAD...
_OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}", re.I)
BRANCH = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,99}")
CHECKPOINT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
CHECKPOINTS = "refs/tags/gitspace/"  # where checkpoint NAME's tag is: CHECKPOINTS + NAME
HINTS = {
    "branch": "Use letters, digits, '.', '_', '-' and '/', like 'explore/east'.",
    "checkpoint": "Use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit, "
                  "like 'junction-1'.",
}


def _bad(kind: str, name: str, why: str = "") -> BadArguments:
    return BadArguments(f"{name!r} is not a valid {kind} name{': ' + why if why else ''}.",
                        hint=HINTS[kind])


def check(kind: str, name: object) -> str:
    """A well-formed ``kind`` ('branch' or 'checkpoint') name that shadows none of git's."""
    pattern = BRANCH if kind == "branch" else CHECKPOINT
    if not isinstance(name, str) or not pattern.fullmatch(name):
        raise _bad(kind, str(name))
    parts = name.split("/")
    if gitnames.ref_parts_refused(name):
        raise _bad(kind, name, "git refuses empty parts, parts starting with '.' and parts "
                   "ending in '.' or '.lock'")
    if any(_PSEUDO.fullmatch(p) for p in parts):
        raise _bad(kind, name, "it would read as HEAD or one of git's own refs like FETCH_HEAD")
    if parts[0].casefold() == "refs" or kind == "branch" and parts[0].casefold() == "gitspace":
        raise _bad(kind, name, f"it would read as a full ref name or as {parts[0]}/, a namespace "
                   "git or gitspace uses")
    if _OBJECT_ID.fullmatch(name) or ledger.OP_ID.fullmatch(name.upper()) and len(name) == 26:
        raise _bad(kind, name, "it would read as a commit or op id")
    return name


def check_new(ws: Workspace, kind: str, name: object, prefix: str) -> str:
    """``check``, and no clash with the refs that exist: ``prefix`` is where the new ref goes
    ('refs/heads/' or 'refs/tags/gitspace/')."""
    check(kind, name)
    assert isinstance(name, str)
    ref = prefix + name
    existing = [r for r, _, _ in ws.repo.refs("refs/heads")] + [
        r for r, _, _ in ws.repo.refs("refs/tags")]
    for other in existing:
        if other == ref:
            continue  # the caller says "already exists" in its own words
        if other.casefold() == ref.casefold():
            raise _clash(kind, name, f"{other} differs from it only in case, and some file "
                         "systems cannot tell them apart")
        if other.startswith(ref + "/") or ref.startswith(other + "/"):
            raise _clash(kind, name, f"git cannot store it next to {other}")
    if kind == "checkpoint" and any(r.casefold() == f"refs/heads/{name}".casefold()
                                    for r in existing):
        raise _clash(kind, name, "a branch has that name")
    if kind == "branch" and any(r.casefold() == f"refs/tags/{name}".casefold() for r in existing):
        raise _clash(kind, name, "a tag has that name, so git could not tell which one is meant")
    return name


def _clash(kind: str, name: str, why: str) -> GitspaceError:
    return GitspaceError(f"A {kind} cannot be named {name!r}: {why}.",
                         hint=f"Pick another name; 'gitspace {kind}es' lists them."
                         if kind == "branch" else "Pick another name; 'gitspace checkpoints' "
                         "lists them.")
