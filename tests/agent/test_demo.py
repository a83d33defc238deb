"""`gitspace demo` end to end: it finishes, and every figure it prints matches plain git."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import assert_clean, git


def figures(output: str) -> dict[str, int]:
    summary = output[output.index("Summary:"):]
    patterns = {
        "moves": r"(\d+) moves,", "dead_ends": r"(\d+) dead ends", "checkpoints": r"(\d+) checkpoints",
        "restores": r"(\d+) restores", "final_path": r"way out is (\d+) moves",
        "entries": r"summaries/\): ([\d,]+) entries", "chunks": r"in (\d+) chunks",
        "journal": r"journal size ([\d,]+) bytes", "ops": r"(\d+) ops by the two agents",
        "delegated": r"journal-reader delegated (\d+) windows",
    }
    out = {}
    for name, pattern in patterns.items():
        found = re.search(pattern, summary)
        assert found, f"{name} missing from the summary:\n{summary}"
        out[name] = int(found.group(1).replace(",", ""))
    return out


def trailer_values(root: Path, key: str) -> list[str]:
    return re.findall(rf"^{key}: (.*)$", git(root, "log", "--format=%B"), re.M)


def test_demo_finishes_and_its_figures_match_git_log(tmp_path: Path) -> None:
    root = tmp_path / "demo"
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    out = subprocess.run([sys.executable, "-m", "gitspace", "demo", "--dir", str(root)],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "no model is called" in out.stdout and "scripted, not a model" in out.stdout
    shown = figures(out.stdout)

    log = git(root, "log", "--format=%an%x09%B%x00")
    commits = [c for c in log.split("\0") if c.strip()]

    def count(tool: str, agent: str) -> int:
        return sum(1 for c in commits if f"Gitspace-Tool: {tool}\n" in c
                   and f"Gitspace-Agent: {agent}\n" in c)

    assert shown["moves"] == count("move", "maze-runner") == 20
    assert shown["restores"] == count("restore", "maze-runner") == shown["dead_ends"] == 4
    assert shown["checkpoints"] == len(git(root, "tag", "-l", "gitspace/*").split()) == 6
    assert shown["final_path"] == json.loads((root / "maze/position.json").read_text())["moves"]
    agents = trailer_values(root, "Gitspace-Agent")
    assert shown["ops"] == sum(1 for a in agents if a in ("maze-runner", "journal-reader"))

    created = [json.loads(a)["path"] for c in commits if "Gitspace-Tool: create\n" in c
               for a in re.findall(r"^Gitspace-Args: (.*)$", c, re.M)]
    chunk_files = [p for p in created if re.fullmatch(r"summaries/\d{4}/[^/]+\.md", p)]
    assert shown["chunks"] == len(chunk_files) == len(list((root / "summaries").glob("2*/*.md")))
    assert shown["entries"] == 2048
    # The call tree: the journal-reader's session, then each window's child, as sessions say.
    listed = json.loads(subprocess.run([sys.executable, "-m", "gitspace", "-C", str(root),
                                        "sessions", "--json"], capture_output=True, text=True,
                                       env=env, timeout=60).stdout)
    [journal] = [s for s in listed if s["agent"] == "journal-reader" and not s["parent_session"]]
    children = [s for s in listed if s["parent_session"] == journal["session"]]
    assert shown["delegated"] == len(children) >= shown["chunks"]
    tree = out.stdout[out.stdout.index("Call tree of the journal"):].splitlines()
    assert tree[1].split()[0] == journal["session"]
    assert [line.split()[1] for line in tree[2:6]] == [c["session"] for c in children[:4]]
    assert shown["journal"] == (root / "journal/worklog.jsonl").stat().st_size
    assert f"git -C {root} log" in out.stdout
    assert out.stdout.rstrip().endswith(f"gitspace ui {root}")  # make demo ends with the view
    assert_clean(root)
    git(root, "fsck", "--no-progress")


def test_demo_refuses_a_folder_that_is_not_empty(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine\n")
    out = subprocess.run([sys.executable, "-m", "gitspace", "demo", "--dir", str(tmp_path)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and "is not empty" in out.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]
