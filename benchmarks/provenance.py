"""Benchmark: what a commit pays for its authorship note, and ``gitspace blame`` against ``git
blame``, through the path people take.

Setup, as a person has it: gitspace installed like a wheel (``hooks.install_like_a_wheel``: a
byte-compiled copy in a virtualenv of its own), a repository of ``--files`` small files with
``gitspace hooks install claude-code`` run in it, which puts git's hooks in. Claude Code's calls
go through the hooks exactly as installed (http to the resident recorder, and the command
beside it).

- **commit**: per size (1, 100 and 10,000 changed lines) and round, the agent writes a new file
  of that many lines (one recorded Write; not timed), and the person commits it with plain
  ``git commit`` (timed: the post-commit hook computes and writes the note). The baseline, in
  the same run and the same repository, is the same kind of commit with git's hooks turned off
  (``-c core.hooksPath=/dev/null``): what ``git commit`` costs without gitspace. Reported: the
  medians and their difference, the note's cost. Goal: at most 50 ms at 100 changed lines.
  Each commit is timed twice over: with the checkout's resident recorder answering git's hooks
  (the agent's session is open: the hooks ask it, as installed) and with the hooks in their own
  process (``GITSPACE_RESIDENT=off``, as when no resident runs).
- **blame**: a 5,000-line file built by 50 agent calls and commits (each rewrote 100 lines),
  noted; ``gitspace blame FILE HEAD --json`` against ``git blame --porcelain FILE HEAD``, both as
  commands, medians. Goal: within 3x ``git blame``.

The machines are shared and noisy: compare the differences and ratios, not the absolute numbers.
Exit status is always 0 (a report).

    .venv/bin/python benchmarks/provenance.py            # a few minutes
    .venv/bin/python benchmarks/provenance.py --quick    # fewer rounds
    .venv/bin/python benchmarks/provenance.py --json     # JSON on stdout (the table to stderr)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import emit, finish, hermetic, log  # noqa: E402
from _claude_hooks import Hooks  # noqa: E402
from hooks import install_like_a_wheel, payload  # noqa: E402

NAME, EMAIL = "Bench Person", "bench@example.invalid"


def git(root: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"git {args}: {proc.stderr}")
    return proc.stdout


def make_repository(gitspace: Path, root: Path, files: int) -> Hooks:
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", NAME)
    git(root, "config", "user.email", EMAIL)
    for i in range(files):
        folder = root / f"d{i // 100:03}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{i:05}.txt").write_text(f"file {i}\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "the person's files")
    done = subprocess.run([str(gitspace), "-C", str(root), "hooks", "install", "claude-code"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    return Hooks.installed(root, "settings.local.json")


def agent_write(hooks: Hooks, root: Path, rel: str, content: str, use_id: str) -> None:
    """One Write as Claude Code runs it: its PreToolUse hooks, the write, its PostToolUse hooks
    (as installed: http to the resident recorder, and the command beside it)."""
    tool_input = {"file_path": str(root / rel), "content": content}
    for event in ("PreToolUse", "PostToolUse"):
        if event == "PostToolUse":
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(content)
        hooks.fire(event, root, payload(root, event, "Write", tool_input, use_id))


def timed_commit(root: Path, *extra: str, resident: bool = True) -> float:
    git(root, "add", "-A")
    env = {**os.environ, "GITSPACE_RESIDENT": "on" if resident else "off"}
    started = time.perf_counter()
    proc = subprocess.run(["git", *extra, "commit", "-q", "-m", "the person commits"], cwd=root,
                          env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"git commit: {proc.stderr}")
    return elapsed


def commits(command: Hooks, root: Path, size: int, rounds: int) -> dict[str, float]:
    body = "".join(f"line {n} of the agent's file\n" for n in range(size))
    times: dict[str, list[float]] = {"resident": [], "own": [], "plain": []}
    for r in range(rounds):
        for how in times:
            rel = f"agent/{size}-{r}-{how}.py"
            agent_write(command, root, rel, body, f"toolu_{size}_{r}_{how}")
            if how == "plain":
                times[how].append(timed_commit(root, "-c", "core.hooksPath=/dev/null"))
                continue
            times[how].append(timed_commit(root, resident=how == "resident"))
            head = git(root, "rev-parse", "HEAD").strip()
            if not git(root, "notes", "--ref=ai", "list", head).strip():
                raise SystemExit(f"commit {head} of {size} lines got no note")
    a, own, b = (statistics.median(times[how]) * 1000 for how in ("resident", "own", "plain"))
    return {"lines": size, "git_commit_ms": round(b, 1), "with_note_ms": round(a, 1),
            "note_ms": round(a - b, 1), "own_process_ms": round(own, 1),
            "note_own_process_ms": round(own - b, 1)}


def blame(gitspace: Path, command: Hooks, root: Path, rounds: int) -> dict[str, float]:
    rel = "agent/big.py"
    lines = [f"line {n}\n" for n in range(5000)]
    for c in range(50):
        for n in range(c * 100, c * 100 + 100):
            lines[n] = f"line {n}, written by call {c}\n"
        agent_write(command, root, rel, "".join(lines), f"toolu_blame_{c}")
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", f"call {c}")
    ours, theirs = [], []
    for _ in range(rounds):
        started = time.perf_counter()
        done = subprocess.run([str(gitspace), "-C", str(root), "blame", rel, "HEAD", "--json"],
                              capture_output=True, text=True)
        ours.append(time.perf_counter() - started)
        if done.returncode != 0 or len(json.loads(done.stdout)) != 5000:
            raise SystemExit(f"gitspace blame failed: {done.stderr}")
        started = time.perf_counter()
        git(root, "blame", "--porcelain", rel, "HEAD")
        theirs.append(time.perf_counter() - started)
    agents = sum(1 for x in json.loads(done.stdout) if x["kind"] == "agent")
    a, b = statistics.median(ours) * 1000, statistics.median(theirs) * 1000
    return {"lines": 5000, "agent_lines": agents, "git_blame_ms": round(b, 1),
            "gitspace_blame_ms": round(a, 1), "ratio": round(a / b, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    parser.add_argument("--json", action="store_true", help="JSON on stdout")
    parser.add_argument("--files", type=int, default=1000, help="files in the repository")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gitspace-bench-provenance-"))
    hermetic(work, GITSPACE_PACK_THRESHOLD="0", GIT_AUTHOR_NAME=NAME, GIT_AUTHOR_EMAIL=EMAIL,
             GIT_COMMITTER_NAME=NAME, GIT_COMMITTER_EMAIL=EMAIL)
    rounds = 3 if args.quick else 9
    try:
        python = install_like_a_wheel(work)
        gitspace = python.parent / "gitspace"
        root = work / "repo"
        command = make_repository(gitspace, root, args.files)
        results = []
        for size in (1, 100, 10_000):
            log(f"commits of {size} changed line(s), {rounds} rounds")
            results.append(commits(command, root, size, max(3, rounds // (3 if size > 100 else 1))))
        log("blame of a 5,000-line file")
        blamed = blame(gitspace, command, root, rounds)
    finally:
        finish(work, args.keep)
    rows = ["changed lines | git commit | with its note | the note costs | no resident: "
            "the hook's own process", "---: | ---: | ---: | ---: | ---:"]
    rows += [f"{r['lines']:,} | {r['git_commit_ms']} ms | {r['with_note_ms']} ms | "
             f"{r['note_ms']} ms | +{r['note_own_process_ms']} ms" for r in results]
    at_100 = next(r for r in results if r["lines"] == 100)["note_ms"]
    rows += ["", f"goal: a note adds at most 50 ms at 100 changed lines: {at_100} ms "
                 f"({'met' if at_100 <= 50 else 'NOT met'})", "",
             f"blame of 5,000 lines ({blamed['agent_lines']:,} by agents): git blame "
             f"{blamed['git_blame_ms']} ms, gitspace blame {blamed['gitspace_blame_ms']} ms: "
             f"{blamed['ratio']}x (goal 3x: {'met' if blamed['ratio'] <= 3 else 'NOT met'})"]
    emit("\n".join(rows), {"commits": results, "blame": blamed}, args.json)


if __name__ == "__main__":
    main()
