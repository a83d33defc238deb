"""Reading JSON Lines worklogs at a cost that grows with the answer, not with the log.

This docstring is the format contract for worklogs, their segmented layout and the index cache.

Entries. A worklog line is ``{"ts": ISO-8601 with offset, "text": str, "tags": [str],
"project": str?}``, appended in time order. Lines that are not such an object are *malformed*:
skipped and counted, never fatal. Blank lines are ignored.

Two forms, one log. A worklog is either
- one file ``*.jsonl``, or
- a *segmented* log: a folder of segments, each a JSON Lines file named ``<n>.jsonl`` (``n``
  decimal digits; append_entry writes six, ``000042.jsonl``), either directly in the folder or one
  level down in a group folder named by digits. append_entry puts segment ``n`` in group
  ``n // 100`` (``journal/worklog/0000/000042.jsonl``), so no folder an append rewrites lists more
  than 100 names, and starts segment ``n + 1`` once segment ``n`` would pass ROLL_BYTES (128 KiB):
  an append commits one small file whatever the log's size. Segments are read in the order of
  ``n`` (then of their path); together they are one log. Anything else in the folder (other
  names, links, special files) is not a segment: peek says how many such names there are, nothing
  reads them.
A log is *in time order* when each segment is, and each segment's earliest entry is no older than
the latest entry of the segment before it. Queries binary-search only such a log; any other is
answered by a scan (correct, slower), and peek and range say so.

The index. Every file of a log (the file, or each segment) has a summary: count, earliest,
latest, tag and project counts, malformed count, whether its timestamps are in order, and a
sparse index (the timestamp and byte offset of every K-th valid entry). It covers the file up to
``end``, the byte after its last newline; an unterminated last line (a write in progress, or a
file without a final newline) is parsed on every read and never cached. With a cache folder
(``$GITSPACE_CACHE_DIR``: gitspace gives ``.git/gitspace/cache``) the summaries of one log are
kept in ``worklog-<sha256(absolute path)>.json`` there. The cache is never written inside the
work tree proper; inside its ``.git`` folder is fine (git never lists it, no op records it). A
folder's record keeps each segment's summary as one row of numbers (see ``_row``) and the log's
tag and project totals, added up from exactly those segments; each segment's own counts are kept
apart in ``worklog-<...>.vocab.json`` (with its key), read only when a segment changed and the
totals are added up again. So an unchanged 1,000-segment log is answered from rows of numbers.

The cache never goes stale silently. A file's summary is trusted only while its (size, mtime_ns,
ctime_ns, inode) are unchanged, and, git's racy-index rule, only if the file last changed before
the cache file was written: a file whose mtime or ctime is not older than the cache file could
have changed again within one tick of the file system's clock. Such a *racy* segment is re-read
(it is small); a racy single file is trusted only if the first and last 4 KiB of its indexed part
still hash as before. A segment whose key changed is re-read whole. A single file that kept its
inode and only grew, with the first and last 4 KiB before the old ``end`` unchanged, has only its
new tail read; anything else (shrunk, same-size rewrite, new inode, unreadable cache) rebuilds
it. (So a single file rewritten in place with the same length in the middle *and* grown at once
would be missed; a segment cannot be: it is always re-read whole.) Without a cache folder every
read is one streaming scan: slow, still correct.

A first read of a huge log cannot finish inside a script's 10 s timeout on a busy machine (1M
entries, 127 MiB: about 6 s of CPU). With a cache folder, building summaries stops after
BUILD_BUDGET seconds of the call (at least one segment, or 4,096 lines, is read): what was read is kept (a single file as the summary of its first
``end`` bytes, which the next call extends like a grown file; a folder as the summaries of the
segments read so far) and the call answers, exit 1, how far it got and to call again. Each call
carries on where the last stopped, so a log of any size gets indexed, a few seconds at a time.

Range queries binary-search the sparse index of at most two boundary files, read at most two
K-entry blocks to get the exact count, and read the slice only when it fits the caller's limit.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import os
import re
import stat
import time
from collections.abc import Callable
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, BinaryIO

from _boot import cache_folder
from _common import Progress, Refusal, UsageError, fit, human_size, open_to_read, resolve

K = 256  # entries per sparse-index block: two boundary blocks are ~50 KB of reading
FORMAT = 6  # bump when the cache layout changes; old caches are then rebuilt
EDGE = 4096  # bytes hashed at each end of the indexed region to detect rewrites
ROLL_BYTES = 128 * 1024  # a segment append_entry would grow past this starts a new segment
GROUP = 100  # segments per group folder
SEGMENT = re.compile(r"[0-9]{1,15}\.jsonl")
GROUP_NAME = re.compile(r"[0-9]{1,15}")
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
US = timedelta(microseconds=1)
FIRST_US = (datetime.min.replace(tzinfo=timezone.utc) - EPOCH) // US  # 0001-01-01T00:00Z
LAST_US = (datetime.max.replace(tzinfo=timezone.utc) - EPOCH) // US  # 9999-12-31T23:59:59.999999Z
DAY_US = 86_400_000_000


def _budget() -> float:
    """Seconds a call may spend building summaries: 6 (the script timeout is 10), or
    ``$GITSPACE_WORKLOG_BUDGET`` (tests set 0: every call then reads one step and stops)."""
    try:
        return max(0.0, float(os.environ.get("GITSPACE_WORKLOG_BUDGET", "6")))
    except ValueError:
        return 6.0


BUILD_BUDGET = _budget()
_STARTED = time.monotonic()
PAGED = 20_000  # entries a window read page by page (range's skip) may hold
MAX_LINES = 200  # with fit()'s 60-character floor this keeps any listing under OUTPUT_BUDGET


# ---------------------------------------------------------------- timestamps and entries

def to_us(text: str) -> int:
    """Microseconds since the epoch for an ISO-8601 date-time; no offset means UTC. An instant
    that falls outside the years 1-9999 in UTC (``0001-01-01T00:00+14:00``) is a ValueError:
    no entry can be shown at it."""
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    dt = datetime.fromisoformat(text)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    us = (dt - EPOCH) // US
    if not FIRST_US <= us <= LAST_US:
        raise ValueError(f"{text} falls outside the years 1 to 9999 in UTC")
    return us


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
    # A bound computed past the edge of time (the day after 9999-12-31) shows as that edge.
    dt = EPOCH + min(max(us, FIRST_US), LAST_US) * US
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
    except (ValueError, TypeError, OverflowError):  # JSON and Unicode errors are ValueErrors
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


# ---------------------------------------------------------------- one file's summary

def _new_index() -> dict[str, Any]:
    return {"end": 0, "count": 0, "malformed": 0, "first": None, "last": None,
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


class OutOfTime(Exception):
    """The call's BUILD_BUDGET ran out while building summaries (what was built is kept)."""


def _out_of_time(budgeted: bool) -> bool:
    return budgeted and time.monotonic() - _STARTED > BUILD_BUDGET


def _scan(f: BinaryIO, idx: dict[str, Any], stop: int, budgeted: bool = False,
          report: Callable[[int], None] | None = None) -> None:
    """Index every complete line from ``idx['end']`` up to ``stop``; ``budgeted``: raise
    OutOfTime once the budget is spent, with ``idx`` complete up to its ``end``; ``report``
    hears the byte offset reached now and then (the progress channel)."""
    off = idx["end"]
    f.seek(off)
    for n, line in enumerate(f, 1):
        if off + len(line) > stop or not line.endswith(b"\n"):
            break  # an unterminated last line is read per query, never cached
        _add(idx, line, off)
        off += len(line)
        if n % 4096 == 0:
            if report is not None:
                report(off)
            if _out_of_time(budgeted):
                idx["end"] = off
                raise OutOfTime
    idx["end"] = off
    if report is not None:
        report(off)


def _edges(f: BinaryIO, end: int) -> tuple[str, str]:
    f.seek(0)
    head = hashlib.sha256(f.read(min(EDGE, end))).hexdigest()
    f.seek(max(0, end - EDGE))
    tail = hashlib.sha256(f.read(min(EDGE, end))).hexdigest()
    return head, tail


def _summarise(f: BinaryIO, key: list[int], idx: dict[str, Any]) -> dict[str, Any]:
    """``idx`` extended to the file's complete lines (pass ``_new_index()`` for a fresh one)."""
    _scan(f, idx, key[0])
    _seal(f, idx, key)
    return idx


def _seal(f: BinaryIO, idx: dict[str, Any], key: list[int]) -> None:
    idx["head"], idx["tail"] = _edges(f, idx["end"])
    idx["stat"] = key


def _with_tail(f: BinaryIO, idx: dict[str, Any], size: int) -> dict[str, Any]:
    """``idx`` plus an unterminated last line, counted now and never cached (a copy)."""
    if idx["end"] >= size:
        return idx
    f.seek(idx["end"])
    # (A segment's summary made from its cached row has no counts of its own: the tail's alone.)
    out = {**idx, "tags": dict(idx.get("tags", {})), "projects": dict(idx.get("projects", {})),
           "pts_us": list(idx["pts_us"]), "pts_off": list(idx["pts_off"])}
    _add(out, f.read(size - idx["end"]), idx["end"])
    return out


# A segment's summary as a folder's cache keeps it: one row, [size, mtime_ns, ctime_ns, inode
# (its key), end, count, malformed, min, max, ordered (0/1), where], ``where`` being first, last
# and the sparse index (pts_us, then pts_off) as one string of numbers: JSON decodes a string
# far faster than a list of big numbers, and only a query that reads into the segment splits it.
# Its tag and project counts are kept apart (``_vocab_file``). No edge hashes: a segment whose
# key changed is re-read whole, never extended.
def _row(idx: dict[str, Any]) -> list[Any]:
    where = " ".join(map(str, [idx["first"], idx["last"], *idx["pts_us"], *idx["pts_off"]]))
    return [*idx["stat"], idx["end"], idx["count"], idx["malformed"], idx["min"], idx["max"],
            int(idx["ordered"]), where]


def _unrow(row: list[Any]) -> dict[str, Any]:
    first, last, *pts = [None if n == "None" else int(n) for n in row[10].split()]
    half = len(pts) // 2
    return {"stat": row[:4], "end": row[4], "count": row[5], "malformed": row[6], "min": row[7],
            "max": row[8], "ordered": bool(row[9]), "first": first, "last": last,
            "pts_us": pts[:half], "pts_off": pts[half:]}


def _key(st: os.stat_result) -> list[int]:
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def _racy(key: list[int], written_ns: int) -> bool:
    """Did the file change no earlier than the cache was written (the same clock tick, maybe)?"""
    return max(key[1], key[2]) >= written_ns


# ---------------------------------------------------------------- the cache

def _cache_file(log: Path) -> Path | None:
    folder = cache_folder()
    if folder is None:
        return None
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:
        return None
    return Path(folder, f"worklog-{hashlib.sha256(str(log).encode()).hexdigest()[:32]}.json")


def _read_cache(file: Path | None, log: Path, kind: str) -> tuple[dict[str, Any] | None, int]:
    """(the cached record for ``log``, the cache file's mtime_ns), or (None, 0)."""
    if file is None:
        return None, 0
    try:  # never through a link, never a fifo's wait: only a regular file is a cache
        fd = os.open(file, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        with open(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                return None, 0
            written = st.st_mtime_ns
            data = json.loads(f.read(st.st_size + 1))
    except (OSError, ValueError, RecursionError):
        return None, 0
    ok = (isinstance(data, dict) and data.get("format") == FORMAT and data.get("path") == str(log)
          and data.get("kind") == kind)
    return (data, written) if ok else (None, 0)


def _write_cache(file: Path | None, record: dict[str, Any]) -> None:
    if file is None:
        return
    tmp = file.with_name(f".{file.name}.{os.getpid()}.{os.urandom(4).hex()}")
    try:
        with open(tmp, "x", encoding="utf-8") as out:
            json.dump(record, out, separators=(",", ":"))
        os.replace(tmp, file)  # readers see the old or the new record, never half of one
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        # an unwritable cache only costs speed


# ---------------------------------------------------------------- the parts of a log

class Part:
    """One file of a log: the single file, or one segment (``name`` relative to the folder).
    Made from a summary (``idx``) or from a cached row, whose summary is decoded when a query
    first reads it (most queries read the summaries of one or two segments of a thousand)."""

    __slots__ = ("name", "where", "size", "count", "malformed", "min", "max", "ordered", "_idx",
                 "_row")

    def __init__(self, name: str, where: str | Path, size: int, idx: dict[str, Any] | None = None,
                 row: list[Any] | None = None) -> None:
        self.name, self.where, self.size, self._idx, self._row = name, where, size, idx, row
        if idx is not None:
            self.count, self.malformed, self.min, self.max, self.ordered = (
                idx["count"], idx["malformed"], idx["min"], idx["max"], idx["ordered"])
        else:
            assert row is not None
            self.count, self.malformed, self.min, self.max, self.ordered = (
                row[5], row[6], row[7], row[8], bool(row[9]))

    @property
    def idx(self) -> dict[str, Any]:
        if self._idx is None:
            assert self._row is not None
            self._idx = _unrow(self._row)
        return self._idx

    @property
    def path(self) -> Path:
        return Path(self.where)  # (made only for the parts a query opens: a thousand cost ms)


def _file_part(path: Path) -> Part:
    """A single-file log's one part, from the cache when it can be trusted."""
    st = os.stat(path)
    key = _key(st)
    cache = _cache_file(path)
    record, written = _read_cache(cache, path, "file")
    old = record["idx"] if record else None
    with open_to_read(path) as f:
        trusted = old is not None and old.get("stat") == key and (
            not _racy(key, written) or _edges(f, old["end"]) == (old["head"], old["tail"]))
        if trusted:
            assert old is not None
            idx = old
        else:
            idx = old if old is not None and _grew_only(f, old, key) else _new_index()
            try:
                _scan(f, idx, key[0], budgeted=cache is not None,
                      report=Progress(key[0], f"bytes of {path.name} indexed"))
            except OutOfTime:
                # Kept as the summary of the file's first ``end`` bytes: the next call finds
                # the file "grown" past it and reads on from there.
                _seal(f, idx, [idx["end"], *key[1:]])
                _write_cache(cache, {"format": FORMAT, "path": str(path), "kind": "file",
                                     "idx": idx})
                raise _indexing(path.name, idx["end"], key[0]) from None
            _seal(f, idx, key)
            _write_cache(cache, {"format": FORMAT, "path": str(path), "kind": "file", "idx": idx})
        return Part(path.name, path, key[0], _with_tail(f, idx, key[0]))


def _indexing(name: str, done: int, total: int) -> Refusal:
    share = f"{100 * done / total:.0f}%" if total else "all"
    return Refusal(f"{name} is being indexed for the first time: {human_size(done)} of "
                   f"{human_size(total)} ({share}) indexed so far, and kept. Call this tool "
                   "again: each call reads on from where the last stopped, and once the whole log "
                   "is read every call answers at once.")


def _grew_only(f: BinaryIO, idx: dict[str, Any] | None, key: list[int]) -> bool:
    """Same inode, longer, and the indexed region's first and last 4 KiB unchanged."""
    if idx is None or key[3] != idx["stat"][3] or key[0] <= idx["stat"][0]:
        return False
    return _edges(f, idx["end"]) == (idx["head"], idx["tail"])


class Found:
    """A segment as the folder lists it (``name`` relative to it: "0000/000042.jsonl"); its
    lstat is taken when first asked for."""

    __slots__ = ("number", "name", "entry")

    def __init__(self, number: int, name: str, entry: os.DirEntry[str]) -> None:
        self.number, self.name, self.entry = number, name, entry

    @property
    def path(self) -> Path:
        return Path(self.entry.path)

    @property
    def st(self) -> os.stat_result:
        return self.entry.stat(follow_symlinks=False)  # (the entry keeps it)


def segments(folder: Path) -> tuple[list[Found], int]:
    """The segments of a log folder in log order, and how many other names it holds."""
    found: list[Found] = []
    others = 0
    for entry in os.scandir(folder):
        if SEGMENT.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
            found.append(Found(int(entry.name[:-6]), entry.name, entry))
        elif GROUP_NAME.fullmatch(entry.name) and entry.is_dir(follow_symlinks=False):
            for inner in os.scandir(entry.path):
                if SEGMENT.fullmatch(inner.name) and inner.is_file(follow_symlinks=False):
                    found.append(Found(int(inner.name[:-6]), f"{entry.name}/{inner.name}",
                                       inner))
                else:
                    others += 1
        else:
            others += 1
    found.sort(key=lambda s: (s.number, s.name))
    return found, others


def segment_path(folder: Path, number: int) -> Path:
    """Where append_entry puts segment ``number``: ``<folder>/<group>/<number>.jsonl``."""
    return folder / f"{number // GROUP:04d}" / f"{number:06d}.jsonl"


Vocabulary = tuple[dict[str, int], dict[str, int]]  # (tag counts, project counts)


def _vocab_file(cache: Path | None) -> Path | None:
    """Where a folder's per-segment tag and project counts are kept, beside its record: read
    only when a segment changed and the log's totals are added up again."""
    return None if cache is None else cache.with_name(cache.name[:-5] + ".vocab.json")


def _write_folder(cache: Path | None, folder: Path, rows: dict[str, list[Any]],
                  vocab: dict[str, list[Any]], totals: list[dict[str, int]] | None) -> None:
    """The counts first, then the record: a record whose counts file is older or missing only
    makes the next change re-read the segments whose counts it lacks (checked by key)."""
    _write_cache(_vocab_file(cache), {"format": FORMAT, "path": str(folder), "kind": "vocab",
                                      "parts": vocab})
    record: dict[str, Any] = {"format": FORMAT, "path": str(folder), "kind": "folder",
                              "parts": rows}
    if totals is not None:
        record["totals"] = totals
    _write_cache(cache, record)


def _folder_parts(folder: Path) -> tuple[list[Part], int, Vocabulary]:
    """Every segment's part, re-reading only the segments whose summary cannot be trusted, and
    the log's tag and project counts. The record keeps those totals beside the rows they were
    added up from, so a log none of whose segments changed is answered from rows of numbers."""
    found, others = segments(folder)
    cache = _cache_file(folder)
    record, written = _read_cache(cache, folder, "folder")
    known: dict[str, list[Any]] = record["parts"] if record else {}
    keys = [_key(seg.st) for seg in found]
    stale = []
    for seg, key in zip(found, keys, strict=True):
        row = known.get(seg.name)
        stale.append(row is None or row[:4] != key or _racy(key, written))
    changed = record is None or "totals" not in record or len(known) != len(found) or any(stale)
    vocab: dict[str, list[Any]] = {}  # name -> [*key, tags, projects]
    if changed:  # the totals are added up again: every segment's counts are needed
        kept, _ = _read_cache(_vocab_file(cache), folder, "vocab")
        counts: dict[str, list[Any]] = kept["parts"] if kept else {}
        for i, (seg, key) in enumerate(zip(found, keys, strict=True)):
            got = counts.get(seg.name)
            if not stale[i] and got is not None and got[:4] == key:
                vocab[seg.name] = got
            else:
                stale[i] = True  # (its counts are not known: read it again)
    rows: dict[str, list[Any]] = {}
    parts = []
    grown: dict[str, dict[str, Any]] = {}  # name -> its summary with an unfinished last line
    done = 0  # bytes of the segments read so far: the progress a stopped call reports
    read = 0  # segments read in this call: a call stops only after making some progress
    report = Progress(sum(key[0] for key in keys), f"bytes of {folder.name} indexed")
    for seg, key, again in zip(found, keys, stale, strict=True):
        if again:
            if read and _out_of_time(cache is not None):
                # Keep the summaries made and trusted so far; the next call reads on from here.
                _write_folder(cache, folder, rows, vocab, None)
                raise _indexing(folder.name, done, sum(s.st.st_size for s in found))
            with open_to_read(seg.path) as f:
                idx = _new_index()
                _scan(f, idx, key[0])
                idx["stat"] = key
            part = Part(seg.name, seg.entry.path, key[0], idx=idx)
            row = _row(idx)
            vocab[seg.name] = [*key, idx["tags"], idx["projects"]]
            read += 1
            report(done + key[0])
        else:
            row = known[seg.name]
            part = Part(seg.name, seg.entry.path, key[0], row=row)
        done += key[0]
        rows[seg.name] = row
        if row[4] < key[0]:  # (its end: an unfinished last line)
            with open_to_read(seg.path) as f:
                grown[seg.name] = _with_tail(f, part.idx, key[0])
        parts.append(part)
    if changed:
        totals = [_total(v[4] for v in vocab.values()), _total(v[5] for v in vocab.values())]
        _write_folder(cache, folder, rows, vocab, totals)
    else:
        assert record is not None
        totals = record["totals"]
    tags, projects = totals
    if grown:  # unterminated last lines count too (never cached)
        tags, projects = dict(tags), dict(projects)
        for part in parts:
            tailed = grown.get(part.name)
            for total, name in ((tags, "tags"), (projects, "projects")) if tailed else ():
                before = part.idx.get(name, {})
                for word, n in tailed[name].items():
                    total[word] = total.get(word, 0) + n - before.get(word, 0)
        parts = [Part(p.name, p.where, p.size, idx=grown[p.name]) if p.name in grown else p
                 for p in parts]
    return parts, others, (tags, projects)


# ---------------------------------------------------------------- the log

class Worklog:
    """A worklog (a file or a segmented folder) opened against validated summaries; queries
    never change the cached copy."""

    def __init__(self, path: Path) -> None:
        self.path = path.resolve()
        self.segmented = self.path.is_dir()
        if self.segmented:
            self.parts, self.others, vocab = _folder_parts(self.path)
            if not self.parts and self.others:
                raise UsageError(f"{path.name!r} is a folder but holds no worklog segments "
                                 "(files named like 0000/000001.jsonl); give the path of a "
                                 ".jsonl worklog or of a segmented log folder.")
        elif self.path.is_file():
            self.parts, self.others = [_file_part(self.path)], 0
            vocab = self.parts[0].idx["tags"], self.parts[0].idx["projects"]
        else:
            raise UsageError(f"{path.name!r} is neither a .jsonl worklog file nor a folder of "
                             "segments; give the path of one.")
        self.size = sum(p.size for p in self.parts)
        self.count = sum(p.count for p in self.parts)
        self.malformed = sum(p.malformed for p in self.parts)
        live = [p for p in self.parts if p.count]
        self.earliest: int = min((p.min for p in live), default=0)  # shown if count > 0
        self.latest: int = max((p.max for p in live), default=0)
        self.tags: dict[str, int] = vocab[0]
        self.projects: dict[str, int] = vocab[1]
        self.disorder = _disorder(live, self.segmented)
        self.ordered = self.disorder is None
        self._live = live

    # ------------------------------------------------------------ queries

    def select(self, start: int, end: int, limit: int) -> tuple[int, list[dict[str, Any]], int]:
        """(count, entries, malformed) for start <= ts < end; no entries when count > limit."""
        if not self.ordered:
            return self._select_by_scan(start, end, limit)
        spans: list[tuple[Part, int, int]] = []
        count = 0
        # The parts are in time order, so those overlapping [start, end) are consecutive.
        first = bisect.bisect_left([p.max for p in self._live], start)
        for part in self._live[first:]:
            if part.min >= end:
                break
            with open_to_read(part.path) as f:
                lo, lo_off = (0, part.idx["pts_off"][0]) if part.min >= start else \
                    _locate(f, part, start)
                hi, hi_off = (part.count, part.size) if part.max < end else \
                    _locate(f, part, end)
            count += hi - lo
            spans.append((part, lo_off, hi_off))
        if count > limit:
            return count, [], 0
        entries, malformed = [], 0
        for part, lo_off, hi_off in spans:
            with open_to_read(part.path) as f:
                f.seek(lo_off)
                block = f.read(max(0, hi_off - lo_off))
            for line in block.splitlines():
                if line.strip():
                    e = parse_entry(line)
                    if e is None:
                        malformed += 1
                    else:
                        entries.append(e)
        return count, entries, malformed

    def _select_by_scan(self, start: int, end: int,
                        limit: int) -> tuple[int, list[dict[str, Any]], int]:
        count, entries, malformed = 0, [], 0
        for part in self.parts:
            with open_to_read(part.path) as f:
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


def _total(counters: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for counter in counters:
        for name, n in counter.items():
            out[name] = out.get(name, 0) + n
    return out


def _disorder(live: list[Part], segmented: bool) -> str | None:
    """Why the log is not in time order (None when it is), naming the segment for a folder."""
    previous: Part | None = None
    for part in live:
        if not part.ordered:
            return f"entries inside {part.name} are out of time order" if segmented else ""
        if previous is not None and part.min < previous.max:
            return (f"{part.name} starts ({fmt_us(part.min)}) before {previous.name} ends "
                    f"({fmt_us(previous.max)})")
        previous = part
    return None


def _locate(f: BinaryIO, part: Part, us: int) -> tuple[int, int]:
    """(ordinal within the part, byte offset) of its first entry with a timestamp >= us."""
    pts_us, pts_off = part.idx["pts_us"], part.idx["pts_off"]
    j = bisect.bisect_left(pts_us, us)
    if j == 0:
        return 0, (pts_off[0] if pts_off else part.size)
    ordinal, off = (j - 1) * K, pts_off[j - 1]
    stop = pts_off[j] if j < len(pts_off) else part.size
    f.seek(off)
    for line in f.read(stop - off).splitlines(keepends=True):
        e = parse_entry(line) if line.strip() else None
        if e is not None:
            if e["us"] >= us:
                return ordinal, off
            ordinal += 1
        off += len(line)
    return ordinal, stop


def tail(path: Path, n: int, block: int = 1 << 16) -> tuple[list[dict[str, Any]], int, bool]:
    """The last ``n`` valid entries of one file in file order, reading backwards from its end.

    Returns (entries oldest first, malformed lines met on the way, whether the start was reached).
    """
    found: list[dict[str, Any]] = []
    malformed = 0
    with open_to_read(path) as f:
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


def log_tail(path: Path, n: int) -> tuple[list[dict[str, Any]], int, bool]:
    """``tail`` of a whole log, a file or a segmented folder (newest segments first)."""
    if not path.is_dir():
        return tail(path, n)
    found: list[dict[str, Any]] = []
    malformed = 0
    for seg in reversed(segments(path)[0]):
        got, bad, _ = tail(seg.path, n - len(found))
        found[:0] = got
        malformed += bad
        if len(found) == n:
            return found, malformed, False
    return found, malformed, True


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


def scan_note(log: Worklog) -> str:
    """The sentence that says an answer came from a full scan, and why."""
    why = f" ({log.disorder})" if log.disorder else ""
    return (f"This log's timestamps are out of order{why}, so the answer came from a full scan "
            "(correct, but slow on a big log).")


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
    notes = [] if log.ordered else [scan_note(log)]
    if count == 0:
        span = (f"The log runs from {fmt_us(log.earliest)} to {fmt_us(log.latest)} UTC."
                if log.count else "The log is empty.")
        notes.insert(0, span)
    bounds = f"<= {until}" if until else f"< {fmt_bound(end)}"
    header = (f"{count} entr{'y' if count == 1 else 'ies'} in {label.lower()}, "
              f"{fmt_bound(start)} <= ts {bounds} (times UTC):")
    return listing(header, entries, malformed, "\n".join(notes))


def page_listing(log: Worklog, start: int, end: int, skip: int, limit: int) -> str:
    """Entries skip+1 to skip+limit of the window start <= ts < end, in log order: a window too
    dense for a narrower time window, read by entry count. The window may hold at most PAGED
    entries (each page reads them all)."""
    count, entries, malformed = log.select(start, end, PAGED)
    label = f"The slice ({fmt_bound(start)} to {fmt_bound(end)})"
    if count > PAGED:
        raise too_many(label, count, PAGED, "Narrow the time window first: skip pages through "
                       f"a window of at most {PAGED:,} entries.")
    page = entries[skip:skip + limit]
    notes = [] if log.ordered else [scan_note(log)]
    if page:
        header = (f"Entries {skip + 1} to {skip + len(page)} of {count} in the slice, "
                  f"{fmt_bound(start)} <= ts < {fmt_bound(end)} (times UTC, in log order):")
    else:
        header = (f"0 of {count} entries in the slice after skip {skip}, {fmt_bound(start)} <= ts "
                  f"< {fmt_bound(end)}.")
    if skip + len(page) < count:
        notes.append(f"{count - skip - len(page)} more: skip {skip + len(page)} next.")
    return listing(header, page, malformed, "\n".join(notes))


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
