"""Finding the worklogs of a workspace, for peek without a path: names and sizes, never entries.

Invariants: the walk starts at the workspace root, follows no link, skips dot-folders (``.git``,
``.gitspace``) and visits at most VISIT names, so its cost is bounded whatever the workspace
holds. A ``.jsonl`` file counts as a worklog when its first non-blank line is an entry; a folder
counts as a segmented log when it holds segments (directly or in group folders), and is not
walked further. Nothing of a file but its first line is read.
"""

from __future__ import annotations

import os
from pathlib import Path

from _common import display, human_size, open_to_read
from _worklog import GROUP_NAME, SEGMENT, parse_entry, segments

VISIT = 50_000  # names looked at, at most
SHOWN = 20  # worklogs listed, at most
FIRST_LINE = 64 * 1024  # bytes read to find a file's first entry


def _is_entry_file(path: Path) -> bool:
    try:
        with open_to_read(path) as f:
            head = f.read(FIRST_LINE)
    except Exception:  # a link, a fifo, a file gone meanwhile: not a worklog we can read
        return False
    for line in head.splitlines():
        if line.strip():
            return parse_entry(line) is not None
    return False


def _holds_segments(folder: Path) -> bool:
    with os.scandir(folder) as entries:
        for entry in entries:
            if SEGMENT.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
                return True
            if GROUP_NAME.fullmatch(entry.name) and entry.is_dir(follow_symlinks=False):
                with os.scandir(entry.path) as inner:
                    if any(SEGMENT.fullmatch(e.name) for e in inner):
                        return True
    return False


def find_logs(base: Path) -> tuple[list[tuple[Path, bool, int]], bool]:
    """(path, segmented, bytes) of each worklog under ``base``, and whether the walk stopped at
    VISIT names before it had looked everywhere."""
    found: list[tuple[Path, bool, int]] = []
    visited = 0
    stack = [base]
    while stack:
        folder = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            visited += 1
            if visited > VISIT:
                return found, True
            if entry.name.startswith("."):
                continue
            path = Path(entry.path)
            if entry.is_dir(follow_symlinks=False):
                if _holds_segments(path):
                    parts, _ = segments(path)
                    found.append((path, True, sum(p.st.st_size for p in parts)))
                else:
                    stack.append(path)
            elif entry.name.endswith(".jsonl") and entry.is_file(follow_symlinks=False):
                if _is_entry_file(path):
                    found.append((path, False, entry.stat(follow_symlinks=False).st_size))
    return found, False


def workspace_view(base: Path) -> str:
    found, stopped = find_logs(base)
    found.sort(key=lambda f: (-f[2], str(f[0])))
    if not found:
        more = " (the walk stopped early: name the path)" if stopped else ""
        return ("No worklog in this workspace: no .jsonl file of entries and no folder of "
                f"segments{more}. Give peek the path of one.")
    out = [f"Worklogs in this workspace ({len(found)}{'+' if stopped else ''} found, the largest "
           "first). Call peek again with one of them as path:"]
    for path, segmented, size in found[:SHOWN]:
        kind = "segmented log folder" if segmented else "JSON Lines file"
        out.append(f"- {display(path)}: {kind}, {human_size(size)}")
    if len(found) > SHOWN:
        out.append(f"(and {len(found) - SHOWN} more)")
    if stopped:
        out.append(f"(the walk stopped after {VISIT:,} names; others may exist deeper)")
    return "\n".join(out)
