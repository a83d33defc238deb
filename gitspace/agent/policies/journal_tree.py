"""The journal's tree of summaries: chunk summaries roll up into period summaries, those into
higher ones, up to one index. Files and their texts only; the policy decides when to write them.

Invariants:
- every chunk summary (a *leaf*) is listed by exactly one parent: a period summary, or the index
  when there are at most FANOUT leaves; every period summary is listed by exactly one parent
  the same way. So every entry is counted in exactly one leaf, and each file's "Entries:" line
  is the sum of its parts';
- no file lists more than FANOUT parts, so every file (and the ``create`` call that writes it)
  stays a few thousand characters at any size of log; the tree is log_FANOUT(chunks) deep;
- what the policy keeps (``levels``) is bounded too: per level, the parts not yet rolled up (fewer
  than FANOUT) and their tag and project counts, cut to the VOCAB largest.

Layout: leaves are ``summaries/<year>/<start>_<end>.md`` (``_p<k>`` for page k of a window read by
entry count), the summaries of level k are ``summaries/level-<k>/<start>_<end>.md``, the index
is ``summaries/index.md``. A window runs from its start up to, not including, its end.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

FOLDER = "summaries"
INDEX = f"{FOLDER}/index.md"
FANOUT = 20  # parts one summary lists
VOCAB = 30  # tags (and projects) one summary counts: the largest, added up from its parts
SUMMARY_CAP = 1_200  # characters of a chunk summary, its title line aside
NOTABLE = ("incident", "security", "deploy")  # the tags a reader of a summary looks for first
MINUTE_US = 60_000_000
HOUR_US = 60 * MINUTE_US
DAY_US = 24 * HOUR_US
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
LEAF = re.compile(rf"{FOLDER}/\d{{4}}/[^/]+\.md")  # a chunk summary's path

Counts = dict[str, int]


# -- times -------------------------------------------------------------------------------------

def bound(us: int) -> str:
    """A time as range takes it: a date at midnight UTC, else a date-time (UTC, no offset)."""
    dt = EPOCH + timedelta(microseconds=us)
    if us % DAY_US == 0:
        return dt.strftime("%Y-%m-%d")
    return dt.strftime("%Y-%m-%dT%H:%M:%S" if us % MINUTE_US else "%Y-%m-%dT%H:%M")


def parse_bound(text: str) -> int:
    """A bound as range writes one back (``2024-03-05``, ``2024-03-05T14:00``), in µs."""
    dt = datetime.fromisoformat(text)
    dt = dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt
    return (dt - EPOCH) // timedelta(microseconds=1)


def span(us: int) -> str:
    """A width as a person says it: 3 days, 14 hours, 20 minutes."""
    for unit, name in ((DAY_US, "day"), (HOUR_US, "hour"), (MINUTE_US, "minute")):
        if us >= unit or unit == MINUTE_US:
            n = max(1, us // unit)
            return f"{n:,} {name}{'s' if n != 1 else ''}"
    raise AssertionError("unreachable")


def _name(us: int) -> str:
    return bound(us).replace(":", "")  # no colon in a file name (it is a stream on NTFS)


# -- files -------------------------------------------------------------------------------------

def leaf_file(start: int, end: int, page: int = 0) -> str:
    year = (EPOCH + timedelta(microseconds=start)).year
    suffix = f"_p{page}" if page else ""
    return f"{FOLDER}/{year:04d}/{_name(start)}_{_name(end)}{suffix}.md"


def node_file(level: int, start: int, end: int) -> str:
    return f"{FOLDER}/level-{level}/{_name(start)}_{_name(end)}.md"


def _link(from_file: str, to_file: str) -> str:
    """``to_file`` relative to the folder of ``from_file`` (both under summaries/)."""
    here = from_file.split("/")[:-1]
    there = to_file.split("/")
    shared = 0
    while shared < min(len(here), len(there) - 1) and here[shared] == there[shared]:
        shared += 1
    return "/".join([".."] * (len(here) - shared) + there[shared:])


# -- counting ----------------------------------------------------------------------------------

def add_counts(into: Counts, counts: Counts) -> Counts:
    for name, n in counts.items():
        into[name] = into.get(name, 0) + n
    if len(into) > VOCAB:  # keep the largest: a vocabulary can be huge, a summary stays small
        keep = sorted(into.items(), key=lambda kv: (-kv[1], kv[0]))[:VOCAB]
        into.clear()
        into.update(keep)
    return into


def ranked(counts: Counts, top: int, more: bool = True) -> str:
    order = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    text = ", ".join(f"{name} {n:,}" for name, n in order[:top])
    return text + (f", and {len(order) - top} more" if more and len(order) > top else "")


def part(file: str, start: int, end: int, count: int, tags: Counts, projects: Counts
         ) -> dict[str, Any]:
    """One summary as its parent lists it and counts it."""
    return {"file": file, "start": start, "end": end, "count": count,
            "tags": add_counts({}, tags), "projects": add_counts({}, projects)}


# -- the tree ----------------------------------------------------------------------------------

def add(levels: list[list[dict[str, Any]]], item: dict[str, Any], path: str,
        fanout: int = FANOUT) -> list[tuple[str, str]]:
    """Put a leaf in the tree; the (file, text) of each period summary that filled up."""
    writes: list[tuple[str, str]] = []
    level = 0
    while True:
        if len(levels) == level:
            levels.append([])
        levels[level].append(item)
        if len(levels[level]) < fanout:
            return writes
        item = _roll_up(levels, level, path, writes)
        level += 1


def finish(levels: list[list[dict[str, Any]]], path: str, fanout: int = FANOUT
           ) -> tuple[list[tuple[str, str]], list[dict[str, Any]], int]:
    """Roll up every level but the top: the writes, the top level's parts (what the index lists)
    and how deep the tree is (0: the index lists the leaves)."""
    writes: list[tuple[str, str]] = []
    level = 0
    while level < len(levels) - 1 or len(levels[level]) > fanout:
        if levels[level]:
            item = _roll_up(levels, level, path, writes)
            if len(levels) == level + 1:
                levels.append([])
            levels[level + 1].append(item)
        level += 1
    return writes, levels[level], level


def _roll_up(levels: list[list[dict[str, Any]]], level: int, path: str,
             writes: list[tuple[str, str]]) -> dict[str, Any]:
    parts = levels[level]
    levels[level] = []
    tags: Counts = {}
    projects: Counts = {}
    for p in parts:
        add_counts(tags, p["tags"])
        add_counts(projects, p["projects"])
    start, end = parts[0]["start"], parts[-1]["end"]
    file = node_file(level + 1, start, end)
    count = sum(p["count"] for p in parts)
    head = [f"# {path}: level {level + 1} summary, {bound(start)} to {bound(end)}", "",
            f"Entries: {count} ({bound(start)} <= ts < {bound(end)}) in {len(parts)} parts",
            f"Tags: {ranked(tags, 12)}", f"Projects: {ranked(projects, 12) or 'none'}",
            f"Incidents: {tags.get('incident', 0)}; deploys: {tags.get('deploy', 0)}.", "",
            "## Parts", ""]
    writes.append((file, "\n".join(head + listing(file, parts)) + "\n"))
    return part(file, start, end, count, tags, projects)


def listing(file: str, parts: list[dict[str, Any]]) -> list[str]:
    """One line per part, linked relative to ``file``."""
    return [f"- [{bound(p['start'])} to {bound(p['end'])}]({_link(file, p['file'])}): "
            f"{p['count']:,} entries; top tags {ranked(p['tags'], 3, more=False)}" for p in parts]


def leaf_text(path: str, start: int, end: int, chunk: dict[str, Any], notable: list[str],
              page: str = "") -> str:
    lines = [
        f"# {path}: {bound(start)} to {bound(end)}{page}",
        "",
        f"Entries: {chunk['count']} ({bound(start)} <= ts < {bound(end)}{page}; first "
        f"{chunk['from']}, last {chunk['to']} UTC)",
        f"Tags: {ranked(chunk['tags'], 8)}",
        f"Projects: {ranked(chunk['projects'], 8) or 'none'}",
        "",
        "Notable:",
    ]
    size = sum(len(line) + 1 for line in lines[1:])  # the title (the log's name) not counted:
    rows = []  # the same log under another name keeps the same rows
    for line in notable or ["(no incidents, security work or deploys)"]:
        row = f"- {_clip(line, 110)}"
        if size + len(row) + 1 > SUMMARY_CAP:
            break
        rows.append(row)
        size += len(row) + 1
    return "\n".join(lines + sorted(rows)) + "\n"  # picked by tag, shown in time order


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"
