"""``make mutation``: mutation testing of gitspace's core modules with mutmut, each module against
the tests that cover it, and the score written into docs/testing.md.

For each module in ``MODULES``: a work folder ``build/mutation/<name>/`` holds links to the
sources and tests and a ``pyproject.toml`` whose ``[tool.mutmut]`` mutates only that module and
selects only its tests; ``mutmut run`` runs there (its results are kept, so a later run retests
only the functions that changed). The score of a module is the share of its mutants the tests
kill (a timeout counts as killed), leaving out the survivors judged equivalent in
``mutation/equivalent.toml``; a mutant no selected test reaches counts as surviving. Equivalents
are matched by function and by the line the mutant changes (not by mutmut's numbering, which
shifts when a function changes), and a listed equivalent that no longer survives is reported, so
the list stays current.

    python mutation/run.py [NAME ...] [--jobs N] [--report-only]

Writes ``build/mutation/<name>/survivors.txt`` (each survivor not judged equivalent, with its
diff) and the scores and the equivalent list between the markers of docs/testing.md. Mutation
runs are CPU heavy: ``--jobs`` (default 1) is how many mutants run at once.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import os
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "build" / "mutation"
EQUIVALENT = ROOT / "mutation" / "equivalent.toml"
DOC = ROOT / "docs" / "testing.md"
LINKED = ("gitspace", "tests", "constraints", "sample_workspace")
START, END = "<!-- mutation:start -->", "<!-- mutation:end -->"

# The fault matrix runs every op with five errors; for mutants, one OSError and Ctrl-C take the
# same paths at a fifth of the cost.
FAULTS = ["tests/test_faults.py", "-k", "not (ENOSPC or EACCES or EINTR)"]

# name: (module, the tests that cover it). Only tests that run the module in this process count:
# a mutant is not active in a child process (the CLI subprocess tests, the crash children).
MODULES: dict[str, tuple[str, list[str]]] = {
    "transaction": ("gitspace/core/transaction.py", [
        "tests/test_transaction.py", "tests/test_branches.py", "tests/test_crash.py",
        "tests/test_limits.py", "tests/test_gitindex.py", *FAULTS]),
    "ledger": ("gitspace/storage/ledger.py", [
        "tests/test_ledger.py", "tests/test_ledger_exact.py", "tests/test_limits.py", "-k",
        "not (split or size_cap or path or part or index or default)"]),
    "undo": ("gitspace/core/undo.py", [
        "tests/test_undo.py", "tests/test_undo_walk.py", "tests/test_no_agent.py"]),
    "paths": ("gitspace/core/paths.py", [
        "tests/test_paths.py", "tests/test_paths_exact.py", "tests/test_limits.py", "-k",
        "path or part or short_name"]),
    "gitindex": ("gitspace/storage/gitindex.py", [
        "tests/test_gitindex.py", "tests/test_split_index.py", "tests/test_limits.py",
        *FAULTS]),
    "engine": ("gitspace/replay/engine.py", [
        "tests/test_replay.py", "tests/test_replay_forged.py"]),
    "judge": ("gitspace/replay/judge.py", [
        "tests/test_replay.py", "tests/test_replay_forged.py"]),
}

KILLED = {1, 3, 36, 24, -24, 152, 255, 37}  # a test failed, pytest broke, or it timed out
NO_TESTS = {5, 33}


@dataclass(frozen=True)
class Mutant:
    key: str  # mutmut's name: module.x_function__mutmut_N
    function: str  # Class.method or function
    was: tuple[str, ...]  # the lines it changes, stripped
    now: tuple[str, ...]

    def diff(self) -> str:
        return "\n".join([*(f"- {line}" for line in self.was), *(f"+ {line}" for line in self.now)])


@dataclass
class Score:
    name: str
    module: str
    total: int = 0
    killed: int = 0
    equivalent: list[tuple[Mutant, str]] = field(default_factory=list)
    survivors: list[Mutant] = field(default_factory=list)
    no_tests: int = 0
    seconds: float = 0.0

    @property
    def counted(self) -> int:
        return self.total - len(self.equivalent)

    @property
    def percent(self) -> float:
        return 100.0 * self.killed / self.counted if self.counted else 100.0


def prepare(name: str, module: str, tests: list[str]) -> Path:
    """The work folder of one module: links to the sources, its own mutmut configuration."""
    folder = WORK / name
    folder.mkdir(parents=True, exist_ok=True)
    for entry in LINKED:
        link = folder / entry
        if not link.is_symlink():
            link.symlink_to(ROOT / entry)
    config = {
        "source_paths": ["gitspace/"],
        "only_mutate": [module],
        "pytest_add_cli_args_test_selection": tests,
        "pytest_add_cli_args": ["-p", "no:cacheprovider"],
        "also_copy": ["constraints/", "sample_workspace/"],
    }
    lines = [f"{key} = {json.dumps(value)}" for key, value in config.items()]
    text = (ROOT / "pyproject.toml").read_text() + "\n[tool.mutmut]\n" + "\n".join(lines) + "\n"
    target = folder / "pyproject.toml"
    if not target.exists() or target.read_text() != text:
        target.write_text(text)
    return folder


def run_mutmut(folder: Path, jobs: int) -> float:
    started = time.monotonic()
    env = {k: v for k, v in os.environ.items() if k != "GITSPACE_AGENT"}
    mutmut = Path(sys.executable).with_name("mutmut")
    proc = subprocess.run([str(mutmut), "run", "--max-children", str(jobs)], cwd=folder, env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"mutmut failed in {folder}:\n{proc.stderr[-4000:]}")
    return time.monotonic() - started


def _readable(function: str) -> str:
    name = function.removeprefix("x_")
    if name.startswith("x\u01c1"):  # mutmut names methods x<U+01C1>Class<U+01C1>method
        name = ".".join(name[2:].split("\u01c1"))
    return name


def mutants_of(folder: Path, module: str) -> dict[str, tuple[int | None, Mutant]]:
    """Every mutant of ``module`` with its exit code and the lines it changes."""
    mutated = folder / "mutants" / module
    meta = json.loads(Path(f"{mutated}.meta").read_text())
    source = mutated.read_text()
    bodies: dict[str, list[str]] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and "__mutmut_" in node.name:
            segment = ast.get_source_segment(source, node) or ""
            plain = _readable(node.name.rsplit("__mutmut_", 1)[0]).rsplit(".", 1)[-1]
            # (the def line too: a default argument is mutated there)
            bodies[node.name] = [line.strip().replace(node.name, plain)
                                 for line in segment.splitlines()]
    found = {}
    for key, code in meta["exit_code_by_key"].items():
        function, number = key.rsplit(".", 1)[-1].rsplit("__mutmut_", 1)
        original = bodies.get(f"{function}__mutmut_orig", [])
        changed = bodies.get(f"{function}__mutmut_{number}", [])
        was, now = [], []
        for line in difflib.ndiff(original, changed):
            if line.startswith("- "):
                was.append(line[2:])
            elif line.startswith("+ "):
                now.append(line[2:])
        found[key] = (code, Mutant(key, _readable(function), tuple(was), tuple(now)))
    return found


def load_equivalents() -> list[dict[str, str]]:
    if not EQUIVALENT.exists():
        return []
    return list(tomllib.loads(EQUIVALENT.read_text()).get("equivalent", []))


def _matches(entry: dict[str, str], module: str, mutant: Mutant) -> bool:
    return (entry["module"] == module and entry["function"] == mutant.function
            and entry["was"] == "\n".join(mutant.was) and entry["now"] == "\n".join(mutant.now))


def score(name: str, module: str, folder: Path, equivalents: list[dict[str, str]],
          used: set[int]) -> Score:
    result = Score(name, module)
    for code, mutant in mutants_of(folder, module).values():
        result.total += 1
        if code in KILLED:
            result.killed += 1
            continue
        for i, entry in enumerate(equivalents):
            if _matches(entry, module, mutant):
                result.equivalent.append((mutant, entry["why"]))
                used.add(i)
                break
        else:
            result.survivors.append(mutant)
            result.no_tests += code in NO_TESTS
    return result


def write_survivors(folder: Path, result: Score) -> None:
    out = [f"{len(result.survivors)} surviving mutants of {result.module} not judged equivalent"
           " (add a test that kills each, or list it in mutation/equivalent.toml with why):", ""]
    for mutant in result.survivors:
        out += [f"{mutant.key}  ({mutant.function})", mutant.diff(), ""]
    (folder / "survivors.txt").write_text("\n".join(out))


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("`", "'")


def render(scores: list[Score], equivalents: list[dict[str, str]]) -> str:
    lines = ["| module | mutants | killed | equivalent | not killed (no test reaches) | score |",
             "|---|---:|---:|---:|---:|---:|"]
    scored = {s.module: s for s in scores}
    for module, _ in MODULES.values():
        s = scored.get(module)
        if s is None:
            lines.append(f"| `{module}` | not run yet | | | | |")
            continue
        lines.append(f"| `{s.module}` | {s.total} | {s.killed} | {len(s.equivalent)} | "
                     f"{len(s.survivors)} ({s.no_tests}) | {s.percent:.1f}% |")
    lines += ["", "Surviving mutants judged equivalent (no test can tell them from the code):", ""]
    for entry in sorted(equivalents, key=lambda e: (e["module"], e["function"], e["was"])):
        change = f"`{_cell(entry['was'])}` → `{_cell(entry['now'])}`".replace("\n", " / ")
        lines.append(f"- `{entry['module']}` {entry['function']}: {change}: {entry['why']}")
    return "\n".join(lines)


def update_doc(table: str) -> None:
    text = DOC.read_text()
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    DOC.write_text(f"{head}{START}\n{table}\n{END}{tail}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help=", ".join(MODULES))
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--report-only", action="store_true",
                        help="score the results already in build/mutation without running")
    args = parser.parse_args()
    unknown = set(args.names) - set(MODULES)
    if unknown:
        parser.error(f"unknown module(s) {', '.join(sorted(unknown))}; known: {', '.join(MODULES)}")
    names = args.names or list(MODULES)
    equivalents = load_equivalents()
    used: set[int] = set()
    scores = []
    for name in MODULES:  # every module is scored, so the table is always whole
        module, tests = MODULES[name]
        folder = prepare(name, module, tests)
        seconds = 0.0
        if name in names and not args.report_only:
            print(f"mutating {module} against {' '.join(tests)}", flush=True)
            seconds = run_mutmut(folder, args.jobs)
        if not (folder / "mutants" / f"{module}.meta").exists():
            print(f"{module}: not run yet", flush=True)
            continue
        result = score(name, module, folder, equivalents, used)
        result.seconds = seconds
        write_survivors(folder, result)
        scores.append(result)
        took = f" in {seconds / 60:.1f} min" if seconds else ""
        print(f"{module}: {result.killed}/{result.counted} killed ({result.percent:.1f}%), "
              f"{len(result.equivalent)} equivalent, {len(result.survivors)} surviving{took}",
              flush=True)
    stale = [e for i, e in enumerate(equivalents) if i not in used
             and any(s.module == e["module"] for s in scores)]
    for entry in stale:
        print(f"stale equivalent (no such survivor now): {entry['module']} {entry['function']}: "
              f"{entry['was']!r} -> {entry['now']!r}", flush=True)
    listed = [e for e in equivalents if e not in stale]
    update_doc(render(scores, listed))
    if stale or len(scores) < len(MODULES) or any(s.percent < 90.0 for s in scores):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
