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
