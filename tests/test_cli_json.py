"""docs/json.md, the field lists in cli/jsonout.py and what the commands print all agree: the
JSON schema is a contract only if the three cannot drift apart."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from claude_session import three_writes
from conftest import git, gitspace_cli, ops

import gitspace
from gitspace.agent.session import Session
from gitspace.cli import jsonout

DOC = Path(__file__).resolve().parent.parent / "docs" / "json.md"


def documented() -> dict[str, list[str]]:
    """kind -> the fields its table in docs/json.md lists, in order."""
    out: dict[str, list[str]] = {}
    kind = None
    for line in DOC.read_text().splitlines():
        heading = re.fullmatch(r"### `(\w+)`", line)
        if heading:
            kind = heading.group(1)
            out[kind] = []
            continue
        row = re.match(r"\| `(\w+)` \|", line)
        if row and kind is not None:
            out[kind].append(row.group(1))
    return out


def test_the_doc_lists_exactly_the_fields_of_every_kind() -> None:
    assert documented() == jsonout.FIELDS
    assert f"(schema {jsonout.SCHEMA})" in DOC.read_text().splitlines()[0]


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """What each documented command prints with --json, on one small workspace."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(tmp_path_factory.mktemp("json-home")))
        mp.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
        root = tmp_path_factory.mktemp("json") / "ws"
        with gitspace.init(root, agent="a", session="json-session") as ws:
            ws.call("create", {"path": "a.md", "file_text": "a\n"})
            ws.call("checkpoint", {"name": "cp"})
            ws.call("checkpoint", {"name": "claude-code-1a2b3c4d-turn-1"})  # a harness's turn
        Session("json-session", "a task", "a", "test", True, status="done", root=root).save()
        git(root.parent, "init", "-q", "--bare", "remote.git")
        git(root, "remote", "add", "origin", str(root.parent / "remote.git"))
        assert gitspace_cli(root, "hooks", "install", "claude-code").returncode == 0

        def run(*args: str) -> object:
            out = gitspace_cli(root, *args, "--json")
            assert out.returncode in (0, 4), out.stderr
            return json.loads(out.stdout)

        found = {
            "log": run("log"), "show": run("show", "HEAD"), "status": run("status"),
            "checkpoints": run("checkpoints"), "branches": run("branches"),
            "result": run("call", "create", "--args", '{"path": "b.md", "file_text": "b"}'),
            "verify": run("verify"), "sessions": run("sessions"),
            "session": run("sessions", "show", "json-session"),
        }
        found.update({
            "tools": run("tools"), "attach": run("attach", "--agent", "bob"),
            "agents": run("agents"), "hooks": run("hooks", "status"), "turns": run("rewind"),
            "sync": run("sync"), "replay": run("replay"),
            "blame": run("blame", "a.md"), "provenance": run("provenance", "HEAD~3..HEAD"),
        })
        # No maze here: the policy gives up (exit 4), which still prints the run's JSON.
        found["run"] = run("run", "Escape the maze", "--policy", "maze")
        # A checkout of a person's own, recorded in place: a rewind there says what it took.
        own = root.parent / "own"
        git(root.parent, "init", "-q", "-b", "main", str(own))
        (own / "a.md").write_text("a\n")
        git(own, "add", "a.md")
        git(own, "commit", "-q", "-m", "mine")
        (own / "a.md").write_text("a, and more\n")
        assert gitspace_cli(own, "hooks", "install", "claude-code").returncode == 0
        follow = json.loads(gitspace_cli(own, "log", "-n", "1", "--json").stdout)[0]["op"]["id"]
        out = gitspace_cli(own, "rewind", follow, "--all", "--json")
        assert out.returncode == 0, out.stderr
        found["taken"] = json.loads(out.stdout)
        # Last: a fork checks out a branch of its own. (A Claude Code session, played.)
        three_writes(root, tmp_path_factory.mktemp("json-claude"))
        second = next(op.op_id for op in ops(root) if op.tool_use_id == "toolu_w2")
        found["fork"] = run("fork", second)
        return found


@pytest.mark.parametrize("kind", sorted(jsonout.FIELDS))
def test_each_command_prints_the_documented_fields(outputs: dict[str, object], kind: str) -> None:
    value = outputs[kind]
    first = value[0] if isinstance(value, list) else value
    assert isinstance(first, dict)
    assert list(first) == jsonout.FIELDS[kind]
    if isinstance(first.get("op"), dict):
        assert list(first["op"]) == jsonout.OP_FIELDS
    if kind == "session":
        assert [list(e) for e in first["ops"]][:1] == [jsonout.FIELDS["log"]]
    if kind == "tools":
        assert list(first["tools"][0]) == ["name", "description", "input_schema", "mutates",
                                           "origin", "example"]


def test_field_selection_is_checked_for_every_kind(outputs: dict[str, object]) -> None:
    for kind in jsonout.FIELDS:
        with pytest.raises(jsonout.UnknownField, match="Fields: "):
            jsonout.check(kind, ["no_such_field"])


@pytest.mark.parametrize(("data", "plain"), [
    ([{"line": 1, "text": 'say "hi"\\ \t\x01 é 𝄞 \u2028', "n": None, "ok": True, "no": False,
       "x": 1.5, "big": 10**30, "nan": float("nan"), "inf": float("-inf")}, {"k": "},\n    {"},
      {"k": ""}], True),
    ([{"a": 1}, {}], False),  # (an empty object: json's own)
    ([{"line": n, "text": f"line {n}", "key": None} for n in range(50)], True),
    ([], False),
    ([{"nested": {"a": 1}}], False),  # (not plain: json's own indenting)
    ([{"list": [1, 2]}, {"a": 1}], False),
    ([1, "two", None], False),
    ([{1: "a key that is no string"}], False),
    ({"a": [{"b": 1}]}, False),
])
def test_the_fast_rows_print_what_json_prints(data: object, plain: bool) -> None:
    # (blame's 5,000 lines are written by the C encoder a row at a time: byte for byte what
    # json.dumps(indent=2) writes, for every value a row can hold; anything else goes to it)
    assert jsonout.dumps(data) == json.dumps(data, indent=2, ensure_ascii=False)
    assert (jsonout._rows(json, data) is not None) == plain


def test_what_a_terminal_acts_on_is_spelled_in_ascii_text_too() -> None:
    # (long ASCII output such as blame's is checked with bytes.translate, not the pattern: the
    # same characters spelled, every C0 control and DEL among them, tab and line break kept)
    from gitspace.cli import lines

    for c in map(chr, range(0x2070)):
        text = f"a{c}b\n"
        assert lines.visible(text) == lines._CONTROL.sub(lines._spelled, text), repr(c)
    assert lines.visible("plain\tascii\n" * 1000) == "plain\tascii\n" * 1000
    assert lines.visible('{"a": "\x1b[2J"}') == '{"a": "\\x1b[2J"}'


def test_blame_json_is_what_the_generic_writer_writes() -> None:
    # (blame's lines are written a group at a time, each group's fields encoded once)
    from gitspace.cli import reads
    from gitspace.provenance.blame import Line

    found = [Line(n, text, commit, kind, "claude-code", None, session, None, "Write", 17, None,
                  prompt, key, "note")
             for n, (text, commit, kind, session, prompt, key) in enumerate([
                 ('say "hi" \\ é 𝄞 \u2028', "a" * 40, "agent", "s-1", None, "s_1::t_1"),
                 ("},\n    {", "a" * 40, "agent", "s-1", None, "s_1::t_1"),
                 ("\x1b[2J", "b" * 40, "person", None, "a \"prompt\"\n", None),
                 ("", "a" * 40, "agent", "s-1", None, "s_1::t_1"),
                 ("last", "a" * 40, "agent", "s-2", None, "s_2::t_1")], 1)]
    assert reads.blame_json(found) == jsonout.dumps([line.as_json() for line in found])
    assert reads.blame_json([]) == jsonout.dumps([]) == "[]"
    found[0].time = True  # (a value no group can be encoded for: the generic writer)
    assert reads.blame_json(found) == jsonout.dumps([line.as_json() for line in found])
