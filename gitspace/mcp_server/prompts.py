"""The prompts a client's model can start from: how to use a gitspace workspace well.

Invariant: a prompt is filled in from the workspace as it is now, bounded (at most REVIEW_LIMIT
ops, a top-level listing as ``view`` shows it), and only ever reads: getting a prompt never
runs a script, locks or commits. A missing or bad argument is a ``BadArguments`` naming it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core import checkpoints, paths, timeline
from ..core.workspace import Workspace
from ..errors import BadArguments, NotFound
from . import texts

REVIEW_LIMIT = 100


@dataclass(frozen=True)
class Argument:
    name: str
    description: str
    required: bool = True


@dataclass(frozen=True)
class Prompt:
    name: str
    title: str
    description: str
    arguments: tuple[Argument, ...] = ()


INSPECT = Prompt(
    "inspect_workspace", "Inspect this workspace",
    "Get to know the workspace before changing it: its files, its recent ops and checkpoints, "
    "and how its tools keep every change undoable.",
    (Argument("goal", "What you are about to do here (optional): the prompt points at what "
              "matters for it.", required=False),))
BIG_LOG = Prompt(
    "read_big_log", "Read a big log with peek, then range",
    "Read a large JSON Lines worklog (a .jsonl file or a segmented log folder) without pulling "
    "it into the context: peek first for its size, time span and tags, then range over a window.",
    (Argument("path", "The worklog, relative to the workspace root (e.g. journal/worklog.jsonl)."),))
REVIEW = Prompt(
    "review_since_checkpoint", "Review the ops since a checkpoint",
    "Review every op made on the current branch since a checkpoint: what changed, whether it "
    "should stay, and how to undo what should not.",
    (Argument("checkpoint", "The checkpoint's name (completion lists them)."),))
PROMPTS = (INSPECT, BIG_LOG, REVIEW)
BY_NAME = {p.name: p for p in PROMPTS}


def unknown(name: str) -> NotFound:
    return NotFound(f"There is no prompt named {texts.short(name, 100)!r}.",
                    hint="The prompts are " + ", ".join(BY_NAME) + ".")


def render(ws: Workspace, name: str, args: dict[str, str]) -> str:
    """The text of prompt ``name`` filled in with ``args`` (checked first)."""
    prompt = BY_NAME.get(name)
    if prompt is None:
        raise unknown(name)
    known = {a.name for a in prompt.arguments}
    extra = sorted(set(args) - known)
    if extra:
        raise BadArguments(f"The {name} prompt takes no argument {extra[0]!r}.",
                           hint="Its arguments: " + (", ".join(known) or "none") + ".")
    for a in prompt.arguments:
        if a.required and not args.get(a.name):
            raise BadArguments(f"The {name} prompt needs the argument {a.name!r}: {a.description}")
    if prompt is INSPECT:
        return _inspect(ws, args.get("goal", ""))
    if prompt is BIG_LOG:
        return _big_log(ws, args["path"])
    return _review(ws, args["checkpoint"])


def _inspect(ws: Workspace, goal: str) -> str:
    listing = ws.call("view", {"path": "."})
    recent = timeline.timeline(ws, 10)
    names = [c.name for c in checkpoints.listing(ws)]
    lines = [
        f"You are working in a gitspace workspace (branch {ws.branch()}). It is a git "
        "repository: every tool call that changes files is exactly one commit, so nothing you "
        "do is lost and anything can be undone.",
        "",
        (f"Your goal: {goal.strip()[:500]}" if goal.strip() else
         "Before you change anything, find out what is here."),
        "",
        "The top of the workspace:",
        listing.text if listing.ok else f"(view . failed: {listing.text})",
        "",
        f"The last {len(recent)} ops, newest first:" if recent else "No ops yet.",
        *(texts.log_line(e) for e in recent),
        "",
        ("Checkpoints: " + ", ".join(names[-20:])) if names else "No checkpoints yet.",
        "",
        "How to work here:",
        "- view reads a file or a folder (16,000 characters at most); for anything larger, use "
        "the constraint tools (peek, grep, range, stat): they answer in bounded pieces.",
        "- checkpoint before a risky step; undo reverts your last op (again: the one before); "
        "restore goes back to a checkpoint without losing anything.",
        f"- {texts.LOG_URI} is the op log and {texts.CHECKPOINTS_URI} the checkpoints; "
        f"{texts.OP_PREFIX}{{op}} shows one op.",
    ]
    return "\n".join(lines)


def _big_log(ws: Workspace, path: str) -> str:
    rel, absolute = paths.resolve(ws.root, path)
    if not absolute.exists():
        raise NotFound(f"{rel} does not exist.", hint="View the folder to see what is there.")
    return "\n".join([
        f"{rel} is a worklog too large to read whole: never view it. Read it in two steps.",
        "",
        f'1. Call peek with {{"path": "{rel}"}}. It answers with the entry count, the time span, '
        "the tags and projects, and never an entry.",
        f'2. Pick a window from what peek said and call range with {{"path": "{rel}", "start": '
        '"<ISO time>", "end": "<ISO time>", "limit": 50}. If range says the window holds too '
        "many entries, narrow it (it says how many there are) rather than raising the limit.",
        "",
        "For the newest entries use last_n or last_hours; for words, grep. If peek says the log "
        "is being indexed for the first time, call it again: each call reads on from where the "
        "last stopped.",
    ])


def _review(ws: Workspace, name: str) -> str:
    target = next((c for c in checkpoints.listing(ws) if c.name == name), None)
    if target is None:
        raise NotFound(f"There is no checkpoint named {texts.short(name, 100)!r}.",
                       hint=f"Read {texts.CHECKPOINTS_URI} (or ask completion) for their names.")
    tip = ws.tip()
    commits = ws.repo.log(f"{target.commit}..{tip}", REVIEW_LIMIT + 1) if tip else []
    entries = timeline.entries_of(ws.repo, [c.sha for c in commits[:REVIEW_LIMIT]])
    head = (f"Review the ops made on branch {ws.branch()} since checkpoint {name} "
            f"({texts.when(target.time)}, message: {texts.short(target.message, 200) or '-'}).")
    if not entries:
        return head + "\n\nThere are none: the branch is where the checkpoint left it."
    more = (f" (the newest {REVIEW_LIMIT}; there are more: read {texts.LOG_URI})"
            if len(commits) > REVIEW_LIMIT else "")
    return "\n".join([
        head, "", f"{len(entries)} op(s), newest first{more}:",
        *(texts.log_line(e) for e in entries), "",
        f"For each op, read {texts.OP_PREFIX}{{op}} for what it changed (and "
        f"{texts.OP_PREFIX}{{op}}/file/{{path}} for a file right after it). Say which ops should "
        "stay and which should not. To take one back, call undo with {\"op\": \"<op id>\"}; to "
        f'drop everything since, call restore with {{"name": "{name}"}} (both are ops '
        "themselves: nothing is lost).",
    ])
