"""Reading JSON Lines worklogs at a cost that grows with the answer, not with the log.

A worklog line is ``{"ts": ISO-8601 with offset, "text": str, "tags": [str], "project": str?}``,
appended in time order. Lines that are not such an object are *malformed*: skipped and counted,
never fatal. Blank lines are ignored.

The index. For a log at absolute path P, ``$GITSPACE_CACHE_DIR/worklog-<sha256(P)>.json`` holds the
summary (count, earliest, latest, tag and project counts, malformed count) and a sparse index: the
timestamp and byte offset of every K-th valid entry. It covers the log up to ``end``, the byte
after its last newline; an unterminated last line (a write in progress, or a file without a final
newline) is parsed on every read and never cached.

It never goes stale silently. It is trusted only while the log's (size, mtime_ns, ctime_ns, inode)
are unchanged. If the same inode only grew and the first and last 4 KiB before the old ``end``
hash as before, only the appended tail is indexed; anything else (shrunk, same-size rewrite, new
inode, unreadable cache) rebuilds it. Without a cache folder every read is one streaming scan:
slow, still correct. The cache is never written inside the work tree.

Range queries binary-search the sparse index, read at most two K-entry boundary blocks to get the
exact count, and read the slice only when it fits the caller's limit. If the timestamps are not in
order (a hand-edited log), binary search would be wrong, so those logs are answered by a scan.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, BinaryIO

from _common import Refusal, UsageError, fit, resolve, root

K = 256  # entries per sparse-index block: two boundary blocks are ~50 KB of reading
FORMAT = 1  # bump when the cache layout changes; old caches are then rebuilt
EDGE = 4096  # bytes hashed at each end of the indexed region to detect rewrites
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
US = timedelta(microseconds=1)
DAY_US = 86_400_000_000
MAX_LINES = 200  # with fit()'s 60-character floor this keeps any listing under OUTPUT_BUDGET


# ---------------------------------------------------------------- timestamps and entries

def to_us(text: str) -> int:
    """Microseconds since the epoch for an ISO-8601 date-time; no offset means UTC."""
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    dt = datetime.fromisoformat(text)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return (dt - EPOCH) // US


def parse_when(text: str, name: str) -> int:
    """A query bound: a date (midnight UTC) or a date-time. Bad input is a UsageError."""
    try:
        if len(text) == 10:
            return (datetime.combine(date.fromisoformat(text), datetime.min.time(),
                                     tzinfo=timezone.utc) - EPOCH) // US
        return to_us(text)
    except ValueError:
        raise UsageError(f"{name} must be an ISO date like 2024-03-05 or a date-time like "
                         f"2024-03-05T09:00:00+00:00; got {text!r}.") from None


def fmt_us(us: int, seconds: bool = False) -> str:
    dt = EPOCH + us * US
    return dt.strftime("%Y-%m-%dT%H:%M:%S" if seconds else "%Y-%m-%dT%H:%M")


def parse_entry(line: bytes) -> dict[str, Any] | None:
    """The entry on one line with ``us`` added, or None if the line is malformed."""
    try:
        e = json.loads(line)
        if not isinstance(e, dict) or not isinstance(e.get("ts"), str):
            return None
        if not isinstance(e.get("text"), str):
            return None
        tags = e.setdefault("tags", [])
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            return None
        if not isinstance(e.get("project", ""), (str, type(None))):
            return None
        e["us"] = to_us(e["ts"])
    except (ValueError, TypeError):  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        return None
    return e


def render(e: dict[str, Any]) -> str:
    project = f" ({e['project']})" if e.get("project") else ""
    return f"{fmt_us(e['us'])} [{','.join(e['tags'])}]{project} {e['text']}"


def listing(header: str, entries: list[dict[str, Any]], malformed: int, note: str = "") -> str:
    """Header line, one compact line per entry (times in UTC), then notes. Bounded by fit()."""
    lines, width = fit([render(e) for e in entries])
    out = [header, *lines]
    if any(len(render(e)) > width for e in entries):
        out.append(f"(lines cut at {width} characters; a narrower window shows more of each text)")
    if malformed:
        out.append(f"{malformed:,} malformed line{'s' if malformed != 1 else ''} skipped.")
    if note:
        out.append(note)
    return "\n".join(out)


# ---------------------------------------------------------------- the index

def _new_index() -> dict[str, Any]:
    return {"format": FORMAT, "end": 0, "count": 0, "malformed": 0, "first": None, "last": None,
            "min": None, "max": None, "ordered": True, "tags": {}, "projects": {},
            "pts_us": [], "pts_off": [], "head": "", "tail": ""}


def _add(idx: dict[str, Any], line: bytes, off: int) -> None:
    if not line.strip():
        return
    e = parse_entry(line)
    if e is None:
        idx["malformed"] += 1
        return
    us = e["us"]
    if idx["count"] % K == 0:
        idx["pts_us"].append(us)
        idx["pts_off"].append(off)
    if idx["last"] is not None and us < idx["last"]:
        idx["ordered"] = False
    idx["count"] += 1
    idx["first"] = us if idx["first"] is None else idx["first"]
    idx["last"] = us
    idx["min"] = us if idx["min"] is None else min(idx["min"], us)
    idx["max"] = us if idx["max"] is None else max(idx["max"], us)
    for t in set(e["tags"]):
        idx["tags"][t] = idx["tags"].get(t, 0) + 1
    if e.get("project"):
        idx["projects"][e["project"]] = idx["projects"].get(e["project"], 0) + 1


def _scan(f: BinaryIO, idx: dict[str, Any], stop: int) -> None:
    """Index every complete line from ``idx['end']`` up to ``stop``."""
    off = idx["end"]
    f.seek(off)
    for line in f:
        if off + len(line) > stop or not line.endswith(b"\n"):
            break  # an unterminated last line is read per query, never cached
        _add(idx, line, off)
        off += len(line)
    idx["end"] = off


def _edges(f: BinaryIO, end: int) -> tuple[str, str]:
    f.seek(0)
    head = hashlib.sha256(f.read(min(EDGE, end))).hexdigest()
    f.seek(max(0, end - EDGE))
    tail = hashlib.sha256(f.read(min(EDGE, end))).hexdigest()
    return head, tail


def _cache_file(log: Path) -> Path | None:
    folder = os.environ.get("GITSPACE_CACHE_DIR")
    if not folder:
        return None
    cache = Path(folder).resolve()
    if cache == root() or root() in cache.parents:
        return None  # a cache inside the work tree would show up as an outside edit
    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return cache / f"worklog-{hashlib.sha256(str(log).encode()).hexdigest()[:32]}.json"


def _read_cache(file: Path | None, log: Path) -> dict[str, Any] | None:
    if file is None:
        return None
    try:
        idx = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return idx if idx.get("format") == FORMAT and idx.get("path") == str(log) else None


def _write_cache(file: Path, idx: dict[str, Any]) -> None:
    try:
        fd, tmp = tempfile.mkstemp(dir=file.parent, prefix=".worklog-")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(idx, out, separators=(",", ":"))
        os.replace(tmp, file)  # readers see the old or the new index, never half of one
    except OSError:
        pass  # an unwritable cache only costs speed


def _current_index(f: BinaryIO, path: Path, key: list[int]) -> dict[str, Any]:
    """The cached index if ``key`` (size, mtime, ctime, inode) matches, else extended or rebuilt."""
    cache = _cache_file(path)
    idx = _read_cache(cache, path)
    if idx is not None and idx["stat"] == key:
        return idx
    if not _grew_only(f, idx, key):
        idx = {**_new_index(), "path": str(path)}
    assert idx is not None
    _scan(f, idx, key[0])
    idx["head"], idx["tail"] = _edges(f, idx["end"])
    idx["stat"] = key
    if cache is not None:
        _write_cache(cache, idx)
    return idx


def _grew_only(f: BinaryIO, idx: dict[str, Any] | None, key: list[int]) -> bool:
    """Same inode, longer, and the indexed region's first and last 4 KiB unchanged."""
    if idx is None or key[3] != idx["stat"][3] or key[0] <= idx["stat"][0]:
        return False
    return _edges(f, idx["end"]) == (idx["head"], idx["tail"])


class Worklog:
    """A worklog opened against a validated index; queries never change the cached copy."""

    def __init__(self, path: Path) -> None:
        if not path.is_file():
            raise UsageError(f"{path.name!r} is not a file; give the path of a .jsonl worklog.")
        self.path = path.resolve()
        st = os.stat(self.path)
        self.size = st.st_size
        key = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
        with open(self.path, "rb") as f:
            idx = _current_index(f, self.path, key)
            if idx["end"] < self.size:  # an unterminated last line: counted now, never cached
                f.seek(idx["end"])
                idx = {**idx, "tags": dict(idx["tags"]), "projects": dict(idx["projects"]),
                       "pts_us": list(idx["pts_us"]), "pts_off": list(idx["pts_off"])}
                _add(idx, f.read(self.size - idx["end"]), idx["end"])
        self.count: int = idx["count"]
        self.malformed: int = idx["malformed"]
        self.ordered: bool = idx["ordered"]
        self.earliest: int = idx["min"] or 0  # only shown when count > 0
        self.latest: int = idx["max"] or 0
        self.tags: dict[str, int] = idx["tags"]
        self.projects: dict[str, int] = idx["projects"]
        self.pts_us: list[int] = idx["pts_us"]
        self.pts_off: list[int] = idx["pts_off"]

    # ------------------------------------------------------------ queries

    def _locate(self, f: BinaryIO, us: int) -> tuple[int, int]:
        """(ordinal, byte offset) of the first entry with a timestamp >= us."""
        j = bisect.bisect_left(self.pts_us, us)
        if j == 0:
            return 0, (self.pts_off[0] if self.pts_off else self.size)
        ordinal, off = (j - 1) * K, self.pts_off[j - 1]
        stop = self.pts_off[j] if j < len(self.pts_off) else self.size
        f.seek(off)
        for line in f.read(stop - off).splitlines(keepends=True):
            e = parse_entry(line) if line.strip() else None
            if e is not None:
                if e["us"] >= us:
                    return ordinal, off
                ordinal += 1
            off += len(line)
        return ordinal, stop

    def select(self, start: int, end: int, limit: int) -> tuple[int, list[dict[str, Any]], int]:
        """(count, entries, malformed) for start <= ts < end; no entries when count > limit."""
        with open(self.path, "rb") as f:
            if not self.ordered:
                return self._select_by_scan(f, start, end, limit)
            lo, lo_off = self._locate(f, start)
            hi, hi_off = self._locate(f, end) if end > start else (lo, lo_off)
            if hi - lo > limit:
                return hi - lo, [], 0
            f.seek(lo_off)
            entries, malformed = [], 0
            for line in f.read(max(0, hi_off - lo_off)).splitlines():
                if line.strip():
                    e = parse_entry(line)
                    if e is None:
                        malformed += 1
                    else:
                        entries.append(e)
            return hi - lo, entries, malformed

    def _select_by_scan(self, f: BinaryIO, start: int, end: int,
                        limit: int) -> tuple[int, list[dict[str, Any]], int]:
        count, entries, malformed = 0, [], 0
        f.seek(0)
        for line in f:
            if line.strip():
                e = parse_entry(line)
                if e is None:
                    malformed += 1
                elif start <= e["us"] < end:
                    count += 1
                    if count <= limit:
                        entries.append(e)
        return count, (entries if count <= limit else []), malformed


def tail(path: Path, n: int, block: int = 1 << 16) -> tuple[list[dict[str, Any]], int, bool]:
    """The last ``n`` valid entries in file order, reading backwards from the end.

    Returns (entries oldest first, malformed lines met on the way, whether the start was reached).
    """
    found: list[dict[str, Any]] = []
    malformed = 0
    with open(path, "rb") as f:
        pos = f.seek(0, os.SEEK_END)
        carry = b""
        while len(found) < n:
            step = min(block, pos)
            pos -= step
            f.seek(pos)
            lines = (f.read(step) + carry).split(b"\n")
            carry = lines.pop(0) if pos > 0 else b""  # the first piece may be half a line
            for line in reversed(lines):
                if len(found) == n:
                    break
                if line.strip():
                    e = parse_entry(line)
                    if e is None:
                        malformed += 1
                    else:
                        found.append(e)
            if pos == 0:
                break
    return found[::-1], malformed, pos == 0 and len(found) < n


def window_fit(span: int, count: int, limit: int) -> int:
    """A round window length (µs) holding about 80% of ``limit`` entries at the slice's density."""
    w = int(span * limit / max(count, 1) * 0.8)
    unit = DAY_US if w >= DAY_US else 3_600_000_000 if w >= 3_600_000_000 else 60_000_000
    return max(unit, w - w % unit)


def fmt_bound(us: int) -> str:
    """A query bound as the agent would type it back: a date when it is midnight UTC."""
    if us % DAY_US == 0:
        return fmt_us(us)[:10]
    return fmt_us(us, seconds=us % 60_000_000 != 0)


def window_listing(log: Worklog, start: int, end: int, limit: int, label: str,
                   advice: Callable[[int], str], until: str = "") -> str:
    """The entries with start <= ts < end, or a Refusal that says how to narrow the window.

    ``advice`` turns a window length that would fit into a sentence for this particular tool;
    ``until`` replaces the printed upper bound with an inclusive one (last_hours ends at "now").
    """
    count, entries, malformed = log.select(start, end, limit)
    if count > limit:
        raise too_many(f"{label} ({fmt_bound(start)} to {until or fmt_bound(end)})", count, limit,
                       advice(window_fit(end - start, count, limit)))
    notes = [] if log.ordered else ["This log's timestamps are out of order, so the answer came "
                                    "from a full scan (correct, but slow on a big log)."]
    if count == 0:
        span = (f"The log runs from {fmt_us(log.earliest)} to {fmt_us(log.latest)} UTC."
                if log.count else "The log is empty.")
        notes.insert(0, span)
    bounds = f"<= {until}" if until else f"< {fmt_bound(end)}"
    header = (f"{count} entr{'y' if count == 1 else 'ies'} in {label.lower()}, "
              f"{fmt_bound(start)} <= ts {bounds} (times UTC):")
    return listing(header, entries, malformed, "\n".join(notes))


def describe_span(us: int) -> str:
    if us >= DAY_US:
        return f"{us // DAY_US} day{'s' if us // DAY_US != 1 else ''}"
    hours = us // 3_600_000_000
    if hours >= 1:
        return f"{hours} hour{'s' if hours != 1 else ''}"
    return f"{max(1, us // 60_000_000)} minutes"


def too_many(what: str, count: int, limit: int, advice: str) -> Refusal:
    return Refusal(f"Refused: {what} holds {count:,} entries, more than the limit of {limit}. "
                   f"{advice} (The output is bounded so it cannot flood your context; process a "
                   f"large log chunk by chunk and summarise each chunk.)")


def open_log(rel: str) -> Worklog:
    return Worklog(resolve(rel))
