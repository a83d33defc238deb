"""Names for the refs gitspace creates or takes from a remote: branches and checkpoints.

Invariant: a branch or checkpoint gitspace makes, or takes from a remote (``pull``, ``sync``),
has a name ``git check-ref-format`` accepts (``gitnames.ref_refusal``), that no ref gitspace or
git already means something by can be confused with, and that cannot collide with an existing
ref on a case-insensitive file system. One rule, ``refusal``, answers for all of them; a local
checkpoint or branch is refused with it (``check_new``), a remote's is left on the remote with
it as the reason. Refused:
- git's own names: ``HEAD`` and the pseudo-refs (``FETCH_HEAD``, ``ORIG_HEAD``, ``MERGE_HEAD``...),
  in any case, as the whole name or as any component of it;
- a name that reads as a full ref or a namespace: a first component ``refs``, and for branches
  ``gitspace`` (the checkpoints' tag folder) or any existing tag's or checkpoint's name;
- a name that reads as an object id (40 or 64 hex digits) or an op id: one of an op id's form (26
  characters of Crockford base32, in any case), or the start or end of an op recorded here or in
  the history being pulled (``opnames.named_by``): ``gitspace restore`` of what ``log`` shows must
  never find a name someone else chose;
- for a checkpoint, an existing branch's name; for either, a name equal to an existing one but for
  case, or a folder of an existing one, or inside one (git cannot store both).
Every name starts with a letter or digit, so none can be read as a command-line option.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..errors import BadArguments, GitspaceError
from ..storage import gitnames
from ..storage.gitrepo import GitRepo
from . import opnames

TYPE_CHECKING = False  # (the workspace is only named here: a read imports refnames without it)
if TYPE_CHECKING:
    from .workspace import Workspace

_PSEUDO = re.compile(r"(?:[a-z_]*_)?head", re.I)  # HEAD, FETCH_HEAD, ORIG_HEAD, MERGE_HEAD...
PREFIXES = {"branch": "refs/heads/", "checkpoint": "refs/tags/gitspace/"}  # where each kind goes
BRANCH = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,99}")
CHECKPOINT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
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
    why = _shape_refusal(kind, name)
    if why is not None:
        raise _bad(kind, str(name), why)
    assert isinstance(name, str)
    return name


def _shape_refusal(kind: str, name: object) -> str | None:
    """Why ``name`` is no ``kind`` name whatever refs exist (a clause, "" when it has not even
    the shape of one), or None."""
    pattern = BRANCH if kind == "branch" else CHECKPOINT
    if not isinstance(name, str) or not pattern.fullmatch(name):
        return ""
    parts = name.split("/")
    refused = gitnames.ref_refusal(PREFIXES[kind] + name)
    if refused is not None:
        return f"git refuses it: {refused}"
    if any(_PSEUDO.fullmatch(p) for p in parts):
        return "it would read as HEAD or one of git's own refs like FETCH_HEAD"
    if parts[0].casefold() == "refs" or kind == "branch" and parts[0].casefold() == "gitspace":
        return (f"it would read as a full ref name or as {parts[0]}/, a namespace git or "
                "gitspace uses")
    if gitnames.reads_as_id(name):
        return "it would read as a commit or op id"
    return None


def check_new(ws: Workspace, kind: str, name: object, prefix: str) -> str:
    """``check``, and no clash with the refs that exist nor with an op recorded here: ``prefix``
    is where the new ref goes ('refs/heads/' or 'refs/tags/gitspace/')."""
    check(kind, name)
    assert isinstance(name, str) and prefix == PREFIXES[kind]
    existing = [r for r, _, _ in ws.repo.refs("refs/heads")] + [
        r for r, _, _ in ws.repo.refs("refs/tags")]
    why = clash(ws.repo, kind, name, existing)
    if why is not None:
        raise _clash(kind, name, why)
    return name


def refusal(repo: GitRepo, kind: str, name: str, existing: Iterable[str],
            incoming: Iterable[str] = ()) -> str | None:
    """Why a ``kind`` named ``name`` may not be made here beside the refs ``existing`` (every
    branch and tag), in a clause; None when it may. ``incoming``: op ids a pull brings with it
    (``opnames.incoming``), which it must not read as either."""
    why = _shape_refusal(kind, name)
    if why is not None:
        return why or f"it is not a valid {kind} name ({HINTS[kind]})"
    return clash(repo, kind, name, list(existing), incoming)


def clash(repo: GitRepo, kind: str, name: str, existing: list[str],
          incoming: Iterable[str] = ()) -> str | None:
    """Why ``name`` (of the shape ``check`` accepts) cannot stand beside ``existing``, or reads
    as an op recorded here or one of ``incoming``; None when nothing stands against it."""
    ref = PREFIXES[kind] + name
    for other in existing:
        if other == ref:
            continue  # the caller says "already exists" in its own words
        if other.casefold() == ref.casefold():
            return (f"{other} differs from it only in case, and some file systems cannot tell "
                    "them apart")
        if other.startswith(ref + "/") or ref.startswith(other + "/"):
            return f"git cannot store it next to {other}"
    folded = {r.casefold() for r in existing}
    if kind == "checkpoint" and f"refs/heads/{name}".casefold() in folded:
        return "a branch has that name"
    if kind == "branch" and (f"refs/tags/{name}".casefold() in folded
                             or f"{PREFIXES['checkpoint']}{name}".casefold() in folded):
        return "a tag or a checkpoint has that name, so no one could tell which one is meant"
    ops = opnames.named_by(repo, name, incoming)
    if ops:
        more = f" (and {len(ops) - 1} more)" if len(ops) > 1 else ""
        how = "is" if len(ops[0]) == len(name) else "starts or ends with"
        return f"it reads as op {ops[0]}{more}, whose id {how} it, so naming it names that op too"
    return None


def _clash(kind: str, name: str, why: str) -> GitspaceError:
    return GitspaceError(f"A {kind} cannot be named {name!r}: {why}.",
                         hint=f"Pick another name; 'gitspace {kind}es' lists them."
                         if kind == "branch" else "Pick another name; 'gitspace checkpoints' "
                         "lists them.")
