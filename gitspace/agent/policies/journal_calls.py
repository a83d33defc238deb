"""The journal's nested form: each chunk is summarised by a delegated child, whose value
``{start, end, entries, summary}`` the parent writes as the chunk's summary and rolls up.

Invariants:
- a child's task names one window ``start <= ts < end`` of one log (``task``/``window``); the
  child reads it from its start, narrowing the end when range refuses the window (or reading it
  page by page when no minute fits), and returns the window it covered. The parent goes on from
  the returned end, so the windows still tile the log and every entry is in exactly one leaf;
- a value is checked before anything is written (``value``): the window it names starts where
  the parent asked and ends no later, its count is a number, and its summary is one chunk
  summary's size at most, so a child can never make the parent write a file or a call over the
  caps;
- what a parent keeps of a child is what a chunk read leaves: the count, and the tag and project
  counts its summary shows (``counts``; the top ones of each chunk, so the period summaries add
  up those).
"""

from __future__ import annotations

import json
import re
from typing import Any

from .journal_tree import SUMMARY_CAP, bound, parse_bound

DELEGATE = "delegate"  # the tool that runs a child (agent/delegate.py)
SUMMARY_MAX = SUMMARY_CAP + 400  # a chunk summary and its title line
VALUE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "start": {"type": "string", "description": "The window's first bound, as range took it"},
        "end": {"type": "string", "description": "Where the window read ended (exclusive)"},
        "entries": {"type": "integer", "minimum": 0},
        "summary": {"type": "string", "maxLength": SUMMARY_MAX},
    },
    "required": ["start", "end", "entries", "summary"],
    "additionalProperties": False,
}
TASK = re.compile(r"^Summarise the window (\S+) <= ts < (\S+) of the worklog (\S+) ")
COUNTED = re.compile(r"([^\s,]+) ([\d,]+)")


def task(path: str, start: int, end: int) -> str:
    return (f"Summarise the window {bound(start)} <= ts < {bound(end)} of the worklog {path} "
            "with range, from its start (narrow its end if range refuses it). Return the window "
            "you covered and one chunk summary of it: {start, end, entries, summary}.")


def window(text: str) -> tuple[str, int, int] | None:
    """(path, start, end) of a child's task, None for any other task."""
    found = TASK.match(text)
    if found is None:
        return None
    try:
        return found.group(3), parse_bound(found.group(1)), parse_bound(found.group(2))
    except ValueError:
        return None


def value(text: str, start: int, end: int) -> dict[str, Any] | str:
    """The child's value from its tool result, or why it cannot be used."""
    try:
        got = json.loads(text)
        covered = parse_bound(got["start"]), parse_bound(got["end"])
        entries, summary = got["entries"], got["summary"]
    except (ValueError, TypeError, KeyError):
        return f"no {{start, end, entries, summary}} value: {text[:200]}"
    if covered[0] != start or not start < covered[1] <= end:
        return (f"the window {got['start']} to {got['end']}, not one from {bound(start)} ending "
                f"by {bound(end)}")
    if not isinstance(entries, int) or entries < 0 or not isinstance(summary, str):
        return f"an entry count of {entries!r} and a summary of type {type(summary).__name__}"
    if len(summary) > SUMMARY_MAX:
        return f"a summary of {len(summary):,} characters, over {SUMMARY_MAX:,}"
    return {"end": covered[1], "entries": entries, "summary": summary}


def counts(summary: str, label: str) -> dict[str, int]:
    """The counts a chunk summary shows on its ``label:`` line (``Tags: bug 3, docs 1``)."""
    line = next((row for row in summary.splitlines() if row.startswith(f"{label}: ")), "")
    body = re.sub(r", and \d+ more$", "", line[len(label) + 2:])
    return {name: int(n.replace(",", "")) for name, n in COUNTED.findall(body)}
