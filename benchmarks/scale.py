"""Benchmark: a workspace that lives for years, measured the way users reach it, in one run.

Everything goes through ``ws.call`` (the library's front door: the registry, the script runner,
the op transaction) and through the CLI (``python -m gitspace ...``, a fresh process per call).

Worklog, at 10,000 and 1,000,000 entries (``--entries``), in one workspace per size holding the
log twice: ``journal/worklog.jsonl``, one git-ignored file, and ``journal/log/``, the segmented
log ``split_worklog`` makes of it (one op, timed). For each form: the median warm ``peek``,
``range`` (one day) and ``last_n`` (20) through ``ws.call`` and through ``gitspace call``; the
peak RSS of the process that answered (a worker process per case, so its children's maximum is
that script's); and ``append_entry``'s op latency and the bytes each append adds to ``.git``
(background packing off while counting; for the segmented log, counted from the start of a new
segment at both sizes, since an append adds the newest segment's blob, which grows with the
segment and not with the log). Targets: each read under 100 ms at 1M entries through
``ws.call`` and within 1.3x of 10k, peak RSS under 100 MB, append latency and bytes flat from
10k to 1M.

History, at 1,000, 10,000 and 100,000 ops (``--ops``) of one workspace, made through ``ws.call``
(create, str_replace and append over 10 files, like benchmarks/replay.py; 10 checkpoints and 30
files kept for ``undo --op`` in the first 1,000 ops; background packing on): the make rate, op
latency p50/p99 with and without a repack running, ``.git`` against its ``git gc`` size at each
milestone; then, with the workspace copied at each milestone and the copies measured in interleaved
rounds: median ``undo``, ``redo`` and ``undo --op`` (an op from the first 1,000) through
``ws.call`` and the CLI, ``log -n 20``, ``status`` and ``checkpoints`` through the CLI and the
library calls behind them, ``show`` of an op by the 8 characters ``log`` prints, and replay's ops/s
(wall clock, and per CPU second of the process and its children). Targets: within 1.3x from 1k to
100k; replay 300 ops/s or more; ``.git`` within 2x of its gc'd size.

Ratios are against the same run's baseline (10k entries; 1k ops), measured interleaved so a burst
of load from other processes hits both: compare ratios, then absolute numbers (the load average
is printed). No asserts: this is a report; a missed target prints FAIL.

Hermetic: HOME and XDG_CONFIG_HOME in a temporary folder, GIT_CONFIG_NOSYSTEM=1, other GIT_*
variables dropped; everything lives under one temporary folder removed at exit.

    .venv/bin/python benchmarks/scale.py                       # the full run (long: 100k ops)
    .venv/bin/python benchmarks/scale.py --quick               # 10k/100k entries, 300/1k/3k ops
    .venv/bin/python benchmarks/scale.py --only worklog        # or: --only history
    .venv/bin/python benchmarks/scale.py --json                # JSON on stdout
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import hermetic, log  # noqa: E402
from gen_worklog import generate  # noqa: E402

FILE = "journal/worklog.jsonl"
FOLDER = "journal/log"
FORMS = {"file": FILE, "segmented": FOLDER}
READS = ("peek", "range", "last_n")
FILES = 10
KEEP = 30  # files made early, each never touched again: conflict-free targets for undo --op
CHECKPOINTS = 10


# ---------------------------------------------------------------------------------- helpers

def cli(root: Path, *args: str) -> float:
    """Seconds one ``gitspace`` CLI process took (it must succeed)."""
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "gitspace", "-C", str(root), *args],
                          capture_output=True, text=True)
    took = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"gitspace {' '.join(args)} failed: {proc.stderr.strip()[:500]}")
    return took


def timed(fn: Callable[[], Any]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def ok(result: Any) -> Any:
    if not result.ok:
        raise SystemExit(f"{result.tool} failed: {result.text[:500]}")
    return result


def dot_git_bytes(root: Path) -> int:
    total = 0
    for folder, _, names in os.walk(root / ".git"):
        if "/gitspace/cache" in folder:
            continue  # the worklog index and bytecode: a cache, not history
        for name in names:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except FileNotFoundError:
                pass  # a repack removed it meanwhile
    return total


def gc_bytes(root: Path, scratch: Path) -> int:
    """The size of a copy of ``root``'s .git after ``git gc``."""
    copy = scratch / "gc-copy"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(root / ".git", copy / ".git", ignore=shutil.ignore_patterns("cache"))
    subprocess.run(["git", "-C", str(copy), "gc", "-q"], check=True)
    size = dot_git_bytes(copy)
    shutil.rmtree(copy, ignore_errors=True)
    return size


def median_ms(values: list[float]) -> float:
    return round(statistics.median(values) * 1e3, 2) if values else float("nan")


def percentile_ms(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * q / 100))] * 1e3, 2)


def cpu_seconds() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def verdict(passed: bool) -> str:
    return "pass" if passed else "FAIL"


# ---------------------------------------------------------------------------------- worklog

def make_worklog_workspace(root: Path, entries: int) -> dict[str, Any]:
    """A workspace with the log as an ignored file and, split by ``split_worklog``, in segments."""
    import gitspace

    (root / "journal").mkdir(parents=True)
    (root / ".gitignore").write_text(f".gitspace/\n{FILE}\n")
    started = time.perf_counter()
    days = []
    with open(root / FILE, "w", encoding="utf-8") as out:
        for n, entry in enumerate(generate(entries)):
            out.write(json.dumps(entry, separators=(", ", ": ")) + "\n")
            if n in (entries // 3, entries // 2):
                days.append(entry["ts"][:10])
    last = entry["ts"]
    log(f"  {entries:,} entries generated ({(root / FILE).stat().st_size / 2**20:.1f} MiB) in "
        f"{time.perf_counter() - started:.1f} s")
    gitspace.init(root, agent="bench").close()
    with gitspace.open(root, agent="bench") as ws:
        started = time.perf_counter()
        done = ok(ws.call("split_worklog", {"path": FILE, "into": FOLDER}))
        split = time.perf_counter() - started
    segments = len(done.changed)
    log(f"  split_worklog: one op, {segments:,} segments, {split:.1f} s")
    return {"day": days[-1], "last": last, "split_seconds": round(split, 2),
            "segments": segments}


def read_args(tool: str, path: str, day: str) -> dict[str, Any]:
    if tool == "range":
        following = (date.fromisoformat(day) + timedelta(days=1)).isoformat()
        return {"path": path, "start": day, "end": following}
    if tool == "last_n":
        return {"path": path, "n": 20}
    return {"path": path}


def worker(spec: dict[str, Any]) -> dict[str, Any]:
    """Runs in its own process: ``runs`` timed calls of one tool through ws.call."""
    import gitspace

    times, added, calls = [], [], 0
    with gitspace.open(spec["root"], agent="bench") as ws:
        if spec["tool"] == "append_entry":
            last = datetime.fromisoformat(spec["args"]["after"])
            if spec.get("fresh_segment"):
                last = start_a_segment(ws, spec["args"]["path"], last)
            for i in range(spec["runs"]):
                before = dot_git_bytes(ws.root)
                when = (last + timedelta(minutes=i + 1)).isoformat()  # the log runs into the future
                args = {"path": spec["args"]["path"], "text": f"benchmark append {i}",
                        "tags": ["bench"], "ts": when}
                times.append(timed(lambda: ok(ws.call("append_entry", args))))  # noqa: B023
                added.append(dot_git_bytes(ws.root) - before)
        else:
            # Warm: imports, the page cache, and the index (a first read of a huge log is built
            # over several calls, each saying how far it got).
            while True:
                calls += 1
                first = ws.call(spec["tool"], spec["args"])
                if first.ok or "being indexed" not in first.text or calls == 50:
                    ok(first)
                    break
            for _ in range(spec["runs"]):
                times.append(timed(lambda: ok(ws.call(spec["tool"], spec["args"]))))
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB on Linux
    return {"times": times, "added": added, "peak_kib": peak, "warm_calls": calls}


def start_a_segment(ws: Any, path: str, last: datetime) -> datetime:
    """Append long entries through ws.call until append_entry starts a new segment, so appends
    are counted from the same point of a segment's life at every size: what one adds to .git is
    the newest segment's blob, which grows from nothing to ROLL_BYTES and starts again, whatever
    the log's total."""
    folder = ws.root / path

    def segments() -> int:
        return sum(len(files) for _, _, files in os.walk(folder))

    before = segments()
    for _ in range(200):
        last += timedelta(seconds=1)
        ok(ws.call("append_entry", {"path": path, "text": "x" * 3900, "ts": last.isoformat()}))
        if segments() > before:
            return last
    raise SystemExit(f"append_entry never started a new segment in {path} after 200 entries")


def run_worker(spec: dict[str, Any], **env: str) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, __file__, "--worker", json.dumps(spec)],
                          capture_output=True, text=True, env={**os.environ, **env})
    if proc.returncode != 0:
        raise SystemExit(f"worker {spec['tool']} failed: {proc.stderr.strip()[-1500:]}")
    return dict(json.loads(proc.stdout))


def bench_worklog(base: Path, sizes: list[int], rounds: int, runs: int) -> dict[str, Any]:
    roots, setup = {}, {}
    for entries in sizes:
        log(f"worklog: {entries:,} entries")
        roots[entries] = base / f"worklog-{entries}"
        setup[entries] = make_worklog_workspace(roots[entries], entries)
        for form, path in FORMS.items():  # the cold calls build the index (the one full read)
            spec = {"root": str(roots[entries]), "tool": "peek", "args": {"path": path},
                    "runs": 0}
            started = time.perf_counter()
            calls = run_worker(spec)["warm_calls"]
            took = time.perf_counter() - started
            setup[entries][f"cold_{form}"] = {"seconds": round(took, 2), "calls": calls}
            log(f"  cold peek ({form}): {took:.2f} s in {calls} call(s), worker process "
                "included")
    samples: dict[tuple[int, str, str], list[float]] = {}
    peaks: dict[tuple[int, str, str], int] = {}
    cli_samples: dict[tuple[int, str, str], list[float]] = {}
    for r in range(rounds):
        log(f"  round {r + 1} of {rounds}")
        for form, path in FORMS.items():
            for tool in READS:
                for entries in sizes if r % 2 == 0 else sizes[::-1]:
                    args = read_args(tool, path, setup[entries]["day"])
                    got = run_worker({"root": str(roots[entries]), "tool": tool, "args": args,
                                      "runs": runs})
                    key = (entries, form, tool)
                    samples.setdefault(key, []).extend(got["times"])
                    peaks[key] = max(peaks.get(key, 0), got["peak_kib"])
                    cli_samples.setdefault(key, []).append(
                        cli(roots[entries], "call", tool, "--args", json.dumps(args)))
    appends: dict[tuple[int, str], dict[str, Any]] = {}
    for form, path in FORMS.items():
        for entries in sizes:
            got = run_worker({"root": str(roots[entries]), "tool": "append_entry",
                              "args": {"path": path, "after": setup[entries]["last"]},
                              "runs": max(runs * rounds, 10), "fresh_segment": form != "file"},
                             GITSPACE_PACK_THRESHOLD="0")
            appends[(entries, form)] = {"median_ms": median_ms(got["times"]),
                                        "bytes": statistics.median(got["added"])}
    return {"sizes": sizes, "setup": setup, "reads": {
        f"{e}/{f}/{t}": {"median_ms": median_ms(v), "cli_median_ms": median_ms(cli_samples[k]),
                         "peak_mib": round(peaks[k] / 1024, 1), "samples": len(v)}
        for k, v in samples.items() for e, f, t in [k]},
        "appends": {f"{e}/{f}": v for (e, f), v in appends.items()}}


def print_worklog(w: dict[str, Any]) -> None:
    small, big = w["sizes"][0], w["sizes"][-1]
    print(f"\nWorklog through ws.call and the CLI: {small:,} entries (baseline) vs {big:,}")
    for e in w["sizes"]:
        s = w["setup"][e]
        print(f"  {e:>9,} entries: split_worklog made {s['segments']:,} segments in one op, "
              f"{s['split_seconds']} s; the first peek built the index in "
              + ", ".join(f"{s[f'cold_{f}']['seconds']} s ({s[f'cold_{f}']['calls']} calls, {f})"
                          for f in FORMS))
    print(f"  {'form / tool':<22}{'10k ms':>9}{'1M ms':>9}{'ratio':>7}  {'<100ms':<6}{'<=1.3x':<8}"
          f"{'CLI 10k':>9}{'CLI 1M':>9}{'peak MiB':>9}  <100MB")
    for form in FORMS:
        for tool in READS:
            a, b = w["reads"][f"{small}/{form}/{tool}"], w["reads"][f"{big}/{form}/{tool}"]
            ratio = b["median_ms"] / a["median_ms"]
            peak = max(a["peak_mib"], b["peak_mib"])
            print(f"  {form + ' ' + tool:<22}{a['median_ms']:>9.1f}{b['median_ms']:>9.1f}"
                  f"{ratio:>7.2f}  {verdict(b['median_ms'] < 100):<6}{verdict(ratio <= 1.3):<8}"
                  f"{a['cli_median_ms']:>9.0f}{b['cli_median_ms']:>9.0f}{peak:>9.1f}  "
                  f"{verdict(peak < 100)}")
    print(f"  {'append_entry':<22}{'10k ms':>9}{'1M ms':>9}{'ratio':>7}  "
          f"{'bytes 10k':>10}{'bytes 1M':>10}{'ratio':>7}")
    for form in FORMS:
        a, b = w["appends"][f"{small}/{form}"], w["appends"][f"{big}/{form}"]
        bytes_ratio = b["bytes"] / a["bytes"] if a["bytes"] else float("nan")
        print(f"  {form:<22}{a['median_ms']:>9.1f}{b['median_ms']:>9.1f}"
              f"{b['median_ms'] / a['median_ms']:>7.2f}  {a['bytes']:>10,.0f}{b['bytes']:>10,.0f}"
              f"{bytes_ratio:>7.2f}" + ("  (an ignored file: no op, nothing recorded)"
                                        if form == "file" else ""))


# ---------------------------------------------------------------------------------- history

class History:
    """Makes ops through ws.call the way an agent would, and keeps the facts about them."""

    def __init__(self, root: Path) -> None:
        import gitspace

        root.mkdir()
        for i in range(FILES):
            (root / f"f{i}.md").write_text(f"# file {i}\nstart\n")
        gitspace.init(root, agent="bench").close()
        self.root = root
        self.ws = gitspace.open(root, agent="bench", session="bench-session")
        self.token = ["start"] * FILES  # the line of each file str_replace replaces next
        self.made = 0
        self.seconds = 0.0
        self.latency: list[float] = []
        self.latency_packing: list[float] = []
        self.latency_starting: list[float] = []  # the ops that started a repack
        self.keep: list[tuple[int, str]] = []  # (when, op id) of the files undo --op reverts

    def step(self) -> None:
        n = self.made
        if n < 1000 and n % (1000 // CHECKPOINTS) == 50:
            tool, args = "checkpoint", {"name": f"cp-{n}"}
        elif n < 1000 and n % (1000 // KEEP) == 7 and len(self.keep) < KEEP:
            tool, args = "create", {"path": f"keep/k{len(self.keep)}.md", "file_text": f"{n}\n"}
        else:
            i, kind = n % FILES, (n // FILES) % 3
            rel = f"f{i}.md"
            if kind == 0:
                tool, args = "create", {"path": rel, "file_text": f"# file {i}\nv{n}\n"}
                self.token[i] = f"v{n}"
            elif kind == 1:
                tool, args = "str_replace", {"path": rel, "old_str": f"{self.token[i]}\n",
                                             "new_str": f"v{n}\n"}
                self.token[i] = f"v{n}"
            else:
                tool, args = "append", {"path": rel, "text": f"note {n}\n"}
        packing = self.ws.repo.packing()
        started = time.perf_counter()
        result = ok(self.ws.call(tool, args, tool_use_id=f"toolu_{n}"))
        took = time.perf_counter() - started
        self.seconds += took
        (self.latency_packing if packing else self.latency).append(took)
        if not packing and self.ws.repo.packing():
            self.latency_starting.append(took)
        if args.get("path", "").startswith("keep/"):
            self.keep.append((n, result.op))
        self.made += 1


def replay_rate(root: Path) -> dict[str, Any]:
    import gitspace
    from gitspace.replay.engine import replay

    with gitspace.open(root) as ws:
        cpu, started = cpu_seconds(), time.perf_counter()
        report = replay(ws, ws.tip())
        wall, cpu = time.perf_counter() - started, cpu_seconds() - cpu
    n = report.reexecuted
    return {"ops": n, "ok": report.ok, "seconds": round(wall, 2),
            "ops_per_second": round(n / wall, 1), "ops_per_cpu_second": round(n / cpu, 1)}


def bench_history(base: Path, milestones: list[int], rounds: int) -> dict[str, Any]:
    import gitspace
    from gitspace.core import checkpoints, timeline
    from gitspace.core.snapshot import pending_changes

    h = History(base / "history")
    sizes: dict[int, dict[str, Any]] = {}
    copies: dict[int, Path] = {}
    for milestone in milestones:
        log(f"history: making ops up to {milestone:,}")
        while h.made < milestone:
            h.step()
            if h.made % 5000 == 0:
                log(f"  {h.made:,} ops, {h.made / h.seconds:.0f} ops/s")
        size_now = dot_git_bytes(h.root)
        h.ws.repo.wait_for_packing()
        size_packed = dot_git_bytes(h.root)
        gc = gc_bytes(h.root, base)
        sizes[milestone] = {"at_milestone": size_now, "after_packing": size_packed, "gc": gc,
                            "ratio": round(size_now / gc, 2),
                            "ratio_after_packing": round(size_packed / gc, 2)}
        log(f"  .git {size_now / 2**20:.1f} MiB ({size_packed / 2**20:.1f} MiB once packing "
            f"finished), git gc {gc / 2**20:.1f} MiB")
        copies[milestone] = base / f"history-{milestone}"
        shutil.copytree(h.root, copies[milestone], symlinks=True)
    make = {"ops": h.made, "ops_per_second": round(h.made / h.seconds, 1),
            "p50_ms": median_ms(h.latency), "p99_ms": percentile_ms(h.latency, 99),
            "during_repack": len(h.latency_packing),
            "p50_ms_repack": median_ms(h.latency_packing),
            "p99_ms_repack": percentile_ms(h.latency_packing, 99),
            "max_ms_repack": percentile_ms(h.latency_packing, 100),
            "repacks_started": len(h.latency_starting),
            "p50_ms_starting": median_ms(h.latency_starting),
            "max_ms_starting": percentile_ms(h.latency_starting, 100)}
    keep = [op for when, op in h.keep if when < milestones[0]]  # on every copy
    h.ws.close()
    shutil.rmtree(h.root)

    log("history: measuring the copies in interleaved rounds")
    spaces = {m: gitspace.open(copies[m], agent="bench") for m in milestones}
    t: dict[tuple[int, str], list[float]] = {}

    def add(m: int, what: str, seconds: float) -> None:
        t.setdefault((m, what), []).append(seconds)

    try:
        for r in range(rounds):
            log(f"  round {r + 1} of {rounds}")
            order = milestones if r % 2 == 0 else milestones[::-1]
            for m in order:
                ws, root = spaces[m], copies[m]
                add(m, "undo", timed(lambda: ok(ws.call("undo", {}))))  # noqa: B023
                add(m, "redo", timed(lambda: ok(ws.call("redo", {}))))  # noqa: B023
                target = keep[r % len(keep)]
                add(m, "undo --op", timed(lambda: ok(ws.call("undo", {"op": target}))))  # noqa: B023
                ok(ws.call("redo", {}))
                add(m, "log -n 20 (library)", timed(lambda: timeline.timeline(ws, 20)))  # noqa: B023
                add(m, "status (library)", timed(lambda: pending_changes(ws)))  # noqa: B023
                add(m, "checkpoints (library)", timed(lambda: checkpoints.listing(ws)))  # noqa: B023
            for m in order:
                root = copies[m]
                add(m, "undo (CLI)", cli(root, "undo"))
                add(m, "redo (CLI)", cli(root, "redo"))
                add(m, "log -n 20 (CLI)", cli(root, "log", "-n", "20"))
                add(m, "status (CLI)", cli(root, "status"))
                add(m, "checkpoints (CLI)", cli(root, "checkpoints"))
                add(m, "show PART (CLI)", cli(root, "show", keep[r % len(keep)][-8:]))
    finally:
        for ws in spaces.values():
            ws.close()
    replays = {}
    for m in milestones:
        log(f"history: replaying {m:,} ops")
        replays[m] = replay_rate(copies[m])
        log(f"  {replays[m]['ops_per_second']} ops/s ({replays[m]['ops_per_cpu_second']} per CPU "
            f"second), {'every op matched' if replays[m]['ok'] else 'DIVERGED'}")
    ops = sorted({what for _, what in t})
    return {"milestones": milestones, "make": make, "sizes": sizes, "replay": replays,
            "ops": {what: {str(m): median_ms(t[(m, what)]) for m in milestones} for what in ops}}


def print_history(hist: dict[str, Any]) -> None:
    ms = hist["milestones"]
    first, last = ms[0], ms[-1]
    mk = hist["make"]
    print(f"\nHistory through ws.call and the CLI: {first:,} ops (baseline) to {last:,}")
    print(f"  made {mk['ops']:,} ops at {mk['ops_per_second']} ops/s; op latency p50 "
          f"{mk['p50_ms']} ms, p99 {mk['p99_ms']} ms; while a repack ran ({mk['during_repack']:,}"
          f" ops): p50 {mk['p50_ms_repack']} ms, p99 {mk['p99_ms_repack']} ms, max "
          f"{mk['max_ms_repack']} ms; the {mk['repacks_started']} ops that started a repack: p50 "
          f"{mk['p50_ms_starting']} ms, max {mk['max_ms_starting']} ms")
    head = "".join(f"{m:>10,}" for m in ms)
    print(f"  {'median ms':<24}{head}{'ratio':>8}  <=1.3x")
    for what, by in hist["ops"].items():
        ratio = by[str(last)] / by[str(first)]
        print(f"  {what:<24}" + "".join(f"{by[str(m)]:>10.1f}" for m in ms)
              + f"{ratio:>8.2f}  {verdict(ratio <= 1.3)}")
    print(f"  {'replay ops/s (wall)':<24}"
          + "".join(f"{hist['replay'][m]['ops_per_second']:>10.0f}" for m in ms)
          + f"{'':>8}  {verdict(all(hist['replay'][m]['ops_per_second'] >= 300 for m in ms))}"
          + " (>= 300)")
    print(f"  {'replay ops/CPU second':<24}"
          + "".join(f"{hist['replay'][m]['ops_per_cpu_second']:>10.0f}" for m in ms))
    print(f"  {'replay verdict':<24}"
          + "".join(f"{'match' if hist['replay'][m]['ok'] else 'DIVERGED':>10}" for m in ms))
    print(f"  {'.git MiB':<24}" + "".join(f"{hist['sizes'][m]['at_milestone'] / 2**20:>10.1f}"
                                          for m in ms))
    print(f"  {'git gc MiB':<24}" + "".join(f"{hist['sizes'][m]['gc'] / 2**20:>10.1f}" for m in ms))
    print(f"  {'.git / gc':<24}" + "".join(f"{hist['sizes'][m]['ratio']:>10.2f}" for m in ms)
          + f"{'':>8}  {verdict(all(hist['sizes'][m]['ratio'] <= 2 for m in ms))} (<= 2x)")
    print(f"  {'.git / gc, packed':<24}"
          + "".join(f"{hist['sizes'][m]['ratio_after_packing']:>10.2f}" for m in ms))


# ---------------------------------------------------------------------------------- main

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--entries", default="10000,1000000")
    parser.add_argument("--ops", default="1000,10000,100000")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--runs", type=int, default=3, help="calls per worker process")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", choices=("worklog", "history"))
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    if options.worker:
        print(json.dumps(worker(json.loads(options.worker))))
        return
    if options.quick:
        options.entries, options.ops, options.rounds = "10000,100000", "300,1000,3000", 3
    base = Path(tempfile.mkdtemp(prefix="gitspace-bench-scale-"))
    result: dict[str, Any] = {"load_average_start": os.getloadavg()}
    try:
        hermetic(base)
        if options.only != "history":
            sizes = [int(x) for x in options.entries.split(",")]
            result["worklog"] = bench_worklog(base, sizes, options.rounds, options.runs)
        if options.only != "worklog":
            milestones = [int(x) for x in options.ops.split(",")]
            result["history"] = bench_history(base, milestones, options.rounds)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    result["load_average_end"] = os.getloadavg()
    if options.json:
        print(json.dumps(result, indent=2))
        return
    print(f"load average at start {result['load_average_start'][0]:.1f}, at end "
          f"{result['load_average_end'][0]:.1f} ({os.cpu_count()} cores)")
    if "worklog" in result:
        print_worklog(result["worklog"])
    if "history" in result:
        print_history(result["history"])


if __name__ == "__main__":
    main()
