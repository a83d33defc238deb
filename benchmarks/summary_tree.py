"""Reading back the journal policy's tree of summaries from disk, to prove what it claims.

Used by the journal benchmark and the tests: it walks ``summaries/index.md`` down its links and
reports every way the tree breaks the policy's promises (``agent/policies/journal_tree.py``):
a file listed twice or never, a count that is not the sum of its parts, leaf windows that overlap,
a file that lists more than ``fanout`` parts, a file over ``cap`` characters, and leaves that hold
fewer or more entries than the log (given its true count, no entry is then missing from the gaps
between leaves, the windows that were read empty).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath

PART = re.compile(r"^- \[(\S+) to (\S+)\]\(([^)]+)\): ([\d,]+) entries", re.M)
ENTRIES = re.compile(r"^Entries: (\d+)", re.M)
TOTAL = re.compile(r"^([\d,]+) entries in ([\d,]+) chunks", re.M)


@dataclass
class Tree:
    leaves: int = 0
    nodes: int = 0  # period summaries (the index not counted)
    entries: int = 0  # added up from the leaves
    depth: int = 0  # levels of period summaries between the index and the leaves
    largest: tuple[int, str] = (0, "")  # characters, file
    widest: int = 0  # parts listed by one file
    gaps: int = 0  # stretches between two leaves (empty windows): the total proves them empty
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _when(text: str) -> datetime:
    return datetime.fromisoformat(text)


def check(root: Path, *, fanout: int, cap: int = 16_000, entries: int | None = None) -> Tree:
    """The tree under ``root/summaries``; ``entries`` (if given) is what the log really holds."""
    folder = root / "summaries"
    out = Tree()
    seen: set[str] = set()
    leaves: set[str] = set()
    windows: list[tuple[datetime, datetime, str]] = []

    def visit(rel: str, depth: int) -> int:
        """The entries of ``rel``, checked against its parts."""
        if rel in seen:
            out.problems.append(f"{rel} is listed twice")
            return 0
        seen.add(rel)
        path = folder / rel
        if not path.is_file():
            out.problems.append(f"{rel} is listed but missing")
            return 0
        text = path.read_text(encoding="utf-8")
        out.largest = max(out.largest, (len(text), rel))
        if len(text) > cap:
            out.problems.append(f"{rel} holds {len(text):,} characters, over {cap:,}")
        parts = PART.findall(text)
        own = ENTRIES.search(text)
        if not parts:  # a leaf
            leaves.add(rel)
            out.leaves += 1
            out.depth = max(out.depth, depth - 1)
            return int(own.group(1)) if own else 0
        out.widest = max(out.widest, len(parts))
        if len(parts) > fanout:
            out.problems.append(f"{rel} lists {len(parts)} parts, more than {fanout}")
        total = 0
        base = PurePosixPath(rel).parent
        for start, end, link, listed in parts:
            child = str(PurePosixPath(*_normal(base / link)))
            got = visit(child, depth + 1)
            if int(listed.replace(",", "")) != got:
                out.problems.append(f"{rel} lists {child} with {listed} entries; it holds {got}")
            if child in leaves:
                windows.append((_when(start), _when(end), child))
            total += got
        if rel != "index.md":
            out.nodes += 1
            if own is None or int(own.group(1)) != total:
                out.problems.append(f"{rel} says {own.group(1) if own else 'no'} entries; its "
                                    f"parts hold {total}")
        return total

    if not (folder / "index.md").is_file():
        out.problems.append("there is no summaries/index.md")
        return out
    out.entries = visit("index.md", 0)
    said = TOTAL.search((folder / "index.md").read_text(encoding="utf-8"))
    if said is None or int(said.group(1).replace(",", "")) != out.entries:
        out.problems.append(f"the index says {said.group(1) if said else 'no'} entries; its "
                            f"leaves hold {out.entries}")
    if entries is not None and out.entries != entries:
        out.problems.append(f"the leaves hold {out.entries} entries; the log holds {entries}")
    windows.sort()
    for (_, end, a), (start, _, b) in zip(windows, windows[1:], strict=False):
        pages = a.split("_p")[0] == b.split("_p")[0]  # pages of one window share its bounds
        if start < end and not pages:
            out.problems.append(f"{a} ends at {end}, after {b} starts at {start}")
        out.gaps += start > end  # an empty window writes no leaf
    unlisted = sorted(str(p.relative_to(folder)) for p in folder.rglob("*.md")
                      if str(p.relative_to(folder)) not in seen)
    out.problems += [f"{rel} is listed by no summary" for rel in unlisted[:10]]
    return out


def _normal(path: PurePosixPath) -> list[str]:
    parts: list[str] = []
    for p in path.parts:
        if p == "..":
            parts.pop()
        elif p != ".":
            parts.append(p)
    return parts
