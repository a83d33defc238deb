"""The plan tools: the agent's plan is the workspace file ``plan.md``, so it is versioned with the
work and survives compaction and restarts.

Invariant: a step is a line ``N. [ ] text`` or ``N. [x] text``; steps are numbered by their order in
the file, whatever numbers a human typed, and every other line is left exactly as it was. Adding or
finishing a step is one op that changes only its own line; showing the plan never commits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..core import paths
from ..core.identity import Identity
from ..core.result import Result
from ..core.transaction import Outcome, Txn
from ..core.workspace import Workspace
from ..errors import BadArguments, FileRefused, ToolFailed
from .registry import builtin, integer, obj, string
from .text import VIEW_CAP, decode, refuse_binary

PLAN_FILE = "plan.md"
HEADER = "# Plan\n\n"
MAX_STEP = 200
EMPTY = "The plan is empty; add steps with plan_add."
_STEP = re.compile(r"^\s*\d+[.)]\s*\[([ xX])\]\s?(.*)$")
# Every character str.splitlines() breaks on: a step must stay one line of plan.md.
_LINE_BREAKS = set("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029")


@dataclass(frozen=True)
class Step:
    text: str
    done: bool
    line: int  # index of its line in plan.md


def parse(text: str) -> list[Step]:
    steps = []
    for index, line in enumerate(text.split("\n")):
        match = _STEP.match(line)
        if match:
            steps.append(Step(match[2].rstrip(), match[1] != " ", index))
    return steps


def listing(steps: list[Step]) -> str:
    """The plan as shown to the model, numbered by position, bounded by the view cap."""
    if not steps:
        return EMPTY
    rows, size = [], 0
    for n, step in enumerate(steps, 1):
        row = f"{n}. [{'x' if step.done else ' '}] {step.text}"
        size += len(row) + 1
        if size > VIEW_CAP:
            rows.append(f"... and {len(steps) - n + 1} more steps (plan.md is too long to show "
                        "whole; view it with view_range).")
            break
        rows.append(row)
    return "\n".join(rows)


def _read(ws: Workspace, txn: Txn | None = None) -> str:
    """plan.md's text ('' when it does not exist yet), through ``txn`` when one is running."""
    _, full = paths.resolve(ws.root, PLAN_FILE)  # refuses a plan.md that is a symbolic link
    if txn is not None:
        data = txn.read(PLAN_FILE)
        return "" if data is None else decode(PLAN_FILE, data)
    if not full.is_file():
        return ""
    size = full.stat().st_size
    if size > ws.max_file_bytes:
        raise FileRefused(f"{PLAN_FILE} is {size:,} bytes, too large to read as a plan.",
                          hint="Shorten plan.md by hand, or read it with the constraint tools.")
    return decode(PLAN_FILE, full.read_bytes())


def _one_line(step: str) -> str:
    if any(c in _LINE_BREAKS for c in step):
        raise BadArguments(
            "A plan step must be a single line, but this one contains a line break.",
            hint="Call plan_add once per step, each with one short line.",
        )
    if not step.strip():
        raise BadArguments("A plan step must say something; this one is blank.")
    return step.strip()


@builtin(
    "plan_add",
    "Add a step to the end of your plan (kept in plan.md, so it survives restarts and "
    "compaction). Use it to write down the steps of a task before you start, one short line "
    "each; mark them finished with plan_done.",
    {"step": "Map the corridors east of the entrance"},
    obj(["step"], step=string(f"The step, one line of at most {MAX_STEP} characters.",
                              minLength=1, maxLength=MAX_STEP)),
    mutates=True,
)
def plan_add(ws: Workspace, args: dict[str, Any], who: Identity) -> Result:
    refuse_binary(args, "step")
    step = _one_line(args["step"])

    def stage(txn: Txn) -> Outcome:
        text = _read(ws, txn)
        steps = parse(text)
        if not text.strip():
            text = HEADER
        elif not text.endswith("\n"):
            text += "\n"
        n = len(steps) + 1
        text += f"{n}. [ ] {step}\n"
        txn.write(PLAN_FILE, text.encode("utf-8"))
        return Outcome(f"Added step {n}: {step}\n{listing(parse(text))}", f"plan_add step {n}")

    return ws.transact(who.op({"step": step}), stage, who.author)


@builtin(
    "plan_done",
    "Mark a step of your plan as done, by its number as plan_show lists it. Call it as soon as a "
    "step is finished, so the plan always says what is left.",
    {"step": 2},
    obj(["step"], step=integer("The step's number, 1 for the first step, as plan_show lists it.")),
    mutates=True,
)
def plan_done(ws: Workspace, args: dict[str, Any], who: Identity) -> Result:
    number = args["step"]

    def stage(txn: Txn) -> Outcome:
        text = _read(ws, txn)
        steps = parse(text)
        if not 1 <= number <= len(steps):
            raise ToolFailed(_no_such_step(number, steps))
        step = steps[number - 1]
        lines = text.split("\n")
        if not step.done:  # a done step is left alone, so the transaction records nothing
            # Only the checkbox of that one line changes; a human's layout stays as it was.
            lines[step.line] = re.sub(r"\[ \]", "[x]", lines[step.line], count=1)
        txn.write(PLAN_FILE, "\n".join(lines).encode("utf-8"))
        done = [s if i != number - 1 else Step(s.text, True, s.line) for i, s in enumerate(steps)]
        return Outcome(f"Marked step {number} done: {step.text}\n{listing(done)}",
                       f"plan_done step {number}")

    return ws.transact(who.op({"step": number}), stage, who.author)


def _no_such_step(number: int, steps: list[Step]) -> str:
    if not steps:
        return f"There is no step {number}; the plan is empty. Add steps with plan_add."
    count = "1 step" if len(steps) == 1 else f"{len(steps)} steps"
    return f"There is no step {number}; the plan has {count}:\n{listing(steps)}"


@builtin(
    "plan_show",
    "Show your plan: every step with its number and whether it is done. Call plan_show after a "
    "restart or when the conversation was compacted, to see where you are.",
    {},
    obj(),
    mutates=False,
)
def plan_show(ws: Workspace, args: dict[str, Any], who: Identity) -> Result:
    steps = parse(_read(ws))
    return Result(ok=True, text=listing(steps), tool=who.tool)
