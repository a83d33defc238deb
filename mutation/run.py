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

    python mutation/run.py [NAME ...] [--jobs N] [--sample K] [--report-only]

Writes ``build/mutation/<name>/survivors.txt`` (each survivor not judged equivalent, with its
diff) and the scores and the equivalent list between the markers of docs/testing.md. Mutation
runs are CPU heavy: ``--jobs`` (default 1) is how many mutants run at once. ``--sample K`` tests
K mutants of each module, spread evenly over its functions in source order (the same K every
run, so a rerun only tests what changed), and the score says it is a sample of how many.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import math
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

LIMITS = "tests/test_limits.py"
INDEX_LIMITS = [f"{LIMITS}::test_{name}" for name in (
    "an_index_asked_to_split_is_split_from_5000_entries",
    "an_index_of_100000_entries_is_split_unless_the_config_says_false",
    "index_names_around_the_4095_byte_length_field",
    "index_entries_carry_the_written_files_stat_data", "the_mode_read_back_after_a_staged_write")]
REPLAY = ["tests/replay/test_replay.py", "tests/replay/test_replay_forged.py",
          "tests/harness/test_harness_ledger.py"]

# A harness's calls recorded in this process, in a workspace and in a person's own checkout
# (the hook's entry point: hook.main), and the fault matrix's recording ops.
RECORDING = ["tests/harness/test_recorder.py", "tests/harness/test_harness_hook.py",
             "tests/harness/test_owned.py", "tests/harness/inplace/test_place.py",
             "tests/harness/test_inplace.py", "tests/harness/inplace/test_takeback.py",
             "tests/test_hostile_in_place_rules.py", "tests/test_hostile_parallel_hooks.py",
             "tests/test_faults.py", "-k", "not (ENOSPC or EACCES or EINTR)"]

# A fleet's syncs in this process (the four-clone runs are child processes, and slow).
FLEET = ["tests/team/test_sync_turns.py", "tests/team/test_fleet_sync.py",
         "tests/team/test_fleet_hostile.py", "tests/team/test_fleet_http.py"]

# name: (module, the tests that cover it). Only tests that run the module in this process count:
# a mutant is not active in a child process (the CLI subprocess tests, the crash children).
MODULES: dict[str, tuple[str, list[str]]] = {
    "transaction": ("gitspace/core/transaction.py", [
        "tests/core/test_transaction.py", "tests/core/test_branches.py", *FAULTS]),
    "writer": ("gitspace/core/writer.py", [
        "tests/core/test_writer.py", "tests/core/test_transaction.py",
        "tests/core/test_branches.py", "tests/storage/test_gitindex.py",
        "tests/storage/test_racyindex.py", *INDEX_LIMITS, *FAULTS]),
    "ledger": ("gitspace/storage/ledger.py", [
        "tests/storage/test_ledger.py", "tests/storage/test_ledger_exact.py",
        "tests/harness/test_harness_ledger.py",
        f"{LIMITS}::test_the_answer_recorded_in_an_op_commit_is_capped"]),
    "undo": ("gitspace/core/undo.py", [
        "tests/core/test_undo.py", "tests/core/test_undo_walk.py", "tests/test_no_agent.py"]),
    "paths": ("gitspace/core/paths.py", [
        "tests/core/test_paths.py", "tests/core/test_paths_exact.py",
        "tests/core/test_path_policy_exact.py",
        *(f"{LIMITS}::test_{name}" for name in (
            "a_path_part_of_up_to_255_bytes_is_a_file", "a_path_part_of_256_bytes_is_refused",
            "a_path_of_up_to_4096_bytes_is_well_formed", "a_path_of_4097_bytes_is_refused",
            "a_path_of_up_to_64_parts_is_a_file", "a_path_of_65_parts_is_refused",
            "the_longest_path_the_system_takes_in_this_workspace",
            "a_one_byte_name_at_the_limit_leaves_room_for_the_tmp_file"))]),
    "gitindex": ("gitspace/storage/gitindex.py", [
        "tests/storage/test_gitindex.py", "tests/storage/test_split_index.py",
        "tests/storage/test_racyindex.py", *INDEX_LIMITS, *FAULTS]),
    "engine": ("gitspace/replay/engine.py", REPLAY),
    "judge": ("gitspace/replay/judge.py", REPLAY),
    "recorder": ("gitspace/harness/recorder.py", RECORDING),
    "owned": ("gitspace/harness/owned.py", RECORDING),
    "inplace": ("gitspace/harness/inplace/place.py", RECORDING),
    "sync": ("gitspace/team/sync.py", FLEET),
    "pace": ("gitspace/team/sync_pace.py", FLEET),
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
    population: int = 0  # every mutant of the module; ``total`` of them were tested

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


NOTHING = "no-such-mutant"  # a name no mutant has: mutmut generates mutants and stats, then stops


def _mutmut(folder: Path, jobs: int, names: list[str]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "GITSPACE_AGENT"}
    mutmut = Path(sys.executable).with_name("mutmut")
    return subprocess.run([str(mutmut), "run", "--max-children", str(jobs), *names], cwd=folder,
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def run_mutmut(folder: Path, module: str, jobs: int, sample: int | None) -> float:
    """Run mutmut on every mutant of ``module`` not tested yet, or on those of its sample."""
    started = time.monotonic()
    if sample is None:
        proc = _mutmut(folder, jobs, [])
    else:
        proc = _mutmut(folder, jobs, [NOTHING])
        if "nothing matches" not in proc.stdout:
            raise SystemExit(f"mutmut failed in {folder}:\n{proc.stdout[-4000:]}")
        codes = _meta(folder, module)["exit_code_by_key"]
        chosen = sampled(list(codes), sample)
        (folder / "sample.json").write_text(json.dumps(chosen))
        # Not yet tested, or survived: a new test may kill it now (mutmut keeps old results).
        pending = [key for key in chosen if codes[key] not in KILLED]
        if not pending:
            return time.monotonic() - started
        proc = _mutmut(folder, jobs, pending)
    if proc.returncode != 0:
        raise SystemExit(f"mutmut failed in {folder}:\n{proc.stdout[-4000:]}")
    return time.monotonic() - started


def _order(key: str) -> tuple[str, int]:
    function, number = key.rsplit("__mutmut_", 1)
    return function, int(number)


def sampled(keys: list[str], size: int) -> list[str]:
    """``size`` of ``keys`` spread evenly over them in function order (all if there are fewer)."""
    keys = sorted(keys, key=_order)
    if size >= len(keys):
        return keys
    step = len(keys) / size
    return [keys[math.floor(i * step)] for i in range(size)]


def _meta(folder: Path, module: str) -> dict[str, dict[str, int | None]]:
    return dict(json.loads((folder / "mutants" / f"{module}.meta").read_text()))


def _readable(function: str) -> str:
    name = function.removeprefix("x_")
    if name.startswith("x\u01c1"):  # mutmut names methods x<U+01C1>Class<U+01C1>method
        name = ".".join(name[2:].split("\u01c1"))
    return name


def mutants_of(folder: Path, module: str) -> dict[str, tuple[int | None, Mutant]]:
    """Every mutant of ``module`` with its exit code and the lines it changes."""
    mutated = folder / "mutants" / module
    meta = _meta(folder, module)
    source = mutated.read_text()
    # (by line numbers: ast.get_source_segment splits the whole file again for every function)
    lines = source.split("\n")
    bodies: dict[str, list[str]] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and "__mutmut_" in node.name:
            segment = lines[node.lineno - 1:node.end_lineno]
            plain = _readable(node.name.rsplit("__mutmut_", 1)[0]).rsplit(".", 1)[-1]
            # (the def line too: a default argument is mutated there)
            bodies[node.name] = [line.strip().replace(node.name, plain) for line in segment]
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
    everything = mutants_of(folder, module)
    result.population = len(everything)
    # An equivalent stays current while a mutant it names is not killed, in the sample or not
    # (outside a sample it may be untested yet): a sample that no longer draws it is no reason
    # to drop it; a mutant killed, or code that changed, is.
    for code, mutant in everything.values():
        if code not in KILLED:
            used.update(i for i, entry in enumerate(equivalents)
                        if _matches(entry, module, mutant))
    chosen = folder / "sample.json"
    keys = json.loads(chosen.read_text()) if chosen.exists() else list(everything)
    for key in keys:
        code, mutant = everything[key]
        if code is None:  # not tested yet (a run stopped before it): no verdict to count
            continue
        result.total += 1
        if code in KILLED:
            result.killed += 1
            continue
        for entry in equivalents:
            if _matches(entry, module, mutant):
                result.equivalent.append((mutant, entry["why"]))
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
    lines = ["| module | mutants tested (of) | killed | equivalent | not killed (no test reaches) "
             "| score | last run |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    scored = {s.module: s for s in scores}
    for module, _ in MODULES.values():
        s = scored.get(module)
        if s is None:
            lines.append(f"| `{module}` | not run yet | | | | | |")
            continue
        tested = f"{s.total}" if s.total == s.population else f"{s.total} ({s.population})"
        lines.append(f"| `{s.module}` | {tested} | {s.killed} | {len(s.equivalent)} | "
                     f"{len(s.survivors)} ({s.no_tests}) | {s.percent:.1f}% | "
                     f"{s.seconds / 60:.1f} min |")
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
    parser.add_argument("--sample", type=int, default=None, metavar="K",
                        help="test K mutants of each module, spread evenly (default: all)")
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
        timing = folder / "seconds.json"
        if name in names and not args.report_only:
            print(f"mutating {module} against {' '.join(tests)}", flush=True)
            if args.sample is None:
                (folder / "sample.json").unlink(missing_ok=True)
            timing.write_text(json.dumps(run_mutmut(folder, module, args.jobs, args.sample)))
        seconds = json.loads(timing.read_text()) if timing.exists() else 0.0
        if not (folder / "mutants" / f"{module}.meta").exists():
            print(f"{module}: not run yet", flush=True)
            continue
        result = score(name, module, folder, equivalents, used)
        result.seconds = seconds
        write_survivors(folder, result)
        scores.append(result)
        took = f" in {seconds / 60:.1f} min" if seconds else ""
        of = f" (a sample of {result.population})" if result.total < result.population else ""
        print(f"{module}: {result.killed}/{result.counted}{of} killed ({result.percent:.1f}%), "
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
