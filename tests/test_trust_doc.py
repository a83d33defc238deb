"""docs/trust.md is the one statement of the trust rules, and each rule names its tests.

Every ``file.py::test_name`` it names (relative to ``tests/``) must exist, every hostile test file
must be named at least once, and every section that states a rule must name a test.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
DOC = TESTS.parent / "docs" / "trust.md"
NAMED = re.compile(r"`([\w/]+\.py)::(test_\w+)`")


def _tests_in(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    return {node.name for node in tree.body
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}


def test_every_test_the_rules_name_exists() -> None:
    missing = []
    for rel, name in NAMED.findall(DOC.read_text()):
        path = TESTS / rel
        if not path.is_file() or name not in _tests_in(path):
            missing.append(f"{rel}::{name}")
    assert not missing, f"docs/trust.md names tests that do not exist: {missing}"


def test_every_hostile_test_file_is_named_by_a_rule() -> None:
    named = {rel for rel, _ in NAMED.findall(DOC.read_text())}
    unnamed = sorted(p.name for p in TESTS.glob("test_hostile_*.py") if p.name not in named)
    assert not unnamed, f"docs/trust.md names no test of {unnamed}: add them to the rule they try"


def test_every_rule_section_names_a_test() -> None:
    sections = re.split(r"^## ", DOC.read_text(), flags=re.M)[1:]
    silent = [s.splitlines()[0] for s in sections if not NAMED.search(s)]
    assert not silent, f"these sections of docs/trust.md state rules but name no test: {silent}"


# A scenario's closing checks: git fsck --strict and the status (``sealed``, ``assert_sound``,
# ``fsck``, ``assert_clean``); what lies beside it is fingerprinted for every one of them
# (``hostile.neighbour``, autouse). A scenario that leaves no repository to check says why here.
CLOSING = ("sealed(", "assert_sound(", "fsck(", "assert_clean(")
NO_REPOSITORY = {
    "test_hostile_path_policy.py::test_the_alias_rules_match_gits_own":
        "compares the path policy with git's own verdicts, on names alone",
    "test_hostile_in_place.py::test_the_said_once_mark_is_never_written_into_a_planted_folder":
        "the hook runs in a folder that is no repository, and writes only into $TMPDIR",
    "test_hostile_ci.py::test_a_forged_ops_content_never_speaks_to_the_runner":
        "the action checks a clone of its own, thrown away; what it prints is the test",
}


def test_every_hostile_scenario_ends_with_fsck_and_the_status() -> None:
    unchecked = []
    for path in sorted(TESTS.glob("test_hostile_*.py")):
        text = path.read_text()
        for node in ast.parse(text, str(path)).body:
            if not (isinstance(node, ast.FunctionDef) and node.name.startswith("test_")):
                continue
            body = ast.get_source_segment(text, node) or ""
            if not any(check in body for check in CLOSING) and (
                    f"{path.name}::{node.name}" not in NO_REPOSITORY):
                unchecked.append(f"{path.name}::{node.name}")
    assert not unchecked, (f"these hostile scenarios end without git fsck --strict and the "
                           f"status ({', '.join(CLOSING)}), and say no reason: {unchecked}")
