"""docs/architecture.md's "Words that mean one thing" names what is there: every module it cites
exists, and every class it names is defined once in the package (a rename that leaves the page
behind, or a second class of the same name, fails here)."""

from __future__ import annotations

import ast
import re
from collections import Counter

from conftest import REPO

PACKAGE = REPO / "gitspace"
SECTION = "## Words that mean one thing"


def _section() -> str:
    text = (REPO / "docs" / "architecture.md").read_text()
    start = text.index(SECTION)
    end = text.index("\n## ", start + len(SECTION))
    return text[start:end]


def _classes() -> Counter[str]:
    found: Counter[str] = Counter()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                found[node.name] += 1
    return found


def test_every_module_the_words_cite_exists() -> None:
    cited = [c for c in re.findall(r"`([\w/]+(?:\.py|/))`", _section()) if not c.startswith("refs/")]
    assert len(cited) >= 20
    missing = [c for c in cited if not (PACKAGE / c).exists()]
    assert not missing, missing


def test_every_class_the_words_name_is_defined_once() -> None:
    named = set(re.findall(r"`([A-Z][a-z]+(?:[A-Z][a-z]*)+|[A-Z][a-z]{2,})`", _section()))
    assert {"Recorder", "Change", "Writer", "Event", "LoopEvent", "ReplayReport"} <= named
    classes = _classes()
    wrong = {name: classes[name] for name in named if classes[name] != 1}
    assert not wrong, f"named in the words, defined this many times (not once): {wrong}"
