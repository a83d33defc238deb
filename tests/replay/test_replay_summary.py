"""What a replay says it checked (``gitspace/replay/summary.py``): the same counts and words in
the CLI, in ``replay --json`` (``summary``) and in the CI job summary, never contradicting
themselves (a divergence at the first commit is "commit 1 of 1", not "0 checked" then
"diverged"; a match that re-executed nothing does not claim a rebuild)."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest
from conftest import REPO, call_ok, git, gitspace_cli

import gitspace


def ci_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gitspace_ci", REPO / "ci" / "gitspace_ci.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gitspace_ci"] = module  # (its dataclasses look their module up there)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def forged(tmp_path: Path) -> Path:
    """A workspace whose newest op's commit holds files its call did not write."""
    root = tmp_path / "ws"
    with gitspace.init(root, agent="a") as ws:
        call_ok(ws, "create", {"path": "a.md", "file_text": "a\n"})
        call_ok(ws, "create", {"path": "b.md", "file_text": "b\n"})
    (root / "b.md").write_text("b, and a line no tool wrote\n")
    git(root, "-c", "core.hooksPath=/dev/null", "commit", "-q", "--amend", "-a", "--no-edit")
    return root


def said(out: str) -> list[str]:
    return [line for line in out.splitlines() if line and not line.startswith(" ")]


def test_a_divergence_at_the_first_commit_of_the_range(forged: Path) -> None:
    text = gitspace_cli(forged, "replay", "--from", "HEAD~1")
    assert text.returncode == 1
    lines = said(text.stdout)
    assert lines[1:] == ["Checked 0 of them: 0 re-executed, 0 applied as recorded.",
                         "diverged: commit 1 of 1 differs from what was recorded (below); it is "
                         "the last one."], text.stdout
    assert re.fullmatch(r"Replayed \w{12}\.\.\w{12}: 1 commit\.", lines[0])
    assert "0 checked" not in text.stdout and "diverged at this op" not in text.stdout
    data = json.loads(gitspace_cli(forged, "replay", "--from", "HEAD~1", "--json").stdout)
    assert data["summary"] == lines and data["checked"] == 0 and data["result"] == "diverged"
    whole = said(gitspace_cli(forged, "replay").stdout)
    assert whole[1:] == ["Checked 2 of them: 1 re-executed, 1 applied as recorded (1 root "
                         "commit).", "diverged: commit 3 of 3 differs from what was recorded "
                         "(below); it is the last one."]


def test_a_match_that_re_executed_nothing_says_so(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    with gitspace.init(root, agent="a") as ws:
        call_ok(ws, "create", {"path": "a.md", "file_text": "a\n"})
    (root / "NOTES.md").write_text("a person's commit\n")
    git(root, "add", "NOTES.md")
    git(root, "commit", "-q", "-m", "notes")
    out = gitspace_cli(root, "replay", "--from", "HEAD~1", "--allow-empty")
    assert out.returncode == 0, out.stderr
    assert said(out.stdout)[1:] == [
        "Checked 1 of them: 0 re-executed, 1 applied as recorded (1 not an op).",
        "match, with no op re-executed: nothing was rebuilt to compare (--allow-empty)."]
    assert "every re-executed op rebuilt" not in out.stdout
    full = gitspace_cli(root, "replay")
    assert said(full.stdout)[-1] == "match: each of the 1 op re-executed rebuilt its recorded " \
                                    "files."


def test_the_ci_summary_says_the_same(forged: Path, monkeypatch: pytest.MonkeyPatch,
                                      tmp_path: Path) -> None:
    ci = ci_module()
    monkeypatch.chdir(forged)
    tip, base = git(forged, "rev-parse", "HEAD").strip(), git(forged, "rev-parse", "HEAD~1").strip()
    outcome = ci.check(Path(sys.executable).parent, ci.Range(tip, base, "a test"),
                       tmp_path / "report", no_scripts=False, allow_empty=False, notes=[])
    assert outcome.result == "diverged"
    text = "".join(outcome.lines)
    data = json.loads(gitspace_cli(forged, "replay", "--from", "HEAD~1", "--json").stdout)
    for line in data["summary"]:  # (as Markdown that means only itself: it quotes history)
        assert ci.md_text(line) in text, (line, text)
    assert "0 op(s) checked" not in text
