"""One commit against its replay: how to replay it, does re-running it agree, and if not, why.

Invariant: nothing here decides the order of commits or touches the user's repository; each
function looks at one recorded commit and the scratch workspace it is replayed in (the rules are
listed in ``replay``'s docstring). A divergence always carries the paths that differ (at most
``PATHS_LISTED``, and how many more) and a diff bounded in lines, line length and bytes.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any

from ..core.identity import EXTERNAL_LISTED, Identity
from ..core.person import token
from ..core.workspace import Workspace
from ..errors import NotFound, PathRefused
from ..storage import ledger
from ..storage.gitrepo import GitRepo
from ..storage.objects import EMPTY_TREE, Commit, Signature
from ..tools.registry import tool_named
from ..tools.script_header import Script
from .scratch import Scratch

DIFF_LINES = 40
DIFF_LINE_CHARS = 300
DIFF_BYTES = 16_000
PATHS_LISTED = 100
TRANSCRIPT = re.compile(r"transcripts/[^/]+\.json")
_COMPARED = ("tool", "args", "source", "agent", "session", "tool_use_id", "undo_of", "redo_of",
             "script", "parent_session", "parent_tool_use_id")


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
    more_paths: int = 0  # paths that differ beyond those listed


@dataclass(frozen=True)
class Verdict:
    """How one commit is replayed: re-run with ``args``, applied as recorded ``because``, or
    already a divergence (``wrong``, shown as a diff against tree ``against`` when there is one)."""

    args: dict[str, Any] | None = None
    because: str | None = None
    wrong: str | None = None
    against: str | None = None


def judge(repo: GitRepo, commit: Commit, op: ledger.Op | None) -> Verdict:
    """Decide how ``commit`` (which has a parent) is replayed, from the commit alone."""
    if len(commit.parents) > 1:
        wrong, merged = merge_problem(repo, commit, op)
        return Verdict(wrong=wrong, against=merged) if wrong else Verdict(because="merge commit")
    if op is None:
        return Verdict(because="not an op")
    if op.source == "tool":
        args = expand_args(repo, op.args)
        return Verdict(wrong=args) if isinstance(args, str) else Verdict(args=args)
    wrong = source_problem(repo, commit, op) or author_problem(commit, op)
    return Verdict(wrong=wrong) if wrong else Verdict(because=f"{op.source} op")


def merge_problem(repo: GitRepo, commit: Commit,
                  op: ledger.Op | None) -> tuple[str | None, str | None]:
    """Why a merge commit is not git's own merge of its parents (and that merge's tree)."""
    if op is not None:
        return ("it is a merge commit carrying op trailers, but ops are never merges: an op "
                "always has exactly one parent."), None
    if len(commit.parents) != 2:
        return (f"it merges {len(commit.parents)} parents, and replay can check only a merge of "
                "two against git's own merge of them."), None
    merged, conflicts = repo.merge_tree(*commit.parents)
    if merged == commit.tree and not conflicts:
        return None, None
    how = f" (merging them conflicts in {_listing(conflicts)})" if conflicts else ""
    return f"an evil merge: its files differ from merging its parents{how}.", merged


def source_problem(repo: GitRepo, commit: Commit, op: ledger.Op) -> str | None:
    """Why an op that is not a tool call cannot be taken as recorded, or None."""
    if op.source == "init":
        return ("it claims to be the workspace's first commit (source init), but it has a "
                "parent; only a commit without parents can be that.")
    parent = repo.parent_tree(commit)
    changed = sorted(c.path for c in repo.diff_trees(parent, commit.tree))
    if op.source == "external":
        paths, count = op.args.get("paths"), op.args.get("count")
        if not isinstance(paths, list) or not isinstance(count, int):
            return ("its arguments do not record which paths the outside edit changed (count and "
                    "paths), so the op cannot be checked.")
        if count == len(changed) and paths == changed[:EXTERNAL_LISTED]:
            return None
        return (f"it records an outside edit of {count} path(s) ({_listing(paths)}), but the "
                f"commit changes {len(changed)} ({_listing(changed)}); an outside edit must "
                "change exactly the paths it records.")
    if op.source == "harness":
        listed, count = list(op.paths or ()), op.path_count
        if count == len(changed) and listed == changed[:ledger.PATHS_LISTED]:
            return None
        return (f"it records a {op.tool} call of {op.agent or 'a harness'} that changed {count} "
                f"path(s) ({_listing(listed)}), but the commit changes {len(changed)} "
                f"({_listing(changed)}); a harness op must change exactly the paths it records.")
    if op.source == "transcript":
        path = op.args.get("path")
        if not isinstance(path, str) or not TRANSCRIPT.fullmatch(path):
            return ("it says it commits a session transcript, but its path argument is not "
                    "transcripts/<session>.json.")
        if changed == [path]:
            return None
        return (f"it says it commits the transcript {path} only, but the commit changes "
                f"{len(changed)} path(s) ({_listing(changed)}).")
    return f"its source {op.source!r} is one this replay does not know how to check."


def author_problem(commit: Commit, op: ledger.Op) -> str | None:
    """Why the commit's author is not the one gitspace writes for the op's agent, or None. An
    op with no agent is a person's: authored as their name, whatever it is; an outside edit is
    by the person whose name its agent trailer holds as a token."""
    found = identity(commit.author)
    if op.agent is None:
        if person_of(commit) is not None or signature_of(commit) is not None:
            return None
        return (f"its author is {found!r}, but gitspace authors an op made with no agent as the "
                "person who made it, by their git identity 'Name <email>'.")
    expected = f"{op.agent} <{op.agent}@gitspace>"
    if found == expected or op.source == "external" and token(found.split(" <")[0]) == op.agent:
        return None  # (a person's own edit is by them as their git knows them: core/person.py)
    return (f"its author is {found!r}, but gitspace authors an op of agent {op.agent!r} as "
            f"{expected!r}.")


def person_of(commit: Commit) -> str | None:
    """The person an op made with no agent is authored as (``NAME <NAME@gitspace>``, NAME a
    ledger token), or None when the author is not of that shape."""
    found = re.fullmatch(r"(\S+) <(\S+)@gitspace>", identity(commit.author))
    if found is None or found.group(1) != found.group(2) or not ledger.TOKEN.fullmatch(
            found.group(1)):
        return None
    return found.group(1)


def signature_of(commit: Commit) -> Signature | None:
    """The person an op made with no agent is authored as, by their git identity (``Name
    <email>``, core/person.py), or None when the author line is not of that shape."""
    found = re.fullmatch(r"(.+?) <([^<>\s]+)>", identity(commit.author))
    return Signature(found.group(1), found.group(2)) if found else None


def identity(author: str) -> str:
    """``Name <email>`` of a commit's author line (its time and zone dropped)."""
    return author.rsplit(" ", 2)[0]


def expand_args(repo: GitRepo, args: dict[str, Any]) -> dict[str, Any] | str:
    """``args`` with every ``{"$blob": sha, "bytes": n}`` replaced by that blob's text, or why
    one cannot be recovered exactly."""
    out = {}
    for key, value in args.items():
        if isinstance(value, dict) and "$blob" in value:
            sha = value["$blob"]
            if set(value) != {"$blob", "bytes"} or not isinstance(sha, str) or not re.fullmatch(
                    r"[0-9a-f]{40}", sha):
                return (f"its argument {key!r} is elided in a form the ledger does not define, so "
                        "the op cannot be checked.")
            if not repo.has_object(sha):
                return (f"the elided argument's blob ({key}: {sha[:12]}) is not in the "
                        "repository, so the op cannot be checked.")
            try:
                data = repo.read_blob(sha)
                if value["bytes"] != len(data):
                    return (f"the elided argument {key!r} says {value['bytes']} bytes, but its "
                            f"blob {sha[:12]} has {len(data)}, so the op cannot be checked.")
                value = data.decode("utf-8")
            except (NotFound, UnicodeDecodeError):
                return (f"the elided argument {key!r} names {sha[:12]}, which is not a UTF-8 "
                        "text blob, so the op cannot be checked.")
        out[key] = value
    return out


def reexecute(sc: Scratch, commit: Commit, op: ledger.Op, args: dict[str, Any],
              compare: bool) -> Divergence | None:
    """Re-run ``op``; with ``compare``, its tree and full message must equal the recorded ones."""
    before = sc.tip()
    tool = tool_named(sc.ws, op.tool)
    if tool is not None and tool.moves_refs:
        return diverged(sc, commit, op, f"it records a {op.tool} call, but {op.tool} moves refs "
                        "and records no commit of its own, so no commit can be its op.")
    changed = script_change(sc.ws, op, tool.script if tool else None)
    if changed:
        return diverged(sc, commit, op, changed)
    # The call as it was recorded: its agent, session, tool-use id and op id (an op with no agent
    # is a person's: by them again); the moment a mutating script saw when it was recorded. A
    # replay writes the trailer as recorded; a rebase (onto, sync) names where the op came from,
    # the first commit it was recorded as when it has been rebased before.
    person, signature = (None, None) if op.agent else (person_of(commit), signature_of(commit))
    if signature is not None and person is None:
        person = token(signature.name)
    elif person is not None:
        signature = None  # (authored as the token: replayed as the token)
    who = Identity.of(op, clock=commit.time, person=person, signature=signature,
                      rebased_from=op.rebased_from if compare else op.rebased_from or commit.sha)
    result = sc.ws.call_as(who, args)
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
    return _recorded_as_written(sc, commit, op, new, compare)


def _recorded_as_written(sc: Scratch, commit: Commit, op: ledger.Op, new: Commit,
                         compare: bool) -> Divergence | None:
    """Does the commit say what the tool writes: trailers, author, and (``compare``) message?"""
    replayed = ledger.parse_message(new.message)
    assert replayed is not None
    differ = [f"{name} (recorded {getattr(op, name)!r}, replayed {getattr(replayed, name)!r})"
              for name in _COMPARED if getattr(op, name) != getattr(replayed, name)]
    if differ:
        return diverged(sc, commit, op, "the tool records different trailers than the commit "
                        "has: " + "; ".join(differ), new.tree)
    if identity(new.author) != identity(commit.author):
        return diverged(sc, commit, op, f"its author is {identity(commit.author)!r}, but the "
                        f"tool commits as {identity(new.author)!r}.", new.tree)
    # An op recorded by an older gitspace is compared with what the tool writes, in that format.
    written = new.message if op.format in (None, replayed.format) else ledger.in_format(
        new.message, replayed, op.format)
    if compare and written != commit.message:
        lines = difflib.unified_diff(_text(commit.message).splitlines(),
                                     _text(written).splitlines(), "recorded message",
                                     "replayed message", lineterm="")
        return diverged(sc, commit, op, "its message differs from the one the tool writes: a "
                        "subject or body line the tool did not write.", diff=list(lines))
    return None


def script_for(ws: Workspace, tool: str) -> Script | None:
    """The constraint script calling ``tool`` would run now (None for a built-in tool or none)."""
    found = tool_named(ws, tool)
    return found.script if found else None


def workspace_script(script: Script | None) -> bool:
    """Is ``script`` one of the workspace's own (code from the history being replayed)?"""
    return script is not None and script.origin == "workspace"


def unrun_script_problem(sc: Scratch, commit: Commit, op: ledger.Op,
                         script: Script | None) -> str | None:
    """What can be checked of a workspace-script op without running it."""
    if op.script is None:
        return (f"{op.tool} is a workspace script, but the op records no Gitspace-Script; a "
                "script op always does.")
    return script_change(sc.ws, op, script) or author_problem(commit, op)


def script_change(ws: Workspace, op: ledger.Op, script: Script | None) -> str | None:
    """Why the op's recorded ``Gitspace-Script`` is not ``script``, the one that would run now."""
    if op.script is None:
        return None  # a script that would run now is caught by the trailer comparison
    tool = tool_named(ws, op.tool)
    if tool is not None and tool.script is None:
        return f"the op ran script {op.script[:12]}, but {op.tool} is now a built-in tool."
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
             replayed_tree: str | None = None, diff: list[str] | None = None) -> Divergence:
    """A divergence with the paths and a short diff: ``diff`` when given (no paths), else
    replayed against recorded when there is a replayed tree, else the change the commit records."""
    paths: list[str] = []
    if diff is None:
        if replayed_tree is not None:
            old, new, labels = commit.tree, replayed_tree, ("recorded/", "replayed/")
        else:
            parent = sc.repo.parent_tree(commit) or EMPTY_TREE
            old, new, labels = parent, commit.tree, ("before/", "recorded/")
        try:
            paths = [c.path for c in sc.repo.diff_trees(old, new)]
        except (PathRefused, NotFound):  # a tree gitspace cannot read: the reason says why
            paths = []
        diff = short_diff(sc.repo, old, new, labels, paths)
    return Divergence(commit.sha, op.op_id if op else None, op.tool if op else None,
                      op.args if op else {}, reason, paths[:PATHS_LISTED], cap_diff(diff),
                      max(0, len(paths) - PATHS_LISTED))


def short_diff(repo: GitRepo, old: str, new: str, labels: tuple[str, str],
               paths: list[str]) -> list[str]:
    if not paths:
        return []
    out = repo.git("diff", "--no-color", "--no-ext-diff", "--no-textconv",
                   f"--src-prefix={labels[0]}", f"--dst-prefix={labels[1]}", old, new, "--",
                   *(f":(literal){p}" for p in paths[:20]), check=False)
    return out.decode("utf-8", "replace").splitlines()


def cap_diff(lines: list[str]) -> list[str]:
    """At most ``DIFF_LINES`` lines of at most ``DIFF_LINE_CHARS`` characters, ``DIFF_BYTES``
    bytes in all; what was cut is counted in a last line."""
    out: list[str] = []
    used = 0
    for i, line in enumerate(lines):
        if len(line) > DIFF_LINE_CHARS:
            line = f"{line[:DIFF_LINE_CHARS]} ... ({len(line) - DIFF_LINE_CHARS:,} more characters)"
        size = len(line.encode("utf-8", "replace")) + 1
        if len(out) == DIFF_LINES or used + size > DIFF_BYTES:
            out.append(f"... {len(lines) - i} more diff lines")
            break
        out.append(line)
        used += size
    return out


def _text(message: str) -> str:
    """A commit message as printable text (bytes that are not UTF-8 shown as U+FFFD)."""
    return message.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _listing(paths: list[Any], shown: int = 5) -> str:
    more = f" and {len(paths) - shown} more" if len(paths) > shown else ""
    return (", ".join(str(p) for p in paths[:shown]) or "none") + more
