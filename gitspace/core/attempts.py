"""The history as a tree of attempts: where each op sits in a commit graph, and how ops relate.

A restore does not move history back; it is a new op whose tree is a checkpoint's. Read as a
tree, though, it starts a new attempt from that checkpoint, and the attempt it leaves is a dead
end. ``layout`` places commits (newest first, one row each) in lanes so that each attempt and each
branch has a lane of its own, and lists the links a reader needs: first parents, merge parents,
each restore back to the checkpoint it restored, each undo to the ops it reverts, each redo to
the undo it reverts. "The way out" is every commit on the logical path from a branch tip back to
the root, following restores to their checkpoints instead of to the dead end they left.

Invariant: pure computation over ``timeline.Brief`` rows (no git here); a link whose far end is
outside the rows given is kept with ``target=None``, so a window of a long history draws honestly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..storage import ledger
from .timeline import Brief

MAX_LANES = 24  # past this, lanes are reused (the longest-finished first)


@dataclass
class Node:
    brief: Brief
    row: int
    lane: int = 0
    checkpoints: list[str] = field(default_factory=list)
    branches: list[str] = field(default_factory=list)
    dead_end: bool = False  # the last commit of an attempt a restore abandoned
    way_out: bool = False  # on the logical path from a branch tip to the root


@dataclass(frozen=True)
class Link:
    kind: str  # "parent", "merge", "restore", "undo", "redo"
    source: int  # row of the newer commit
    target: int | None  # row of the older one; None when it lies outside the rows given
    label: str = ""


@dataclass
class Layout:
    nodes: list[Node]
    links: list[Link]
    lanes: int


def layout(rows: list[Brief], checkpoints: dict[str, str], tips: dict[str, list[str]],
           restores: Mapping[str, str]) -> Layout:
    """``rows`` newest first (git log order); ``checkpoints`` name -> commit; ``tips`` commit ->
    the branch names pointing at it; ``restores`` tool -> the argument naming the checkpoint its
    op brings back (``tools.builtins.restoring()``)."""
    nodes = [Node(b, i) for i, b in enumerate(rows)]
    at = {n.brief.commit: n for n in nodes}
    by_op = {}
    for n in nodes:
        op = n.brief.op
        if op is not None:
            by_op[op.op_id] = n
        n.branches = tips.get(n.brief.commit, [])
    for name, commit in checkpoints.items():
        if commit in at:
            at[commit].checkpoints.append(name)
    known = Restores(checkpoints, restores)
    links = _links(nodes, at, by_op, known)
    lanes = _place(nodes, at, known)
    _mark_dead_ends_and_way_out(nodes, at, known)
    return Layout(nodes, links, lanes)


@dataclass(frozen=True)
class Restores:
    """Which ops are restores and where each went back to. ``args``: tool -> the argument naming
    the checkpoint its op brings back (``tools.builtins.restoring()``, read from the tools)."""

    checkpoints: dict[str, str]  # name -> commit
    args: Mapping[str, str]

    def name(self, op: ledger.Op | None) -> str | None:
        """The checkpoint ``op`` brought back, if it is a restore."""
        arg = self.args.get(op.tool) if op is not None else None
        name = op.args.get(arg) if op is not None and arg is not None else None
        return name if isinstance(name, str) else None

    def back(self, brief: Brief) -> str | None:
        """The commit a restore op went back to (None if it is no restore, or the tag is gone)."""
        name = self.name(brief.op)
        return self.checkpoints.get(name) if name is not None else None


def _links(nodes: list[Node], at: dict[str, Node], by_op: dict[str, Node],
           restores: Restores) -> list[Link]:
    links = []

    def row(node: Node | None) -> int | None:
        return None if node is None else node.row

    for n in nodes:
        b = n.brief
        for i, parent in enumerate(b.parents):
            links.append(Link("parent" if i == 0 else "merge", n.row, row(at.get(parent))))
        op = b.op
        if op is None:
            continue
        back = restores.back(b)
        restore = restores.name(op)
        if restore is not None:
            links.append(Link("restore", n.row, row(at.get(back or "")), restore))
        for undone in op.undo_of:
            links.append(Link("undo", n.row, row(by_op.get(undone)), undone))
        if op.redo_of:
            links.append(Link("redo", n.row, row(by_op.get(op.redo_of)), op.redo_of))
    return links


def _place(nodes: list[Node], at: dict[str, Node], restores: Restores) -> int:
    """Lanes, oldest first: a commit continues its first parent's lane when it is that lane's
    newest commit so far; a restore, a fork or a root opens a lane."""
    ends: dict[int, int] = {}  # lane -> row of its newest commit so far
    head_of: dict[int, str] = {}  # lane -> commit at its end
    for n in reversed(nodes):
        parent = at.get(n.brief.parents[0]) if n.brief.parents else None
        starts_attempt = restores.back(n.brief) is not None
        if parent is not None and not starts_attempt and head_of.get(parent.lane) == parent.brief.commit:
            lane = parent.lane
        else:
            back = at.get(restores.back(n.brief) or "")
            near = back if back is not None else parent
            lane = _free_lane(ends, -1 if near is None else near.lane)
        n.lane = lane
        ends[lane] = n.row
        head_of[lane] = n.brief.commit
    return max(ends, default=0) + 1


def _free_lane(ends: dict[int, int], near: int) -> int:
    """A lane nothing occupies yet, to the right of ``near`` when possible (-1: anywhere)."""
    for lane in range(near + 1, MAX_LANES):
        if lane not in ends:
            return lane
    for lane in range(0, MAX_LANES):
        if lane not in ends:
            return lane
    return max(ends, key=lambda lane: ends[lane])  # the lane that finished longest ago


def _mark_dead_ends_and_way_out(nodes: list[Node], at: dict[str, Node],
                                restores: Restores) -> None:
    children: dict[str, int] = {}
    for n in nodes:
        for parent in n.brief.parents:
            children[parent] = children.get(parent, 0) + 1
    for n in nodes:
        if restores.back(n.brief) is not None and n.brief.parents:
            left = at.get(n.brief.parents[0])
            if left is not None and children.get(left.brief.commit, 0) == 1 and not left.branches:
                left.dead_end = True
    # The way out starts at each branch tip, and at each commit whose children lie above the
    # rows given (an older window of a long history has no tips in it).
    tips = [n for n in nodes if n.branches]
    if not tips:
        tips = [n for n in nodes if not children.get(n.brief.commit) and not n.dead_end]
    for n in tips:
        _walk_way_out(n, at, restores)


def _walk_way_out(node: Node | None, at: dict[str, Node], restores: Restores) -> None:
    while node is not None and not node.way_out:
        node.way_out = True
        back = restores.back(node.brief)
        if back is not None:
            node = at.get(back)
        else:
            node = at.get(node.brief.parents[0]) if node.brief.parents else None
