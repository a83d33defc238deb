"""The built-in constraint scripts, run as the runner runs them: real subprocesses, JSON on stdin,
cwd = a temporary workspace, a scrubbed environment and a cache folder outside the work tree.

Counts are checked against an independent oracle (a plain scan of the file in this test), so a
wrong binary search, a stale index or an off-by-one at a block boundary fails with a number.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conftest import REPO, SAMPLE

SCRIPTS = REPO / "constraints"
sys.path.insert(0, str(REPO / "benchmarks"))
import gen_worklog  # noqa: E402

LOG = "journal/worklog.jsonl"
BUILTINS = ["append_entry", "grep", "last_hours", "last_n", "peek", "range", "split_worklog", "stat",
            "today"]
MUTATING = {"append_entry", "split_worklog"}
READ_ONLY = [s for s in BUILTINS if s not in MUTATING]


# ---------------------------------------------------------------- harness

class Env:
    """A workspace folder plus the cache folder and environment its scripts run with."""

    def __init__(self, root: Path, cache: Path | None) -> None:
        self.root, self.cache = root, cache
        self.env: dict[str, str] = {}  # more variables for the scripts

    def run(self, script: str, args: dict | str, cache: bool = True) -> subprocess.CompletedProcess:
        env = {"PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"]),
               "LANG": "C.UTF-8", "HOME": str(self.root.parent / "home"), "TZ": "Asia/Tokyo",
               "GITSPACE_WORKSPACE": str(self.root)}
        if cache and self.cache is not None:
            env["GITSPACE_CACHE_DIR"] = str(self.cache)
        env.update(self.env)
        stdin = args if isinstance(args, str) else json.dumps(args)
        return subprocess.run([str(SCRIPTS / script)], input=stdin, capture_output=True,
                              text=True, cwd=self.root, env=env, timeout=60)

    def ok(self, script: str, args: dict, **kw: bool) -> str:
        r = self.run(script, args, **kw)
        assert r.returncode == 0, r.stderr
        assert len(r.stdout) < 13_500
        return r.stdout

    def write_log(self, lines: list[str], name: str = LOG) -> Path:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        return path


@pytest.fixture
def ws(tmp_path: Path) -> Env:
    root = tmp_path / "ws"
    shutil.copytree(SAMPLE, root)
    return Env(root, tmp_path / "cache")


def entry(ts: str, text: str = "did a thing", tags: list[str] | None = None) -> str:
    return json.dumps({"ts": ts, "text": text, "tags": tags or ["x"]})


def oracle(path: Path) -> list[tuple[datetime, dict]]:
    """Every valid entry with its aware timestamp, by brute force."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            e = json.loads(line)
            out.append((datetime.fromisoformat(e["ts"].replace("Z", "+00:00")), e))
        except (ValueError, KeyError, TypeError):
            continue
    return out


def utc(text: str) -> datetime:
    dt = datetime.fromisoformat(text)
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def count_in(path: Path, start: str, end: str) -> int:
    lo, hi = utc(start), utc(end)
    return sum(1 for ts, _ in oracle(path) if lo <= ts < hi)


def reported_count(r: subprocess.CompletedProcess) -> int:
    """The exact count a window answer or refusal states."""
    m = re.match(r"(\d+) entr", r.stdout) or re.search(r"holds ([\d,]+) entries", r.stderr)
    assert m, (r.stdout, r.stderr)
    return int(m.group(1).replace(",", ""))


def tree_state(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


# ---------------------------------------------------------------- headers

def parse_header(path: Path) -> dict[str, str]:
    """The contract's header rules, implemented independently of the scripts' own parser."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines[:5]) if line.endswith("---gitspace---"))
    leader = lines[start][: -len("---gitspace---")]
    fields: dict[str, str] = {}
    key = ""
    for line in lines[start + 1:]:
        assert line.startswith(leader), f"{path.name}: header line without the leader: {line!r}"
        body = line[len(leader):]
        if body == "---":
            return fields
        if body.startswith("  "):
            fields[key] += " " + body.strip()
            continue
        key, sep, value = body.partition(":")
        assert sep and key not in fields, f"{path.name}: bad header line {line!r}"
        fields[key] = value.strip()
    raise AssertionError(f"{path.name}: header never closed with ---")


ALLOWED = {"type", "properties", "required", "additionalProperties", "enum", "minimum",
           "maximum", "items", "description", "default"}


def check_schema(schema: dict) -> None:
    assert set(schema) <= ALLOWED, set(schema) - ALLOWED
    assert schema.get("type") in {"object", "string", "integer", "number", "boolean", "array"}
    assert schema.get("additionalProperties", False) is False
    for sub in schema.get("properties", {}).values():
        check_schema(sub)
    if "items" in schema:
        check_schema(schema["items"])


def conforms(value: object, schema: dict) -> bool:
    kinds = {"object": dict, "string": str, "integer": int, "number": (int, float),
             "boolean": bool, "array": list}
    if not isinstance(value, kinds[schema["type"]]):
        return False
    if "enum" in schema and value not in schema["enum"]:
        return False
    if isinstance(value, dict):
        props = schema.get("properties", {})
        return (all(k in value for k in schema.get("required", []))
                and all(k in props and conforms(v, props[k]) for k, v in value.items()))
    return True


def tool_files() -> list[Path]:
    folders = [SCRIPTS, SAMPLE / "constraints"]
    return [p for f in folders for p in sorted(f.iterdir())
            if not p.name.startswith(("_", ".")) and os.access(p, os.X_OK)]


def test_builtin_scripts_are_exactly_the_documented_set() -> None:
    assert sorted(p.name for p in tool_files() if p.parent == SCRIPTS) == BUILTINS


@pytest.mark.parametrize("path", tool_files(), ids=lambda p: p.name)
def test_header_parses_under_the_contract(path: Path) -> None:
    assert path.read_text().startswith("#!/usr/bin/env python3\n")
    assert path.stat().st_mode & 0o777 == 0o755
    h = parse_header(path)
    required = {"name", "description", "example", "mutates", "args"}
    assert required <= set(h) <= required | {"timeout"}
    assert re.fullmatch(r"[a-z][a-z0-9_]{0,63}", h["name"]) and h["name"] == path.stem
    assert h["mutates"] in {"true", "false"}
    assert len(h["description"]) > 80
    schema = json.loads(h["args"])
    assert schema["type"] == "object" and schema.get("additionalProperties") is False
    check_schema(schema)
    assert conforms(json.loads(h["example"]), schema)
    assert int(h.get("timeout", "10")) > 0
    assert (h["mutates"] == "true") == (path.name in MUTATING | {"move"})


def test_peek_description_says_call_it_first() -> None:
    assert "FIRST" in parse_header(SCRIPTS / "peek")["description"]
    assert "chunked processing" in parse_header(SCRIPTS / "range")["description"]


# ---------------------------------------------------------------- peek

def test_sample_journal_is_regenerated_byte_for_byte(tmp_path: Path) -> None:
    gen_worklog.write(tmp_path / "w.jsonl")
    assert (tmp_path / "w.jsonl").read_bytes() == (SAMPLE / LOG).read_bytes()


def test_peek_on_the_sample_gives_shape_and_no_entry(ws: Env) -> None:
    out = ws.ok("peek", {"path": LOG})
    assert out.startswith("journal/worklog.jsonl: JSON Lines worklog, 2,048 entries, 258.3 KiB.")
    assert "earliest: 2023-01-02T14:18 UTC" in out and "latest:   2024-12-30T18:23 UTC" in out
    assert "tags (21): infra 335, frontend 328, review 328," in out
    assert "projects (7): beacon 316," in out
    texts = {e["text"] for _, e in oracle(ws.root / LOG)}
    assert not [t for t in texts if t in out]
    assert all(len(line) < 400 for line in out.splitlines())


def test_peek_empty_and_malformed(ws: Env) -> None:
    ws.write_log([], "empty.jsonl")
    out = ws.ok("peek", {"path": "empty.jsonl"})
    assert "0 entries" in out and "earliest" not in out
    ws.write_log([entry("2024-01-01T10:00:00+00:00", "secret one"), "{not json", "",
                  '{"ts": "yesterday", "text": "bad ts", "tags": []}',
                  '{"ts": "2024-01-02T10:00:00+00:00", "text": "bad tags", "tags": "x"}',
                  '[1, 2]', entry("2024-01-03T10:00:00Z", "secret two", ["a", "b"])], "m.jsonl")
    out = ws.ok("peek", {"path": "m.jsonl"})
    assert "2 entries" in out and "4 malformed lines skipped." in out
    assert "tags (3): a 1, b 1, x 1" in out
    assert "secret" not in out and "bad" not in out and "yesterday" not in out


def test_peek_refuses_a_folder_and_a_missing_file(ws: Env) -> None:
    assert ws.run("peek", {"path": "journal"}).returncode == 2
    r = ws.run("peek", {"path": "journal/nope.jsonl"})
    assert r.returncode == 2 and "No such file" in r.stderr


# ---------------------------------------------------------------- range and friends

def test_range_one_week_matches_the_oracle(ws: Env) -> None:
    r = ws.run("range", {"path": LOG, "start": "2024-03-04", "end": "2024-03-11"})
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    assert lines[0].startswith("19 entries in the slice, 2024-03-04 <= ts < 2024-03-11")
    assert count_in(ws.root / LOG, "2024-03-04", "2024-03-11") == 19
    assert lines[1] == "2024-03-04T08:35 [meeting] Met Hana and Ana about rate limits"
    assert len(lines) == 20


def test_range_refusal_states_the_count_and_a_window_that_fits(ws: Env) -> None:
    r = ws.run("range", {"path": LOG, "start": "2024-01-01", "end": "2024-12-01"})
    assert r.returncode == 1 and r.stdout == ""
    assert "holds 954 entries, more than the limit of 100" in r.stderr
    assert count_in(ws.root / LOG, "2024-01-01", "2024-12-01") == 954
    start, end = re.search(r"e\.g\. start (\S+) end (\S+),", r.stderr).groups()
    assert (start, end) == ("2024-01-01", "2024-01-29")
    assert ws.run("range", {"path": LOG, "start": start, "end": end}).returncode == 0
    assert ws.run("range", {"path": LOG, "start": "2024-01-01", "end": "2024-12-01",
                            "limit": 200}).returncode == 1


def test_a_window_no_narrower_minute_fits_is_read_by_entry_count_exactly_once(ws: Env) -> None:
    burst = [entry("2024-05-06T09:30:00+00:00", f"alert {i}", ["incident"]) for i in range(230)]
    ws.write_log([entry("2024-05-06T09:00:00+00:00", "before"), *burst,
                  entry("2024-05-06T09:31:00+00:00", "after")], "journal/burst.jsonl")
    window = {"path": "journal/burst.jsonl", "start": "2024-05-06T09:30", "end": "2024-05-06T09:31"}
    r = ws.run("range", window)
    assert r.returncode == 1 and "holds 230 entries" in r.stderr
    assert "No narrower window of whole minutes" in r.stderr and "skip 0, then 100, 200" in r.stderr
    assert "e.g. start" not in r.stderr  # no time window to suggest: it would be the same one
    texts, skip = [], 0
    while True:
        out = ws.ok("range", {**window, "skip": skip})
        head = re.match(r"Entries (\d+) to (\d+) of 230 in the slice, 2024-05-06T09:30 <= ts < "
                        r"2024-05-06T09:31 ", out)
        assert head and int(head.group(1)) == skip + 1, out
        texts += re.findall(r"\] (alert \d+)$", out, re.M)
        skip = int(head.group(2))
        if skip == 230:
            assert "more: skip" not in out
            break
        assert f"{230 - skip} more: skip {skip} next." in out
    assert texts == [f"alert {i}" for i in range(230)]  # every entry once, in log order
    past = ws.ok("range", {**window, "skip": 230})
    assert past.startswith("0 of 230 entries in the slice after skip 230")
    wide = ws.run("range", {"path": LOG, "start": "2020-01-01", "end": "2030-01-01", "skip": 0})
    assert wide.returncode == 0  # the sample's 2,048 entries are within a pageable window


def test_peek_without_a_path_lists_the_workspaces_worklogs_largest_first(ws: Env) -> None:
    ws.write_log([entry("2024-05-06T09:00:00+00:00")] * 2, "notes/small.jsonl")
    ws.write_log(['{"not": "an entry"}'], "data/other.jsonl")
    segment = ws.root / "logs" / "team" / "0000" / "000001.jsonl"
    segment.parent.mkdir(parents=True)
    segment.write_text(entry("2024-05-06T09:00:00+00:00") + "\n")
    (ws.root / ".hidden").mkdir()
    (ws.root / ".hidden" / "x.jsonl").write_text(entry("2024-05-06T09:00:00+00:00") + "\n")
    (ws.root / "linked.jsonl").symlink_to(ws.root / LOG)
    out = ws.ok("peek", {})
    listed = re.findall(r"^- (\S+): (.*)$", out, re.M)
    assert [p for p, _ in listed] == [LOG, "notes/small.jsonl", "logs/team"]
    assert listed[2][1].startswith("segmented log folder") and "JSON Lines file" in listed[0][1]
    assert "Call peek again with one of them as path" in out


@pytest.mark.parametrize("args", [
    {"start": "2024-01-01", "end": "2024-01-02", "limit": 201},
    {"start": "2024-01-01", "end": "2024-01-02", "limit": 0},
    {"start": "March", "end": "2024-01-02"},
    {"start": "2024-01-02", "end": "2024-01-01"},
    {"start": "2024-01-01"},
    {"start": "2024-01-01", "end": "2024-01-02", "bogus": 1},
])
def test_range_bad_input_exits_2(ws: Env, args: dict) -> None:
    r = ws.run("range", {"path": LOG, **args})
    assert r.returncode == 2 and r.stderr.strip() and r.stdout == ""


def test_bad_json_on_stdin_exits_2(ws: Env) -> None:
    assert ws.run("peek", "{nope").returncode == 2
    assert ws.run("peek", "[1]").returncode == 2


def test_windows_on_a_huge_log_match_the_oracle(tmp_path: Path) -> None:
    """50,000 entries span ~200 sparse-index blocks; random windows cross block boundaries."""
    env = Env(tmp_path / "ws", tmp_path / "cache")
    (env.root / "journal").mkdir(parents=True)
    log = env.root / LOG
    assert gen_worklog.write(log, entries=50_000) == 50_000
    assert "50,000 entries" in env.ok("peek", {"path": LOG})
    stamps = [ts for ts, _ in oracle(log)]
    rng = random.Random(7)
    for _ in range(12):
        i = rng.randrange(len(stamps) - 400)
        lo, hi = stamps[i], stamps[i + rng.choice([0, 1, 37, 150, 256, 300])]
        if lo == hi:
            hi += timedelta(minutes=1)
        args = {"path": LOG, "start": lo.isoformat(), "end": hi.isoformat(), "limit": 200}
        want = sum(1 for ts in stamps if lo <= ts < hi)
        assert reported_count(env.run("range", args)) == want
    first, last = stamps[0], stamps[-1]
    before = {"path": LOG, "start": "2000-01-01", "end": first.isoformat()}
    assert env.ok("range", before).startswith("0 entries")
    after = {"path": LOG, "start": (last + timedelta(seconds=1)).isoformat(), "end": "9999-01-01"}
    assert env.ok("range", after).startswith("0 entries")
    every = env.run("range", {"path": LOG, "start": "2000-01-01", "end": "9999-01-01"})
    assert "holds 50,000 entries" in every.stderr
    tail = env.ok("last_n", {"path": LOG, "n": 200}).splitlines()
    assert tail[0].startswith("Last 200 entries") and len(tail) == 202
    assert tail[-2].startswith(last.strftime("%Y-%m-%dT%H:%M"))
    assert tail[-1].startswith("(lines cut at 60 characters")
    day = stamps[-1].strftime("%Y-%m-%d")
    today = env.ok("today", {"path": LOG, "date": day})
    assert reported_count(subprocess.CompletedProcess([], 0, today, "")) == sum(
        1 for ts in stamps if ts.strftime("%Y-%m-%d") == day)


def test_last_n_reads_the_tail_and_counts_malformed(ws: Env) -> None:
    ws.write_log([entry(f"2024-01-0{d}T10:00:00+00:00", f"day {d}") for d in range(1, 6)]
                 + ["garbage", ""], "t.jsonl")
    out = ws.ok("last_n", {"path": "t.jsonl", "n": 2}).splitlines()
    assert out == ["Last 2 entries of t.jsonl (oldest first, times UTC):",
                   "2024-01-04T10:00 [x] day 4", "2024-01-05T10:00 [x] day 5",
                   "1 malformed line skipped."]
    out = ws.ok("last_n", {"path": "t.jsonl", "n": 50}).splitlines()
    assert out[0].startswith("All 5 entries") and len(out) == 7
    assert ws.ok("last_n", {"path": LOG}).startswith("Last 20 entries")
    ws.write_log([], "e.jsonl")
    assert ws.ok("last_n", {"path": "e.jsonl"}).startswith("All 0 entries")
    assert ws.run("last_n", {"path": LOG, "n": 201}).returncode == 2


def test_last_hours_is_inclusive_of_now_and_refuses_with_hours_that_fit(ws: Env) -> None:
    now = "2024-12-30T16:15:00+00:00"  # exactly the second-to-last entry
    out = ws.ok("last_hours", {"path": LOG, "hours": 8, "now": now})
    assert out.startswith("4 entries in the last 8 hours, "
                          "2024-12-30T08:15 <= ts <= 2024-12-30T16:15 (times UTC):")
    assert count_in(ws.root / LOG, "2024-12-30T08:15:00+00:00", "2024-12-30T16:15:01+00:00") == 4
    r = ws.run("last_hours", {"path": LOG, "hours": 720, "now": now, "limit": 10})
    assert r.returncode == 1
    assert "(2024-11-30T16:15 to 2024-12-30T16:15) holds 81 entries" in r.stderr
    assert "e.g. hours 48," in r.stderr
    assert count_in(ws.root / LOG, "2024-11-30T16:15:00+00:00", "2024-12-30T16:15:01+00:00") == 81
    assert ws.run("last_hours", {"path": LOG, "hours": 0}).returncode == 2


def test_today_default_and_given_date(ws: Env) -> None:
    out = ws.ok("today", {"path": LOG, "date": "2024-03-05"})
    assert out.startswith("3 entries in the day 2024-03-05")
    assert ws.ok("today", {"path": LOG}).startswith("0 entries in the day ")
    assert "The log runs from 2023-01-02T14:18 to 2024-12-30T18:23 UTC." in ws.ok(
        "today", {"path": LOG, "date": "2030-01-01"})
    assert ws.run("today", {"path": LOG, "date": "2024-3-5"}).returncode == 2


def test_offsets_and_out_of_order_logs_are_still_exact(ws: Env) -> None:
    ws.write_log([entry("2024-01-01T10:00:00+02:00", "a"),   # 08:00 UTC
                  entry("2024-01-01T09:00:00+00:00", "b"),
                  entry("2024-01-01T08:30:00Z", "c"),        # out of order
                  entry("2024-01-01T12:00:00-03:00", "d")], "o.jsonl")  # 15:00 UTC
    assert "out of order" in ws.ok("peek", {"path": "o.jsonl"})
    out = ws.ok("range", {"path": "o.jsonl", "start": "2024-01-01T08:15:00+00:00",
                          "end": "2024-01-01T15:00:00+00:00"})
    assert out.splitlines()[:3] == [
        "2 entries in the slice, 2024-01-01T08:15 <= ts < 2024-01-01T15:00 (times UTC):",
        "2024-01-01T09:00 [x] b", "2024-01-01T08:30 [x] c"]
    assert "full scan" in out


def test_listing_output_is_bounded_by_construction(ws: Env) -> None:
    start = datetime(2024, 1, 1, tzinfo=UTC)
    ws.write_log([entry((start + timedelta(minutes=i)).isoformat(), "word " * 800, ["t"] * 1)
                  for i in range(200)], "long.jsonl")
    for limit in (1, 10, 200):
        r = ws.run("range", {"path": "long.jsonl", "start": "2024-01-01", "end": "2024-01-02",
                             "limit": limit})
        if limit < 200:
            assert r.returncode == 1
            continue
        assert r.returncode == 0 and len(r.stdout) < 13_000
        assert "lines cut at 60 characters" in r.stdout
    out = ws.ok("last_n", {"path": "long.jsonl", "n": 3})
    assert len(out.splitlines()[1]) == 400


# ---------------------------------------------------------------- the cache never goes stale

def test_cache_follows_appends_and_rewrites(ws: Env) -> None:
    log = ws.root / LOG
    assert "2,048 entries" in ws.ok("peek", {"path": LOG})
    caches = list(ws.cache.glob("worklog-*"))
    assert len(caches) == 1
    ws.ok("append_entry", {"path": LOG, "text": "late work", "tags": ["zzz"],
                           "ts": "2025-01-02T09:00:00+00:00"})
    with open(log, "a") as f:
        f.write(entry("2025-01-03T09:00:00+00:00", "by hand", ["zzz"]) + "\n")
    out = ws.ok("peek", {"path": LOG})
    assert "2,050 entries" in out and "zzz 2" in out and "latest:   2025-01-03T09:00" in out
    # Same size, same inode, mtime put back: only ctime tells, and it must be enough.
    st = log.stat()
    data = log.read_bytes()
    with open(log, "r+b") as f:
        f.write(data.replace(b'"review"', b'"design"', 1))
    os.utime(log, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert log.stat().st_size == st.st_size and log.stat().st_ino == st.st_ino
    out = ws.ok("peek", {"path": LOG})
    assert "review 327" in out and "design 77" in out
    # A new file (new inode) of the same size.
    tmp = ws.root / "journal" / "new"
    tmp.write_bytes(data)
    os.replace(tmp, log)
    assert "review 328" in ws.ok("peek", {"path": LOG})
    # Grown, but the bytes just before the old end changed too: the tail hash catches it.
    data = log.read_bytes()
    log.write_bytes(data[:-30] + data[-30:].replace(b"zzz", b"yyy")
                    + (entry("2025-01-04T09:00:00+00:00", "more", ["zzz"]) + "\n").encode())
    out = ws.ok("peek", {"path": LOG})
    assert "2,051 entries" in out and "zzz 2" in out and "yyy 1" in out
    # Shrunk.
    ws.write_log([entry("2024-01-01T00:00:00+00:00")])
    assert "1 entries" in ws.ok("peek", {"path": LOG})
    # A corrupt cache is rebuilt, not believed.
    caches[0].write_text("{broken")
    assert "1 entries" in ws.ok("peek", {"path": LOG})


def test_unterminated_last_line_is_counted_and_append_fixes_it(ws: Env) -> None:
    path = ws.root / "u.jsonl"
    path.write_text(entry("2024-01-01T10:00:00+00:00") + "\n" + entry("2024-01-02T10:00:00+00:00"))
    assert "2 entries" in ws.ok("peek", {"path": "u.jsonl"})
    before = path.read_bytes()
    ws.ok("append_entry", {"path": "u.jsonl", "text": "third", "ts": "2024-01-03T10:00:00Z"})
    assert path.read_bytes().startswith(before + b"\n")
    assert "3 entries" in ws.ok("peek", {"path": "u.jsonl"})
    assert ws.ok("range", {"path": "u.jsonl", "start": "2024-01-02",
                           "end": "2024-01-04"}).startswith("2 entries")


def test_without_cache_dir_answers_match_and_nothing_is_written(ws: Env) -> None:
    before = tree_state(ws.root)
    args = {"path": LOG, "start": "2024-03-04", "end": "2024-03-11"}
    assert ws.ok("range", args, cache=False) == ws.ok("range", args)
    assert ws.ok("peek", {"path": LOG}, cache=False) == ws.ok("peek", {"path": LOG})
    assert tree_state(ws.root) == before


def test_a_cache_dir_inside_the_work_tree_is_never_written(ws: Env) -> None:
    inside = Env(ws.root, ws.root / "cache")
    inside.ok("peek", {"path": LOG})
    assert not (ws.root / "cache").exists()


def test_read_only_scripts_never_touch_the_work_tree(ws: Env) -> None:
    before = tree_state(ws.root)
    calls = {"peek": {"path": LOG}, "range": {"path": LOG, "start": "2024-01", "end": "2024-02"},
             "last_n": {"path": LOG}, "last_hours": {"path": LOG, "hours": 5},
             "today": {"path": LOG}, "grep": {"pattern": "x"}, "stat": {"path": "."}}
    assert sorted(calls) == sorted(READ_ONLY)
    for script, args in calls.items():
        ws.run(script, args)
    assert tree_state(ws.root) == before


# ---------------------------------------------------------------- paths

@pytest.mark.parametrize("script", BUILTINS)
@pytest.mark.parametrize("bad", ["/etc/passwd", "../outside.jsonl", "journal/../../x.jsonl",
                                 "link/secret.jsonl", ".git/config", "C:/x.jsonl"])
def test_paths_outside_the_workspace_are_refused(ws: Env, script: str, bad: str) -> None:
    outside = ws.root.parent / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "secret.jsonl").write_text(entry("2024-01-01T00:00:00Z", "SECRET") + "\n")
    if not (ws.root / "link").exists():
        (ws.root / "link").symlink_to(outside)
    args = {"path": bad, "start": "2024-01-01", "end": "2024-01-02", "hours": 1, "text": "t",
            "pattern": "SECRET"}
    schema = json.loads(parse_header(SCRIPTS / script)["args"])
    r = ws.run(script, {k: v for k, v in args.items() if k in schema["properties"]})
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "SECRET" not in r.stdout and r.stderr.strip()
    assert (outside / "secret.jsonl").read_text().count("\n") == 1
    assert not (ws.root.parent / "outside.jsonl").exists()


# ---------------------------------------------------------------- append_entry

def test_append_entry_writes_one_normalised_line(ws: Env) -> None:
    path = ws.root / "new" / "log.jsonl"
    out = ws.ok("append_entry", {"path": "new/log.jsonl", "text": "  first  ", "tags": ["a-b"],
                                 "ts": "2024-03-05T10:00:00+01:00", "project": "atlas"})
    assert out.startswith("Appended to new/log.jsonl: 2024-03-05T09:00 [a-b] (atlas) first")
    assert path.read_text() == ('{"ts": "2024-03-05T09:00:00+00:00", "text": "first", '
                                '"tags": ["a-b"], "project": "atlas"}\n')
    ws.ok("append_entry", {"path": "new/log.jsonl", "text": "same instant",
                           "ts": "2024-03-05T09:00:00Z"})
    ws.ok("append_entry", {"path": "new/log.jsonl", "text": "now"})
    last = json.loads(path.read_text().splitlines()[-1])
    age = datetime.now(UTC) - datetime.fromisoformat(last["ts"])
    assert timedelta(0) <= age < timedelta(minutes=1) and last["tags"] == []


@pytest.mark.parametrize("args, message", [
    ({"text": "old", "ts": "2024-12-30T18:22:59+00:00"}, "older than the log's last entry"),
    ({"text": "   "}, "text is empty"),
    ({"text": "t", "tags": ["Backend"]}, "tags must be"),
    ({"text": "t", "tags": ["a", "a"]}, "tags must be"),
    ({"text": "t", "tags": [str(i) for i in range(11)]}, "tags must be"),
    ({"text": "t", "tags": [1]}, "must be of type string"),
    ({"text": "t", "ts": "soon"}, "ts must be"),
    ({"text": "t", "project": "bad\nname"}, "project must be"),
])
def test_append_entry_refusals_change_nothing(ws: Env, args: dict, message: str) -> None:
    before = (ws.root / LOG).read_bytes()
    r = ws.run("append_entry", {"path": LOG, **args})
    assert r.returncode == 2 and message in r.stderr
    assert (ws.root / LOG).read_bytes() == before


def test_append_entry_only_to_jsonl_files(ws: Env) -> None:
    r = ws.run("append_entry", {"path": "notes/ideas.md", "text": "t"})
    assert r.returncode == 2 and "not a .jsonl" in r.stderr
    assert ws.run("append_entry", {"path": "journal", "text": "t"}).returncode == 2


# ---------------------------------------------------------------- grep

def test_grep_is_bounded_and_says_how_many_more(ws: Env) -> None:
    big = ws.root / "notes" / "many.txt"
    big.write_text("".join(f"line {i} needle {'x' * (i % 3) * 500}\n" for i in range(500)))
    out = ws.ok("grep", {"pattern": "needle", "path": "notes", "max_matches": 30}).splitlines()
    assert out[0] == "500 matching lines in 1 file under notes:"
    assert out[1] == "notes/many.txt:1: line 0 needle"
    assert len(out) == 32 and out[-1].startswith("... and 470 more matching lines not shown")
    assert max(len(line) for line in out[1:31]) == 400
    r = ws.run("grep", {"pattern": "needle", "max_matches": 100})
    assert r.returncode == 0 and len(r.stdout) < 13_000 and len(r.stdout.splitlines()) == 102
    assert "500 matching lines in 1 file under .:" in r.stdout


def test_grep_skips_git_hidden_binary_and_huge_files(ws: Env) -> None:
    for rel in (".git/HEAD", ".hidden/a.txt", "notes/.secret"):
        (ws.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws.root / rel).write_text("needle\n")
    (ws.root / "bin.dat").write_bytes(b"needle\0\1\2")
    (ws.root / "huge.txt").write_bytes(b"needle\n" * ((5 << 20) // 7))
    (ws.root / "notes" / "hit.md").write_text("a\nthe Needle\n")
    out = ws.ok("grep", {"pattern": "needle", "ignore_case": True}).splitlines()
    assert out[0] == "1 matching line in 1 file under .:"
    assert out[1] == "notes/hit.md:2: the Needle"
    assert out[2].startswith("Skipped 1 file(s) over 4 MiB: huge.txt (")
    none = ws.ok("grep", {"pattern": "needle", "path": "journal"})
    assert none == "No matches for /needle/ in journal (1 files searched).\n"
    r = ws.run("grep", {"pattern": "("})
    assert r.returncode == 2 and "not a valid regular expression" in r.stderr


# ---------------------------------------------------------------- stat

def test_pipes_are_never_opened(ws: Env) -> None:
    os.mkfifo(ws.root / "notes" / "pipe.jsonl")
    assert ws.ok("grep", {"pattern": "zzz"}).startswith("No matches")
    assert "special file" in ws.ok("stat", {"path": "notes/pipe.jsonl"})
    for script in ("peek", "last_n", "append_entry"):
        assert ws.run(script, {"path": "notes/pipe.jsonl", "text": "t"} if script == "append_entry"
                      else {"path": "notes/pipe.jsonl"}).returncode == 2


def test_stat_files_and_folders(ws: Env) -> None:
    (ws.root / "notes" / "empty.txt").write_text("")
    assert ws.ok("stat", {"path": LOG}) == (
        "journal/worklog.jsonl: file, 258.3 KiB, 2,048 lines, JSON Lines worklog (use peek for "
        "its count and time range, range to read it).\n")
    assert ws.ok("stat", {"path": "notes/empty.txt"}) == (
        "notes/empty.txt: file, 0 bytes, 0 lines, text.\n")
    assert ws.ok("stat", {"path": "maze/maze.bin"}).endswith(", binary.\n")
    out = ws.ok("stat", {"path": "."}).splitlines()
    files = [p for p in ws.root.rglob("*") if p.is_file()]
    assert out[0].startswith(f"./: folder, {len(files)} files in 5 subfolders, ")
    assert [line.split()[0] for line in out[1:]] == [
        "constraints/", "journal/", "maze/", "memories/", "notes/", "README.md"]
    assert ws.ok("stat", {"path": "notes"}).startswith("notes/: folder, 2 files in 0 subfolders")
