"""One commit against its replay: can it be re-run, does re-running it agree, and if not, why.

Invariant: nothing here decides the order of commits or touches the user's repository; each
function looks at one recorded commit and the scratch workspace it is replayed in (the rules are
listed in ``replay``'s docstring). A divergence always carries the paths that differ and a diff
bounded to ``DIFF_LINES`` lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from . import ledger
from .errors import NotFound
from .gitrepo import EMPTY_TREE, Commit, GitRepo
from .scratch import Scratch
from .workspace import Workspace

DIFF_LINES = 40
_COMPARED = ("tool", "args", "source", "agent", "session", "tool_use_id", "undo_of", "redo_of",
             "script")


@dataclass
class Divergence:
    """The first op whose outcome differs from its commit (or that no longer applies)."""

    commit: str
    op_id: str | None
    tool: str | None
    args: dict[str, Any]
    reason: str
    paths: list[str] = field(default_factory=list)
    diff: list[str] = field(default_factory=list)


def as_recorded_because(repo: GitRepo, commit: Commit,
                        op: ledger.Op | None) -> tuple[str | None, dict[str, Any]]:
    """(why the commit is applied as recorded, None) or (None, the args to re-run it with)."""
    if op is None:
        return "not an op", {}
    if len(commit.parents) > 1:
        return "merge commit", {}
    if op.source != "tool":
        return f"{op.source} op", {}
    args = expand_args(repo, op.args)
    return ("elided argument missing", {}) if args is None else (None, args)


def expand_args(repo: GitRepo, args: dict[str, Any]) -> dict[str, Any] | None:
    """``args`` with every ``{"$blob": sha, "bytes": n}`` replaced by that blob's text, or None
    when one cannot be recovered exactly."""
    out = {}
    for key, value in args.items():
        if isinstance(value, dict) and "$blob" in value:
            sha = value["$blob"]
            if set(value) != {"$blob", "bytes"} or not isinstance(sha, str) or not re.fullmatch(
                    r"[0-9a-f]{40}", sha) or not repo.has_object(sha):
                return None
            try:
                data = repo.read_blob(sha)
                if value["bytes"] != len(data):
                    return None
                value = data.decode("utf-8")
            except (NotFound, UnicodeDecodeError):
                return None
        out[key] = value
    return out


def reexecute(sc: Scratch, commit: Commit, op: ledger.Op, args: dict[str, Any],
               compare: bool) -> Divergence | None:
    before = sc.tip()
    changed = script_change(sc.ws, op)
    if changed:
        return diverged(sc, commit, op, changed)
    sc.ws.agent, sc.ws.session = op.agent, op.session
    sc.ws.clock = commit.time  # a mutating script sees the moment it saw when it was recorded
    try:
        result = sc.ws.call(op.tool, args, tool_use_id=op.tool_use_id, op_id=op.op_id)
    finally:
        sc.ws.clock = None
    if not sc.on_branch():
        return diverged(sc, commit, op, "re-running it switched branches; an op never does.")
    if not result.ok:
        return diverged(sc, commit, op, f"re-running it failed: {result.text}")
    if result.commit is None or result.op is None:
        return diverged(sc, commit, op, "re-running it changed nothing, but the recorded commit "
                        "is an op, and an op always changes files.")
    new = sc.repo.commit(result.commit)
    if new.parents != (before,):
        return diverged(sc, commit, op, "re-running it found outside changes first.")
    if compare and new.tree != commit.tree:
        return diverged(sc, commit, op, "re-running it produced different files.", new.tree)
    replayed = ledger.parse_message(new.message)
    assert replayed is not None
    differ = [f"{name} (recorded {getattr(op, name)!r}, replayed {getattr(replayed, name)!r})"
              for name in _COMPARED if getattr(op, name) != getattr(replayed, name)]
    if differ:
        return diverged(sc, commit, op, "the tool records different trailers than the commit "
                        "has: " + "; ".join(differ), new.tree)
    return None


def script_change(ws: Workspace, op: ledger.Op) -> str | None:
    """Why the op's recorded ``Gitspace-Script`` is not the script that would run now, or None."""
    from .constraint_tools import catalog
    from .tools import builtin_tools

    if op.script is None:
        return None  # a script that would run now is caught by the trailer comparison
    if op.tool in builtin_tools():
        return f"the op ran script {op.script[:12]}, but {op.tool} is now a built-in tool."
    script = catalog(ws).scripts.get(op.tool)
    if script is None:
        return None  # re-running it fails with "no tool named ..."
    now = ws.repo.hash_object("blob", script.path.read_bytes())
    if now == op.script:
        return None
    if script.origin == "workspace":
        where = f"{script.path.relative_to(ws.root).as_posix()} in the tree at this op"
    else:
        where = f"the built-in script {script.path.name} of this gitspace"
    return (f"the script changed since the op: it ran blob {op.script[:12]}, but {where} is "
            f"blob {now[:12]}.")


def diverged(sc: Scratch, commit: Commit, op: ledger.Op | None, reason: str,
             replayed_tree: str | None = None) -> Divergence:
    """A divergence with the paths and a short diff: replayed against recorded when the op ran,
    otherwise the change the commit records."""
    if replayed_tree is not None:
        old, new, labels = commit.tree, replayed_tree, ("recorded/", "replayed/")
    else:
        parent = sc.repo.commit(commit.parents[0]).tree if commit.parents else EMPTY_TREE
        old, new, labels = parent, commit.tree, ("before/", "recorded/")
    paths = [c.path for c in sc.repo.diff_trees(old, new)]
    return Divergence(commit.sha, op.op_id if op else None, op.tool if op else None,
                      op.args if op else {}, reason, paths, short_diff(sc.repo, old, new, labels,
                                                                       paths))


def short_diff(repo: GitRepo, old: str, new: str, labels: tuple[str, str], paths: list[str],
               limit: int = DIFF_LINES) -> list[str]:
    if not paths:
        return []
    out = repo.git("diff", "--no-color", "--no-ext-diff", "--no-textconv",
                   f"--src-prefix={labels[0]}", f"--dst-prefix={labels[1]}", old, new, "--",
                   *(f":(literal){p}" for p in paths[:20]), check=False)
    lines = out.decode("utf-8", "replace").splitlines()
    if len(lines) > limit:
        lines = lines[:limit] + [f"... {len(lines) - limit} more diff lines"]
    return lines
