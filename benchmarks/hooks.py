"""Benchmark: what ``gitspace hook claude-code`` adds to each tool call of Claude Code.

Through the path users take: ``gitspace hooks install claude-code`` writes the hook command into
``.claude/settings.json``; this script reads that command back and runs it exactly as Claude Code
does for one tool call: ``/bin/sh -c COMMAND`` with the PreToolUse payload on stdin, the tool's
effect, then ``/bin/sh -c COMMAND`` with the PostToolUse payload. Payloads are shaped as the real
binary sends them (tests/harness/test_claude_code_wire.py).

Baselines, measured in the same run on the same calls: the same two hook invocations running
``true`` (the harness's bare cost of calling any hook) and running a no-op Python that reads its
stdin (the bare cost of any hook written in Python). The overhead of gitspace is its median per
call minus the baseline's; the goal is well under 100 ms per tool call. Wall time and the CPU time
of the hook processes (user + system, from getrusage) are both reported: on a loaded machine the
wall time grows with everyone else's work, the CPU time much less.

Calls: ``Write`` of a new file, ``Edit`` of an existing one, and ``Bash`` creating two files, in a
workspace of ``--files`` small files (default 1,000; 100 per folder). The machines are shared and
noisy: compare the ratios, not the absolute numbers. Exit status is always 0 (this is a report).

Installed as a user has it: the hook runs from a virtual environment of its own that holds a copy
of the package, byte-compiled, and a console script, as ``pip install gitspace`` (a wheel) leaves
them; the dependencies come from this interpreter's site-packages. So neither the hook nor the
no-op Python pays what a wheel install never pays: compiling the sources (this environment may set
PYTHONDONTWRITEBYTECODE) or an editable install's import finder (``pip install -e``).

Hermetic: HOME points into a temporary folder, GIT_CONFIG_NOSYSTEM=1, every other GIT_* variable
is dropped; everything lives under that folder and is removed at exit.

In place (``--in-place``): the same calls in a person's own repository (plain ``git init``, its
files committed and packed as a clone has them, an unstaged edit and an untracked file), where
``gitspace hooks install claude-code`` records on a line of its own (``.claude/settings.local.json``),
at 1,000, 10,000 and 100,000 files (``--sizes``). Reported per size: each call's overhead over
``true`` (the goal: at most 100 ms for Write and Edit, both hook processes, at every size), and a
Bash call's overhead against one ``git status`` of that repository (the goal: at most one status,
plus the commit). ``--growth N``: after N Edit calls in a 10,000-file repository and ``gitspace
gc``, how much ``.git`` grew against the compressed bytes those calls wrote (the goal: about twice
at most); those calls go through the hook's own entry point in this process (its storage is
what is measured there, not its time).

    .venv/bin/python benchmarks/hooks.py            # ~1 minute
    .venv/bin/python benchmarks/hooks.py --quick    # fewer calls, 100 files
    .venv/bin/python benchmarks/hooks.py --json     # JSON on stdout (the table goes to stderr)
    .venv/bin/python benchmarks/hooks.py --in-place            # 1k, 10k, 100k files: minutes
    .venv/bin/python benchmarks/hooks.py --in-place --growth 1000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import hermetic, install_like_a_wheel, log  # noqa: E402
from _claude_hooks import Hooks, process_cpu  # noqa: E402

SESSION = "0b5e1a2c-3d4e-4f50-8a6b-7c8d9e0f1a2b"
def make_workspace(gitspace: str, root: Path, files: int) -> None:
    subprocess.run([gitspace, "init", str(root)], check=True, capture_output=True)
    for i in range(files):
        folder = root / f"d{i // 100:03}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{i:05}.txt").write_text(f"file {i}\n")
    subprocess.run([gitspace, "-C", str(root), "snapshot"], check=True, capture_output=True)
    subprocess.run([gitspace, "-C", str(root), "hooks", "install", "claude-code"], check=True,
                   capture_output=True)


def payload(root: Path, event: str, tool: str, tool_input: dict[str, Any], use_id: str) -> bytes:
    body: dict[str, Any] = {
        "session_id": SESSION, "transcript_path": f"/tmp/{SESSION}.jsonl", "cwd": str(root),
        "prompt_id": "bench-prompt", "permission_mode": "acceptEdits", "hook_event_name": event,
        "tool_name": tool, "tool_input": tool_input, "tool_use_id": use_id}
    if event == "PostToolUse":
        body["tool_response"] = {"stdout": "", "stderr": "", "interrupted": False}
    return json.dumps(body).encode()


def cpu_seconds() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def one_call(hooks: Hooks, root: Path, kind: str, n: int) -> tuple[float, float]:
    """(wall, CPU) seconds the harness spends in hooks for one tool call (Pre + Post), the tool's
    own effect excluded."""
    use_id = f"toolu_bench_{kind}_{n}"
    target = root / "work" / f"{kind}-{n}.txt"
    effect: Callable[[], None]
    if kind == "Write":
        tool_input: dict[str, Any] = {"file_path": str(target), "content": f"new {n}\n"}

        def effect() -> None:
            target.parent.mkdir(exist_ok=True)
            target.write_text(f"new {n}\n")
    elif kind == "Edit":
        existing = root / "d000" / f"f{n % 100:05}.txt"
        old = existing.read_text()
        tool_input = {"file_path": str(existing), "old_string": old, "new_string": old + "x",
                      "replace_all": False}

        def effect() -> None:
            existing.write_text(old + "x")
    else:
        tool_input = {"command": f"echo a > work/b{n}-1 && echo b > work/b{n}-2"}

        def effect() -> None:
            (root / "work").mkdir(exist_ok=True)
            (root / "work" / f"b{n}-1").write_text("a\n")
            (root / "work" / f"b{n}-2").write_text("b\n")
    pre = payload(root, "PreToolUse", kind, tool_input, use_id)
    post = payload(root, "PostToolUse", kind, tool_input, use_id)
    c0, t0 = cpu_seconds(), time.perf_counter()
    hooks.fire("PreToolUse", root, pre)
    t1 = time.perf_counter()
    effect()
    t2 = time.perf_counter()
    hooks.fire("PostToolUse", root, post)
    c1, t3 = cpu_seconds(), time.perf_counter()
    return (t1 - t0) + (t3 - t2), c1 - c0


def measure(python: Path, root: Path, calls: int) -> dict[str, dict[str, dict[str, float]]]:
    noop = f"{shlex.quote(str(python))} -c 'import sys; sys.stdin.read()'"
    commands = {"gitspace": Hooks.installed(root, "settings.json"), "true": Hooks.command("true"),
                "python no-op": Hooks.command(noop)}
    # The baselines' tool effects land in a plain folder of their own, not in the workspace.
    plain = root.parent / "plain"
    (plain / "d000").mkdir(parents=True)
    for i in range(100):
        (plain / "d000" / f"f{i:05}.txt").write_text(f"file {i}\n")
    places = {"gitspace": root, "true": plain, "python no-op": plain}
    results: dict[str, dict[str, dict[str, list[float]]]] = {
        clock: {c: {} for c in commands} for clock in ("wall", "cpu")}
    for kind in ("Write", "Edit", "Bash"):
        for n in range(calls):
            # Interleaved, so that the machine's load drifts over all three alike.
            for name, command in commands.items():
                wall, cpu = one_call(command, places[name], kind, n * 3 + list(commands).index(name))
                results["wall"][name].setdefault(kind, []).append(wall)
                results["cpu"][name].setdefault(kind, []).append(cpu)
    return {clock: {name: {kind: statistics.median(v) * 1000 for kind, v in by_kind.items()}
                    | {"all": statistics.median([x for v in by_kind.values() for x in v]) * 1000}
                    for name, by_kind in by_name.items()}
            for clock, by_name in results.items()}


def make_user_repo(gitspace: str, root: Path, files: int, lines: int = 5) -> None:
    """A person's repository of ``files`` files of ``lines`` lines, committed and packed, with an
    unstaged edit and an untracked file; gitspace's hooks installed in place."""
    root.mkdir()
    run = {"cwd": root, "check": True, "capture_output": True}
    subprocess.run(["git", "init", "-q", "-b", "main"], **run)  # type: ignore[call-overload]
    for key, value in (("user.name", "Bench Person"), ("user.email", "bench@example.com")):
        subprocess.run(["git", "config", key, value], **run)  # type: ignore[call-overload]
    for i in range(files):
        folder = root / f"d{i // 100:03}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{i:05}.txt").write_text(f"file {i}\n" + "".join(
            source_line(i * 1000 + k) for k in range(lines - 1)))
    (root / ".gitignore").write_text("build/\n*.log\n")
    for args in (["add", "-A"], ["commit", "-q", "-m", "the person's project"],
                 ["repack", "-adq"], ["prune-packed"]):
        subprocess.run(["git", *args], **run)  # type: ignore[call-overload]
    (root / "d000" / "f00001.txt").write_text("an edit not committed yet\n")
    (root / "scratch.txt").write_text("untracked\n")
    subprocess.run([gitspace, "-C", str(root), "hooks", "install", "claude-code"], **run)  # type: ignore[call-overload]  # noqa: E501


WORDS = ("self", "value", "return", "if", "for", "in", "range", "len", "name", "path", "data",
         "items", "result", "None", "True", "error", "config", "node", "index", "count", "text")


def source_line(seed: int) -> str:
    """A line of something like source code: words in a varying order, as compressible as code."""
    import random

    rng = random.Random(seed)
    words = [rng.choice(WORDS) for _ in range(rng.randrange(3, 9))]
    return "    " * rng.randrange(1, 4) + " ".join(words) + f"  # {rng.randrange(10**6)}\n"


def git_status_ms(root: Path, runs: int) -> tuple[float, float]:
    """(wall, CPU) ms of one ``git status`` here (as a person's own, read-only), medians."""
    walls, cpus = [], []
    for _ in range(runs):
        c0, t0 = cpu_seconds(), time.perf_counter()
        subprocess.run(["git", "--no-optional-locks", "status", "--porcelain"], cwd=root,
                       capture_output=True, check=True)
        walls.append(time.perf_counter() - t0)
        cpus.append(cpu_seconds() - c0)
    return statistics.median(walls) * 1000, statistics.median(cpus) * 1000


def start_session(hooks: Hooks, root: Path) -> int | None:
    """Claude Code's ``SessionStart``, as a session begins: its hook starts the resident
    recorder; its pid once it listens (None: the hooks record in their own processes)."""
    from gitspace.harness.resident import home

    body = {"session_id": SESSION, "transcript_path": f"/tmp/{SESSION}.jsonl", "cwd": str(root),
            "hook_event_name": "SessionStart", "source": "startup"}
    hooks.fire("SessionStart", root, json.dumps(body).encode())
    deadline = time.monotonic() + 20
    while hooks.posts and home.alive(root / ".git") is None and time.monotonic() < deadline:
        time.sleep(0.02)
    return home.alive(root / ".git")


def in_place_calls(root: Path, plain: Path, calls: int, kill: bool
                   ) -> tuple[dict[str, dict[str, dict[str, list[float]]]], list[str], int]:
    """Each kind's calls through the installed hooks and through ``true``, interleaved: (wall and
    CPU seconds per call, the tool-use ids of gitspace's calls, residents killed). The resident's
    own CPU is counted in gitspace's (it is no child of this process: read from /proc). ``kill``:
    the resident is killed (SIGKILL) in the middle of each kind's calls."""
    from gitspace.harness.resident import home

    hooks = {"gitspace": Hooks.installed(root, "settings.local.json"), "true": Hooks.command("true")}
    places = {"gitspace": root, "true": plain}
    start_session(hooks["gitspace"], root)
    got: dict[str, dict[str, dict[str, list[float]]]] = {
        clock: {c: {} for c in hooks} for clock in ("wall", "cpu")}
    ids, killed = [], 0
    for kind in ("Write", "Edit", "Bash"):
        for n in range(calls):
            if kill and n == calls // 2 and (pid := home.alive(root / ".git")) is not None:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            for name, hook_set in hooks.items():
                number = n * 2 + list(hooks).index(name)
                pid = home.alive(root / ".git") if name == "gitspace" else None
                before = process_cpu(pid)
                wall, cpu = one_call(hook_set, places[name], kind, number)
                cpu += max(0.0, process_cpu(pid) - before)
                got["wall"][name].setdefault(kind, []).append(wall)
                got["cpu"][name].setdefault(kind, []).append(cpu)
                if name == "gitspace":
                    ids.append(f"toolu_bench_{kind}_{number}")
    for hook_set in hooks.values():
        hook_set.close()
    return got, ids, killed


def in_place(python: Path, tmp: Path, sizes: list[int], calls: int, kill: bool = False
             ) -> dict[str, Any]:
    gitspace = str(python.parent / "gitspace")
    plain = tmp / "plain"
    (plain / "d000").mkdir(parents=True)
    for i in range(100):
        (plain / "d000" / f"f{i:05}.txt").write_text(f"file {i}\n")
    rows: dict[str, Any] = {}
    for files in sizes:
        root = tmp / f"repo-{files}"
        log(f"in place: a repository of {files:,} files, {calls} calls per tool kind "
            f"(load {os.getloadavg()[0]:.2f}) ...")
        make_user_repo(gitspace, root, files)
        index = (root / ".git" / "index").stat()
        got, ids, killed = in_place_calls(root, plain, calls, kill)
        status_wall, status_cpu = git_status_ms(root, max(5, calls))
        after = (root / ".git" / "index").stat()
        recorded = subprocess.run(["git", "-C", str(root), "log", "--format=%(trailers:key="
                                   "Gitspace-Tool-Use-Id,valueonly)", "refs/gitspace/lines/main"],
                                  capture_output=True, text=True).stdout.split()
        subprocess.run([gitspace, "-C", str(root), "hooks", "uninstall", "claude-code"],
                       capture_output=True)  # (the resident stops with it)
        med = {clock: {name: {k: statistics.median(v) * 1000 for k, v in by.items()}
                       for name, by in got[clock].items()} for clock in got}
        rows[str(files)] = {
            "median_ms": med,
            "overhead_ms": {clock: {k: med[clock]["gitspace"][k] - med[clock]["true"][k]
                                    for k in med[clock]["true"]} for clock in med},
            "git_status_ms": {"wall": status_wall, "cpu": status_cpu},
            "ops_recorded": len(recorded), "ops_expected": len(ids),
            "ids_kept": sorted(recorded) == sorted(ids), "residents_killed": killed,
            "load": round(os.getloadavg()[0], 2),
            "index_untouched": (index.st_mtime_ns, index.st_ino) == (after.st_mtime_ns,
                                                                     after.st_ino)}
        shutil.rmtree(root, ignore_errors=True)
    report_in_place(rows, kill)
    return rows


def report_in_place(rows: dict[str, Any], kill: bool) -> None:
    log(f"{'in place, ms per call over true (Pre + Post)':<46} {'Write':>8} {'Edit':>8} "
        f"{'Bash':>8} {'status':>8} {'Bash goal':>10} {'load':>6}")
    for files, row in rows.items():
        for clock in ("wall", "cpu"):
            over, status = row["overhead_ms"][clock], row["git_status_ms"][clock]
            log(f"  {int(files):>7,} files, {clock:<4}{'':<24} {over['Write']:8.1f} "
                f"{over['Edit']:8.1f} {over['Bash']:8.1f} {status:8.1f} "
                f"{30 + status / 4:10.1f} {row['load']:6.2f}")
    for files, row in rows.items():
        over, status = row["overhead_ms"]["wall"], row["git_status_ms"]["wall"]
        files_ok = max(over["Write"], over["Edit"]) <= 30
        bash_ok = over["Bash"] <= 30 + status / 4
        log(f"  {int(files):,} files: Write/Edit {'pass' if files_ok else 'FAIL'} (goal: at most "
            f"30 ms over true), Bash {'pass' if bash_ok else 'FAIL'} (goal: at most 30 ms + a "
            f"quarter of one git status); ops recorded {row['ops_recorded']}/"
            f"{row['ops_expected']}, tool-use ids {'all kept' if row['ids_kept'] else 'NOT kept'}"
            + (f", {row['residents_killed']} resident(s) killed mid-run" if kill else "")
            + f"; the person's .git/index {'untouched' if row['index_untouched'] else 'WRITTEN'}")


def growth(python: Path, tmp: Path, edits: int, files: int = 10_000) -> dict[str, Any]:
    """``.git``'s growth after ``edits`` Edit calls and ``gitspace gc``, against the compressed
    bytes those calls wrote."""
    import io
    import random
    import zlib

    from gitspace.harness import hook

    root = tmp / "growth"
    log(f"growth: {edits:,} Edit calls in a repository of {files:,} files ...")
    make_user_repo(str(python.parent / "gitspace"), root, files, lines=60)
    subprocess.run([str(python.parent / "gitspace"), "-C", str(root), "gc"], check=True,
                   capture_output=True)
    before = folder_bytes(root / ".git")
    rng = random.Random(23)
    written = 0
    for n in range(edits):
        i = rng.randrange(files)
        target = root / f"d{i // 100:03}" / f"f{i:05}.txt"
        lines = target.read_text().splitlines(keepends=True)
        at = rng.randrange(len(lines))
        old_line = lines[at]
        new_line = source_line(-n - 1)
        new = "".join(lines[:at] + [new_line] + lines[at + 1:])
        tool_input = {"file_path": str(target), "old_string": old_line.strip("\n"),
                      "new_string": new_line.strip("\n")}
        for event in ("PreToolUse", "PostToolUse"):
            if event == "PostToolUse":
                target.write_text(new)
            data = payload(root, event, "Edit", tool_input, f"toolu_growth_{n}")
            hook.main(["hook", "claude-code"], stdin=io.BytesIO(data), stdout=io.StringIO(),
                      stderr=io.StringIO())
        written += len(zlib.compress(new.encode()))  # what git must keep of the file at least
    subprocess.run([str(python.parent / "gitspace"), "-C", str(root), "gc"], check=True,
                   capture_output=True)
    grown = folder_bytes(root / ".git") - before
    ratio = grown / max(written, 1)
    kinds = subprocess.run(
        "git rev-list --objects refs/gitspace/lines/main --not main | cut -d' ' -f1 | "
        "git cat-file --batch-check='%(objecttype) %(objectsize:disk)'", shell=True, cwd=root,
        capture_output=True, text=True).stdout.split("\n")
    by_kind: dict[str, int] = {}
    for row in filter(None, kinds):
        kind, size = row.split()
        by_kind[kind] = by_kind.get(kind, 0) + int(size)
    log("growth: the line's objects on disk, by kind: " + ", ".join(
        f"{k} {v:,} bytes" for k, v in sorted(by_kind.items())))
    log(f"growth: .git grew {grown:,} bytes for {written:,} compressed bytes written "
        f"= {ratio:.2f}x ({'pass' if ratio <= 2.2 else 'FAIL'}: goal about 2x at most)")
    return {"edits": edits, "files": files, "grown_bytes": grown, "written_compressed": written,
            "ratio": ratio, "line_objects_bytes": by_kind}


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--calls", type=int, default=15, help="calls per tool kind")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--in-place", action="store_true", help="a person's own repository")
    parser.add_argument("--sizes", default="1000,10000,100000", help="in place: files per run")
    parser.add_argument("--growth", type=int, default=0, help="in place: Edit calls for .git growth")
    parser.add_argument("--kill-resident", action="store_true",
                        help="in place: kill the resident recorder in the middle of each kind's calls")
    args = parser.parse_args()
    if args.in_place:
        tmp = Path(tempfile.mkdtemp(prefix="gitspace-bench-inplace-"))
        try:
            hermetic(tmp, GITSPACE_PACK_THRESHOLD="1024")
            python = install_like_a_wheel(tmp)
            sizes = [100] if args.quick else [int(x) for x in args.sizes.split(",") if x]
            report: dict[str, Any] = {"in_place": in_place(python, tmp, sizes,
                                                           5 if args.quick else args.calls,
                                                           args.kill_resident)}
            if args.growth:
                report["growth"] = growth(python, tmp, args.growth)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        if args.json:
            print(json.dumps(report, indent=2))
        return
    if args.quick:
        args.files, args.calls = 100, 5
    tmp = Path(tempfile.mkdtemp(prefix="gitspace-bench-hooks-"))
    try:
        hermetic(tmp, GITSPACE_PACK_THRESHOLD="0")
        python = install_like_a_wheel(tmp)
        root = tmp / "ws"
        log(f"workspace of {args.files} files, {args.calls} calls per tool kind ...")
        make_workspace(str(python.parent / "gitspace"), root, args.files)
        medians = measure(python, root, args.calls)
        ops = subprocess.run(["git", "-C", str(root), "log", "--format=%(trailers:key="
                              "Gitspace-Source,valueonly)"], capture_output=True, text=True)
        recorded = ops.stdout.split().count("harness")
        status = subprocess.run(["git", "-C", str(root), "status", "--porcelain"],
                                capture_output=True, text=True).stdout
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    overhead = {clock: {base: {k: medians[clock]["gitspace"][k] - medians[clock][base][k]
                               for k in medians[clock][base]} for base in ("true", "python no-op")}
                for clock in medians}
    report = {"files": args.files, "calls_per_kind": args.calls, "median_ms": medians,
              "overhead_ms": overhead, "ops_recorded": recorded,
              "ops_expected": 3 * args.calls, "status_clean": status == ""}
    for clock in ("wall", "cpu"):
        log(f"{clock + ' ms per tool call (Pre + Post hook), median':<44} {'Write':>8} "
            f"{'Edit':>8} {'Bash':>8} {'all':>8}")
        for name, row in medians[clock].items():
            log(f"  {name:<42} " + " ".join(f"{row[k]:8.1f}" for k in ("Write", "Edit", "Bash",
                                                                          "all")))
        for base, row in overhead[clock].items():
            log(f"  {'gitspace overhead over ' + base:<42} "
                + " ".join(f"{row[k]:8.1f}" for k in ("Write", "Edit", "Bash", "all")))
    for clock in ("wall", "cpu"):
        over = overhead[clock]["python no-op"]["all"]
        ratio = medians[clock]["gitspace"]["all"] / medians[clock]["python no-op"]["all"]
        log(f"{clock}: overhead over a no-op Python hook {over:.1f} ms per call, gitspace / no-op "
            f"= {ratio:.2f}x ({'pass' if over < 100 else 'FAIL'}: goal well under 100 ms)")
    log(f"ops recorded {recorded}/{3 * args.calls} "
        f"({'pass' if recorded == 3 * args.calls else 'FAIL'}); "
        f"git status {'clean (pass)' if report['status_clean'] else 'NOT clean (FAIL)'}")
    if args.json:
        print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
