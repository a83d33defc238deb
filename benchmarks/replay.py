"""Benchmark: how fast `gitspace replay` re-runs and checks ops, against how fast they were made.

A fresh 10-file workspace gets N ops (default 10,000) through ``ws.call``, the way an agent makes
them: a rotating mix of create, str_replace and append on 10 small files, so every op rewrites one
file and each str_replace depends on the ops before it. The time that takes is the baseline. Then
``gitspace.replay.engine.replay`` re-runs every op in a scratch workspace and compares each tree with the
recorded one; its wall time includes setting up the scratch repository and removing it (its loose
objects) afterwards. Printed: ops per second made, ops per second replayed and verified, and the
ratio (replay rate / make rate; above 1 means replay is faster than the original run). No asserts:
the machines are shared and noisy, so compare the ratio, not the absolute numbers.

Background packing is off (GITSPACE_PACK_THRESHOLD=0) in both phases: a repack running on two
shared cores would slow whichever phase it happened to land in and skew the ratio.

Hermetic: HOME and XDG_CONFIG_HOME point into a temporary folder, GIT_CONFIG_NOSYSTEM=1, other
GIT_* variables are dropped; everything lives under one temporary folder removed at exit.

    .venv/bin/python benchmarks/replay.py              # 10,000 ops
    .venv/bin/python benchmarks/replay.py --ops 1000   # quicker
    .venv/bin/python benchmarks/replay.py --json       # JSON on stdout
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import hermetic, log  # noqa: E402

FILES = 10



def make_ops(root: Path, count: int) -> float:
    """Make ``count`` ops on a fresh workspace at ``root``; returns the seconds they took."""
    import gitspace

    root.mkdir()
    for i in range(FILES):
        (root / f"f{i}.md").write_text(f"# file {i}\nstart\n")
    gitspace.init(root, agent="bench").close()
    version = [0] * FILES
    with gitspace.open(root, agent="bench", session="bench-session") as ws:
        started = time.perf_counter()
        for n in range(count):
            i, kind = n % FILES, (n // FILES) % 3
            rel = f"f{i}.md"
            if kind == 0:
                args = {"path": rel, "file_text": f"# file {i}\nv{n}\n"}
                tool, version[i] = "create", n
            elif kind == 1:
                args = {"path": rel, "old_str": f"v{version[i]}\n", "new_str": f"v{n}\n"}
                tool, version[i] = "str_replace", n
            else:
                args = {"path": rel, "text": f"note {n}\n"}
                tool = "append"
            result = ws.call(tool, args, tool_use_id=f"toolu_{n}")
            if not result.ok or result.unchanged:
                raise SystemExit(f"op {n} ({tool} {args}) did not change anything: {result.text}")
            if n % 1000 == 999:
                log(f"  made {n + 1:,} ops")
        return time.perf_counter() - started


def replay_ops(root: Path) -> tuple[float, object]:
    import gitspace
    from gitspace.replay.engine import replay

    with gitspace.open(root) as ws:
        tip = ws.tip()
        marks = [0]

        def progress(done: int, total: int) -> None:
            if done >= marks[0] + 1000 or done == total:
                marks[0] = done
                log(f"  replayed {done:,} of {total:,}")

        started = time.perf_counter()
        report = replay(ws, tip, progress=progress)
        return time.perf_counter() - started, report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", type=int, default=10_000)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="gitspace-bench-replay-"))
    try:
        hermetic(base, GITSPACE_PACK_THRESHOLD="0")
        tempfile.tempdir = str(base)  # the scratch repository goes here too
        log(f"Making {options.ops:,} ops ...")
        made = make_ops(base / "ws", options.ops)
        log("Replaying them ...")
        replayed, report = replay_ops(base / "ws")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    ok = getattr(report, "ok", False)
    checked = getattr(report, "reexecuted", 0)
    result = {
        "ops": options.ops, "made_seconds": round(made, 3),
        "made_ops_per_second": round(options.ops / made, 1),
        "replay_seconds": round(replayed, 3),
        "replayed_ops_per_second": round(checked / replayed, 1),
        "ratio_replay_to_make": round((checked / replayed) / (options.ops / made), 3),
        "replay_matched": ok, "reexecuted": checked,
    }
    if options.json:
        print(json.dumps(result, indent=2))
        return
    print(f"made      {options.ops:,} ops in {made:.2f} s: {result['made_ops_per_second']:,} ops/s")
    print(f"replayed  {checked:,} ops in {replayed:.2f} s: "
          f"{result['replayed_ops_per_second']:,} ops/s re-run and verified "
          f"({'every tree matched' if ok else 'DIVERGED'})")
    print(f"ratio     replay rate / make rate = {result['ratio_replay_to_make']:.2f}")


if __name__ == "__main__":
    main()
