"""Completions for prompt arguments and resource-template variables.

Invariant: a completion only reads and is bounded: at most MAX_VALUES values (the protocol's
cap), found by a prefix of what the client typed. It never fails for a prompt, template or
argument it does not know: it suggests nothing (the user is typing; an error would only
interrupt), exactly as the suite's own minimal servers do.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from urllib.parse import unquote

from ..core import branches, checkpoints, lookup, paths, timeline
from ..core.workspace import Workspace
from ..errors import GitspaceError
from . import texts

MAX_VALUES = 100
OP_LOOKBACK = 1000  # recent ops of the current branch offered as op ids
PATH_SCAN = 20_000  # tree entries looked at for path completions


def values(ws: Workspace, ref_type: str, ref: str, argument: str, typed: str,
           context: dict[str, str]) -> tuple[list[str], int]:
    """(the first MAX_VALUES matches, how many there are) for ``argument`` of ``ref``."""
    found = list(_candidates(ws, ref_type, ref, argument, typed, context))
    return found[:MAX_VALUES], len(found)


def _candidates(ws: Workspace, ref_type: str, ref: str, argument: str, typed: str,
                context: dict[str, str]) -> Iterable[str]:
    kind = _kind(ref_type, ref, argument)
    if kind == "checkpoint":
        return _prefixed((c.name for c in reversed(checkpoints.listing(ws))), typed)
    if kind == "branch":
        return _prefixed((b.name for b in branches.listing(ws)), typed)
    if kind == "op":
        return _op_ids(ws, typed)
    if kind == "path":
        return _paths(ws, typed, ws.tip())
    if kind == "path at op":
        op = context.get("op", "")
        try:
            commit = lookup.resolve(ws.repo, lookup.op_id(ws.repo, op)).commit if op else ws.tip()
        except GitspaceError:
            return []
        return _paths(ws, typed, commit)
    return []


def _kind(ref_type: str, ref: str, argument: str) -> str | None:
    if ref_type == "ref/prompt":
        return {("review_since_checkpoint", "checkpoint"): "checkpoint",
                ("read_big_log", "path"): "path"}.get((ref, argument))
    if ref_type != "ref/resource":
        return None
    return {(texts.FILE_PREFIX + "{path}", "path"): "path",
            (texts.OP_PREFIX + "{op}", "op"): "op",
            (texts.OP_PREFIX + "{op}/file/{path}", "op"): "op",
            (texts.OP_PREFIX + "{op}/file/{path}", "path"): "path at op",
            (texts.CHECKPOINT_PREFIX + "{name}", "name"): "checkpoint",
            (texts.BRANCH_PREFIX + "{name}", "name"): "branch"}.get((ref, argument))


def _prefixed(names: Iterable[str], typed: str) -> Iterator[str]:
    return (n for n in names if n.startswith(typed))


def _op_ids(ws: Workspace, typed: str) -> Iterator[str]:
    """Op ids of the current branch, newest first, that start with what was typed."""
    for e in timeline.timeline(ws, OP_LOOKBACK):
        if e.op and e.op.op_id.startswith(typed.upper()):
            yield e.op.op_id


def _paths(ws: Workspace, typed: str, commit: str | None) -> Iterator[str]:
    """Files and folders of ``commit``'s tree under what was typed: the next level only, so a
    huge tree is never listed whole (folders end in '/')."""
    text = unquote(typed)
    folder, _, start = text.rpartition("/")
    try:
        rel = paths.normalize(folder, allow_root=True) if folder else ""
    except GitspaceError:
        return
    if commit is None:
        return
    tree = ws.repo.commit(commit).tree
    if rel:
        entry = ws.repo.entry_at(tree, rel)
        if entry is None or not entry.is_tree:
            return
        tree = entry.sha
    for count, (name, entry) in enumerate(sorted(ws.repo.tree(tree).items())):
        if count >= PATH_SCAN:
            return
        shown = name.decode("utf-8", "replace")
        if shown.startswith(start) and (start.startswith(".") or not shown.startswith(".")):
            yield (f"{rel}/" if rel else "") + shown + ("/" if entry.is_tree else "")

