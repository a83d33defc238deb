"""The real ``claude`` binary in a person's own checkout, then plain git: a session writes a new
file and edits another, the person types a line and commits; then amend, a rebase across
upstream changes, a squash and a cherry-pick. After each, the note on the new commit parses by
the Git AI Standard and attributes each line where it now is. Then a push, a fresh clone that
fetches the notes the documented way, ``gitspace blame`` there (from the notes alone), and
``gitspace gc`` in the checkout, which loses nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

from authored import by_line, gs, note, person
from claude_code import ClaudeCode, new_session
from fake_anthropic import FakeAnthropic, text, tool_use

from gitspace.provenance import authorship

TOOLS = ("Write", "Read", "Edit", "Bash")
APP = "def main():\n    print('hi')\n"


def repository(parent: Path) -> Path:
    root = parent / "repo"
    root.mkdir()
    person(root, "init", "-q", "-b", "main")
    person(root, "config", "user.name", "Zoë van Dijk")
    person(root, "config", "user.email", "zoe@example.invalid")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text(APP)
    person(root, "add", ".")
    person(root, "commit", "-q", "-m", "first")
    return root


def session(claude: ClaudeCode, fake: FakeAnthropic, root: Path) -> str:
    sid = new_session()
    for block in (
        tool_use("toolu_w", "Write", {"file_path": str(root / "src" / "new.py"),
                                      "content": "def parse(text):\n    return text.split()\n"}),
        tool_use("toolu_r", "Read", {"file_path": str(root / "src" / "app.py")}),
        tool_use("toolu_e", "Edit", {"file_path": str(root / "src" / "app.py"),
                                     "old_string": "    print('hi')\n",
                                     "new_string": "    print('hello')\n    return 0\n"}),
    ):
        fake.reply(block, stop_reason="tool_use", session=sid)
    fake.reply(text("done"), session=sid)
    claude.run_ok(root, "Add a parser and make main return 0", session=sid, tools=TOOLS)
    return sid


def test_claude_codes_lines_keep_their_author_through_plain_git_and_a_clone(
        claude_code: ClaudeCode, fake_api: FakeAnthropic, tmp_path: Path) -> None:
    root = repository(tmp_path)
    gs(root, "hooks", "install", "claude-code")
    sid = session(claude_code, fake_api, root)
    fake_api.done()
    # The person types a line, and commits with plain git.
    (root / "src" / "new.py").write_text((root / "src" / "new.py").read_text()
                                         + "# checked by hand\n")
    person(root, "add", "src")
    done = person(root, "commit", "-q", "-m", "parser")
    assert done.stdout == "" and done.stderr == ""
    expected_new = {"def parse(text):": "agent:Write", "    return text.split()": "agent:Write",
                    "# checked by hand": "person"}
    expected_app = {"def main():": None, "    print('hello')": "agent:Edit",
                    "    return 0": "agent:Edit"}
    assert by_line(root, "HEAD", "src/new.py") == expected_new
    assert by_line(root, "HEAD", "src/app.py") == expected_app
    found = note(root)
    assert found is not None
    [record] = found.sessions.values()
    assert record["agent_id"] == {"tool": "claude", "id": sid, "model": "fake-model"}
    assert list(found.sessions) == [authorship.session_key("claude", sid)]
    assert {t["tool_use_id"] for t in found.traces.values()} == {"toolu_w", "toolu_e"}

    # amend (a hand line), then a rebase across an upstream change above the agent's lines.
    (root / "src" / "app.py").write_text((root / "src" / "app.py").read_text() + "# amended\n")
    person(root, "commit", "-q", "-a", "--amend", "--no-edit")
    expected_app["# amended"] = "person"
    assert by_line(root, "HEAD", "src/app.py") == expected_app
    person(root, "switch", "-q", "-c", "upstream", "HEAD~1")
    (root / "src" / "app.py").write_text("# upstream\n" + APP)
    person(root, "commit", "-q", "-a", "-m", "upstream")
    person(root, "switch", "-q", "main")
    person(root, "rebase", "-q", "upstream")
    moved = {"# upstream": None, **expected_app}
    assert by_line(root, "HEAD", "src/app.py") == moved
    assert by_line(root, "HEAD", "src/new.py") == expected_new
    key = next(k for k in note(root).files["src/app.py"] if k.startswith("s_"))  # type: ignore[union-attr]
    assert note(root).files["src/app.py"][key] == [(3, 4)]  # type: ignore[union-attr]  (was 2-3)

    # squash the two commits of a branch; cherry-pick the result elsewhere.
    person(root, "switch", "-q", "-c", "two", "upstream")
    person(root, "cherry-pick", "main")
    assert by_line(root, "HEAD", "src/app.py") == moved
    (root / "src" / "more.py").write_text("more = 1\n")
    person(root, "add", ".")
    person(root, "commit", "-q", "-m", "more")
    person(root, "switch", "-q", "-c", "squashed", "upstream")
    person(root, "merge", "-q", "--squash", "two")
    person(root, "commit", "-q", "-m", "squashed")
    assert by_line(root, "HEAD", "src/app.py") == moved
    assert by_line(root, "HEAD", "src/new.py") == expected_new
    person(root, "switch", "-q", "main")

    # A push, a fresh clone that fetches the notes, and blame there from the notes alone.
    bare = tmp_path / "remote.git"
    person(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    person(root, "remote", "add", "origin", str(bare))
    person(root, "push", "-q", "origin", "main")
    clone = tmp_path / "clone"
    person(tmp_path, "clone", "-q", str(bare), str(clone))
    person(clone, "fetch", "-q", "origin", "refs/notes/ai:refs/notes/ai")
    blamed = json.loads(gs(clone, "blame", "src/app.py", "--json").stdout)
    assert [(b["kind"], b["tool"]) for b in blamed] == [
        ("person", None), ("person", None), ("agent", "Edit"), ("agent", "Edit"),
        ("person", None)]
    assert {b["session"] for b in blamed if b["kind"] == "agent"} == {sid}
    assert all(b["prompt"] is None for b in blamed)  # no transcript in the clone
    local = json.loads(gs(root, "blame", "src/app.py", "--json").stdout)
    assert local[2]["prompt"] == "Add a parser and make main return 0"  # where it is local
    shown = person(clone, "notes", "--ref=ai", "show", "HEAD").stdout
    assert "parser" not in shown.split("---", 1)[1], "no transcript text left the machine"

    # gc prunes what the commits absorbed and loses nothing: blame still says it.
    gs(root, "gc", "--keep-days", "0")
    assert "refs/gitspace/lines/main" not in person(root, "for-each-ref").stdout
    assert json.loads(gs(root, "blame", "src/app.py", "--json").stdout) == local
