"""provenance/blame.py and report.py: ``gitspace blame`` says per line which call (harness,
session, op, tool, time, the turn's prompt from the local transcript, redacted) or person wrote
it; ``gitspace provenance`` sums a commit or range up. Notes other compliant tools wrote (the
standard's own examples) are shown too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from authored import agent_writes, checkout, gs, person
from hookcalls import SID, payload, run_hook

from gitspace.provenance import authorship

NOTES = Path(__file__).parent / "notes"
SECRET = "sk-ant-api03-Zq8XbW2mN5vR7tY1uI3oP6aS9dF4gH0jK"


def transcript(folder: Path, prompt: str) -> Path:
    """Claude Code's transcript of session SID: the prompt, and the reply calling toolu_p."""
    path = folder / f"{SID}.jsonl"
    entries = [
        {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": SID,
         "message": {"role": "user", "content": prompt}},
        {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "sessionId": SID,
         "message": {"id": "msg_1", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
                     "content": [{"type": "tool_use", "id": "toolu_p", "name": "Write",
                                  "input": {}}]}},
        {"type": "user", "uuid": "u2", "parentUuid": "a1", "sessionId": SID,
         "message": {"role": "user", "content": [{"type": "tool_result",
                                                  "tool_use_id": "toolu_p", "content": "ok"}]}},
    ]
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    return path


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = checkout(tmp_path)
    path = transcript(tmp_path, f"Add the parser, the key is {SECRET}\nand more detail")
    code, err = run_hook(payload(root, "UserPromptSubmit", prompt="(the prompt)",
                                 transcript_path=str(path)))
    assert code == 0, err
    agent_writes(root, "src/parse.py", "def parse():\n    return 1\n", "toolu_p")
    (root / "src" / "parse.py").write_text("def parse():\n    return 1\n# by hand\n")
    person(root, "add", ".")
    person(root, "commit", "-q", "-m", "the parser")
    return root


def test_blame_names_the_call_its_prompt_redacted_and_the_person(root: Path) -> None:
    lines = json.loads(gs(root, "blame", "src/parse.py", "--json").stdout)
    first, _, mine = lines
    assert first["kind"] == "agent" and first["author"] == "claude-code"
    assert first["tool"] == "Write" and first["session"] == SID and first["source"] == "note"
    assert first["model"] == "claude-sonnet-4-5-20250929"
    assert first["prompt"].startswith("Add the parser, the key is ")
    assert SECRET not in first["prompt"] and "[REDACTED]" in first["prompt"]
    assert "more detail" not in first["prompt"]  # the first line only
    assert f"op {first['op']} (" in gs(root, "show", first["op"]).stdout  # show takes it
    assert mine["kind"] == "person" and mine["author"] == "Zoë van Dijk" and mine["text"] == \
        "# by hand"
    text = gs(root, "blame", "src/parse.py").stdout
    assert "claude-code" in text and "op " in text and "Write" in text and SECRET not in text
    # Nothing of the transcript left the machine: the note holds names and ids alone.
    shown = person(root, "notes", "--ref=ai", "show", "HEAD").stdout
    assert "parser" not in shown.split("---", 1)[1] and SECRET not in shown


def test_blame_of_the_work_tree_finds_calls_not_committed_yet(root: Path) -> None:
    agent_writes(root, "src/later.py", "later = 1\n", "toolu_l")
    (root / "src" / "later.py").write_text("later = 1\nmine = 2\n")
    lines = json.loads(gs(root, "blame", "src/later.py", "--json").stdout)
    assert [(x["kind"], x["source"]) for x in lines] == [("agent", "line"), ("person", "git")]
    assert set(lines[0]["commit"]) == {"0"}


def test_the_standards_example_notes_are_blamed_as_other_tools_wrote_them(tmp_path: Path) -> None:
    root = tmp_path / "r"
    root.mkdir()
    person(root, "init", "-q", "-b", "main")
    (root / "src").mkdir()
    (root / "src" / "main.rs").write_text("".join(f"line {n}\n" for n in range(1, 51)))
    (root / "src" / "lib.rs").write_text("".join(f"lib {n}\n" for n in range(1, 51)))
    person(root, "add", ".")
    person(root, "commit", "-q", "-m", "written with other tools")
    for name in ("spec-1.2.5-sessions.txt", "spec-1.2.7-mixed.txt"):
        person(root, "notes", "--ref=ai", "add", "-f", "-F", str(NOTES / name), "HEAD")
        lines = json.loads(gs(root, "blame", "src/main.rs", "--json").stdout)
        assert lines[0]["kind"] == "agent" and lines[0]["source"] == "note"
        assert lines[0]["harness"] in ("cursor", "claude") and lines[0]["op"] is None
        assert lines[0]["key"].startswith("s_c9883b05a2487d::")
        assert lines[10]["kind"] == "person" and lines[10]["source"] == "git"  # untracked
        libs = json.loads(gs(root, "blame", "src/lib.rs", "--json").stdout)
        assert libs[0]["kind"] == "agent"
    sessions = authorship.parse((NOTES / "spec-1.2.5-sessions.txt").read_text())
    person(root, "notes", "--ref=ai", "add", "-f", "-F", str(NOTES / "spec-1.2.5-sessions.txt"),
           "HEAD")
    lines = json.loads(gs(root, "blame", "src/main.rs", "--json").stdout)
    assert lines[41]["kind"] == "person" and lines[41]["author"] == "Developer"
    assert lines[0]["model"] == sessions.sessions["s_c9883b05a2487d"]["agent_id"]["model"]
    summary = json.loads(gs(root, "provenance", "--json").stdout)
    assert summary["total"]["agent_lines"] == 16 + 7 + 50 and \
        summary["total"]["person_lines"] == 9


def test_provenance_sums_a_commit_and_a_range_up(root: Path) -> None:
    summary = json.loads(gs(root, "provenance", "--json").stdout)
    assert summary["total"] == {"commits": 1, "noted": 1, "added": 3, "agent_lines": 2,
                                "person_lines": 1, "unattested": 0}
    [agent] = summary["agents"]
    assert agent["agent"] == "claude-code" and agent["model"] == "claude-sonnet-4-5-20250929"
    assert summary["people"] == [{"author": "Zoë van Dijk", "lines": 1}]
    assert json.loads(gs(root, "provenance", "HEAD~1..HEAD", "--json").stdout)["total"] == \
        summary["total"]
    text = gs(root, "provenance").stdout
    assert "2 by agents, 1 by people" in text
    assert gs(root, "provenance", "--format", "git-ai").stdout == \
        person(root, "notes", "--ref=ai", "show", "HEAD").stdout


def test_bad_revisions_and_paths_are_refused_with_a_sentence(root: Path) -> None:
    for args in (("blame", "no/such/file"), ("blame", "src/parse.py", "nope"),
                 ("provenance", "nope"), ("provenance", "--", "-x"), ("notes", "attach", "nope")):
        done = gs(root, *args, check=False)
        assert done.returncode in (1, 2), (args, done.stdout)
        assert "Traceback" not in done.stderr and done.stderr.strip(), args
    # A revision that git would read as one of its options never reaches it.
    (root / "elsewhere.txt").write_text("not in the history\n")
    done = gs(root, "blame", "src/parse.py", "--", "--contents=elsewhere.txt", check=False)
    assert done.returncode == 1 and "reads as an option" in done.stderr, done.stderr


def test_blame_of_many_hunks_names_each_line_where_git_blame_does(tmp_path: Path) -> None:
    # Hunks of several commits interleaved (agent calls, the person's edits), lines that read
    # as blame's own headers or start with a tab, a path with a space and an accent, the work
    # tree's uncommitted lines: each line's commit and text are git blame's, the agent's lines
    # the agent's.
    root = checkout(tmp_path)
    rel = "src/a é \"b\".txt"
    lines = [f"line {n}\n" for n in range(60)]
    lines[7] = f"{'a' * 40} 1 1 1\n"
    lines[13] = "\tfilename x\n"
    agent_writes(root, rel, "".join(lines), "toolu_m0")
    person(root, "add", ".")
    person(root, "commit", "-q", "-m", "the agent's file")
    for c in range(1, 4):
        for n in range(c, 60, 7):
            lines[n] = f"call {c} wrote {n}\n"
        agent_writes(root, rel, "".join(lines), f"toolu_m{c}")
        lines[c * 11] = f"the person wrote {c * 11}\n"
        (root / rel).write_text("".join(lines))
        person(root, "add", ".")
        person(root, "commit", "-q", "-m", f"round {c}")
    lines[5] = "not committed\n"
    (root / rel).write_text("".join(lines))
    for rev in ("HEAD", "HEAD~2", None):
        found = json.loads(gs(root, "blame", rel, *([rev] if rev else []), "--json").stdout)
        porcelain = person(root, "blame", "--line-porcelain", *([rev] if rev else []), "--",
                           rel).stdout.splitlines()
        theirs = [row.split()[0] for i, row in enumerate(porcelain)
                  if i == 0 or porcelain[i - 1].startswith("\t")]  # (each line's header)
        texts = [row[1:] for row in porcelain if row.startswith("\t")]
        assert [x["line"] for x in found] == list(range(1, len(texts) + 1))
        assert [x["commit"] for x in found] == theirs
        assert [x["text"] for x in found] == texts
    mine = {x["line"]: x for x in found}
    assert mine[12]["kind"] == "person" and mine[34]["kind"] == "person"
    assert mine[1]["kind"] == mine[8]["kind"] == mine[14]["kind"] == "agent"
    assert mine[2]["kind"] == "agent" and mine[2]["op"] and mine[2]["text"] == "call 1 wrote 1"
    assert mine[8]["text"] == f"{'a' * 40} 1 1 1" and mine[14]["text"] == "\tfilename x"
    assert mine[6]["text"] == "not committed" and set(mine[6]["commit"]) == {"0"}
