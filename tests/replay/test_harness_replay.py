"""Replay re-does Claude Code's file edits from their recorded input: the real ``claude`` binary
makes the branch (its real hooks record it), replay re-executes every Write and Edit, and a
commit whose files differ from what the recorded input gives is caught at that op."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from claude_code import ClaudeCode, new_session
from conftest import git, git_run, head, ops
from fake_anthropic import FakeAnthropic, text, tool_use

import gitspace
from gitspace.replay.engine import replay

GITSPACE = str(Path(sys.executable).parent / "gitspace")
LONG = "".join(f"line {i} of a long file\n" for i in range(300))  # > 4,096 characters


def gs(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([GITSPACE, "-C", str(root), *args], capture_output=True, text=True,
                          timeout=120)


def claude_branch(claude_code: ClaudeCode, fake: FakeAnthropic, root: Path) -> None:
    """A workspace whose history is one Claude Code session of edits of every kind replay
    must re-do exactly: line ends, curly quotes, replace_all, a deleted line, a created file,
    a long Write (its content elided to a blob) and a long new_string (omitted, then recovered)."""
    gitspace.init(root).close()
    assert gs(root, "hooks", "install", "claude-code").returncode == 0
    (root / "crlf.txt").write_bytes(b"alpha\r\nbeta\r\ngamma\r\n")
    (root / "quotes.md").write_text("She said \u201chello\u201d and it\u2019s fine.\n")
    (root / "list.txt").write_text("keep\nold\nkeep\nold\ndrop me\n")
    sid = new_session()
    p = lambda name: str(root / name)  # noqa: E731
    calls: list[tuple[str, dict[str, Any]]] = [
        *[("Read", {"file_path": p(n)}) for n in ("crlf.txt", "quotes.md", "list.txt")],
        ("Write", {"file_path": p("notes/new.txt"), "content": "first\nsecond\n"}),
        ("Edit", {"file_path": p("crlf.txt"), "old_string": "beta", "new_string": "BETA\nextra"}),
        ("Edit", {"file_path": p("quotes.md"), "old_string": 'said "hello" and it\'s',
                  "new_string": 'said "bye" and it\'s'}),
        ("Edit", {"file_path": p("list.txt"), "old_string": "old", "new_string": "new",
                  "replace_all": True}),
        ("Edit", {"file_path": p("list.txt"), "old_string": "drop me", "new_string": ""}),
        ("Edit", {"file_path": p("created.txt"), "old_string": "", "new_string": "made\n"}),
        ("Write", {"file_path": p("long.txt"), "content": LONG}),
        ("Edit", {"file_path": p("long.txt"), "old_string": "line 7 of a long file\n",
                  "new_string": LONG.upper()}),
        ("Bash", {"command": "echo made by a shell > shell.txt"}),
    ]
    for i, (tool, args) in enumerate(calls):
        fake.reply(tool_use(f"toolu_{i:02d}", tool, args), stop_reason="tool_use", session=sid)
    fake.reply(text("done"), session=sid)
    claude_code.run_ok(root, "edit the files", session=sid,
                       tools=("Read", "Write", "Edit", "Bash"))
    fake.done()


def test_a_claude_code_branch_replays_with_its_edits_re_executed_and_a_forged_edit_is_caught(
        claude_code: ClaudeCode, fake_api: FakeAnthropic, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    claude_branch(claude_code, fake_api, root)
    harness = [op for op in ops(root) if op.source == "harness"]
    assert [op.tool for op in harness] == ["Write", *["Edit"] * 5, "Write", "Edit", "Bash"]
    long_edit = harness[7]
    assert set(long_edit.args["new_string"]) == {"$omitted", "bytes"}  # not in the ledger
    assert set(harness[6].args["content"]) == {"$blob", "bytes"}  # the file holds it

    out = gs(root, "replay", "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    report = json.loads(out.stdout)
    assert report["result"] == "match" and report["reexecuted"] == 8, report
    assert report["recorded_why"] == {"root commit": 1, "external op": 2, "harness command": 1}

    # The Edit of quotes.md, its tree changed and its trailers (and paths) kept.
    edit = next(c for c in git(root, "log", "--format=%H", "HEAD").split()
                if "quotes.md" in git(root, "log", "-1", "--format=%s", c))
    forged = forge(root, edit, "quotes.md", "She said \u201cbye\u201d and it\u2019s fine!\n")
    with gitspace.open(root) as ws:
        found = replay(ws, forged)
    d = found.divergence
    assert d is not None and d.commit == forged and d.tool == "Edit"
    assert d.op_id == harness[2].op_id and d.paths == ["quotes.md"]
    assert d.reason == ("re-doing Claude Code's Edit from its recorded input gives different "
                        "files than the commit has.")
    assert "-She said \u201cbye\u201d and it\u2019s fine!" in d.diff  # recorded
    assert "+She said \u201cbye\u201d and it\u2019s fine." in d.diff  # what the Edit gives
    assert found.reexecuted == 2  # the Write and the Edit of crlf.txt before it


def forge(root: Path, commit: str, path: str, content: str) -> str:
    """``commit`` again, with ``path`` holding ``content``: same parent, message and author."""
    blob = git(root, "hash-object", "-w", "--stdin", input=content.encode()).strip()
    index = root / ".git" / "forge-index"
    env = {"GIT_INDEX_FILE": str(index)}
    run = lambda *a, **k: subprocess.run(["git", *a], cwd=root, check=True, capture_output=True,  # noqa: E731
                                         env={**_env(), **env}, **k)
    run("read-tree", commit)
    run("update-index", "--add", "--cacheinfo", f"100644,{blob},{path}")
    tree = run("write-tree").stdout.decode().strip()
    index.unlink()
    author = git(root, "log", "-1", "--format=%an%n%ae%n%ad", "--date=raw", commit).splitlines()
    message = git(root, "log", "-1", "--format=%B", commit)
    return subprocess.run(
        ["git", "commit-tree", tree, "-p", head(root, f"{commit}^"), "-F", "-"], cwd=root,
        input=message.rstrip("\n").encode() + b"\n", capture_output=True, check=True,
        env={**_env(), "GIT_AUTHOR_NAME": author[0], "GIT_AUTHOR_EMAIL": author[1],
             "GIT_AUTHOR_DATE": author[2]}).stdout.decode().strip()


def _env() -> dict[str, str]:
    from conftest import git_env

    return git_env()


# -- the other harnesses' file edits, from payloads shaped as their hooks send them ------------

def send(name: str, data: dict[str, Any]) -> None:
    import io

    from gitspace.harness import hook

    err = io.StringIO()
    code = hook.main(["hook", name], stdin=io.BytesIO(json.dumps(data).encode()),
                     stdout=io.StringIO(), stderr=err)
    assert code == 0 and err.getvalue() == "", err.getvalue()


def call(root: Path, harness: str, tool: str, args: dict[str, Any], effect: dict[str, bytes | None],
         n: int) -> None:
    """One tool call of ``harness``: its before hook, the tool's effect on the files (as the
    harness would write them), its after hook."""
    common = {"session_id": "s-1", "cwd": str(root), "transcript_path": None}
    names = {"claude-code": ("PreToolUse", "PostToolUse"), "codex": ("PreToolUse", "PostToolUse"),
             "gemini-cli": ("BeforeTool", "AfterTool")}
    if harness == "cursor":
        payload = {"conversation_id": "c-1", "generation_id": "g-1",
                   "workspace_roots": [str(root)], "hook_event_name": "afterFileEdit",
                   "file_path": str(root / args["file_path"]), "edits": args["edits"]}
        _effect(root, effect)
        send(harness, payload)
        return
    before, after = names[harness]
    base = {**common, "tool_name": tool, "tool_input": args, "tool_use_id": f"t{n}"}
    send(harness, {**base, "hook_event_name": before})
    _effect(root, effect)
    send(harness, {**base, "hook_event_name": after, "tool_response": {}})


def _effect(root: Path, effect: dict[str, bytes | None]) -> None:
    for rel, data in effect.items():
        target = root / rel
        if data is None:
            target.unlink()
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)


def harness_ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    gitspace.init(root).close()
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("def main():\n    print('hi')\n    return 0\n")
    (root / "dos.txt").write_bytes(b"one\r\ntwo\r\n")
    (root / "gone.txt").write_text("bye\n")
    (root / "notes.md").write_text("a\nb\na\n")
    assert gs(root, "snapshot").returncode == 0
    return root


# (harness, tool, input, the files it leaves) for each harness's file edits.
CALLS: list[tuple[str, str, dict[str, Any], dict[str, bytes | None]]] = [
    ("claude-code", "MultiEdit", {"file_path": "src/app.py", "edits": [
        {"old_string": "'hi'", "new_string": "'hello'"},
        {"old_string": "return 0", "new_string": "return 1", "replace_all": False}]},
     {"src/app.py": b"def main():\n    print('hello')\n    return 1\n"}),
    ("gemini-cli", "replace", {"file_path": "notes.md", "old_string": "a\n", "new_string": "A\n",
                               "expected_replacements": 2}, {"notes.md": b"A\nb\nA\n"}),
    ("gemini-cli", "write_file", {"file_path": "g.txt", "content": "from gemini\n"},
     {"g.txt": b"from gemini\n"}),
    ("gemini-cli", "replace", {"file_path": "dos.txt", "old_string": "two", "new_string": "2"},
     {"dos.txt": b"one\r\n2\r\n"}),
    ("cursor", "Edit", {"file_path": "notes.md", "edits": [{"old_string": "b", "new_string": "B"}]},
     {"notes.md": b"A\nB\nA\n"}),
    ("codex", "apply_patch", {"command": "\n".join([
        "*** Begin Patch", "*** Update File: src/app.py", "@@ def main():",
        "-    print('hello')", "+    print('bonjour')", "     return 1",
        "*** Add File: docs/new.md", "+# New", "+text",
        "*** Delete File: gone.txt",
        "*** Update File: dos.txt", "*** Move to: moved.txt", "@@", " one", "-2", "+deux",
        "*** End Patch"])},
     {"src/app.py": b"def main():\n    print('bonjour')\n    return 1\n",
      "docs/new.md": b"# New\ntext\n", "gone.txt": None, "dos.txt": None,
      "moved.txt": b"one\r\ndeux\r\n"}),
]


def test_every_harness_file_edit_is_re_executed_and_a_changed_result_diverges(
        tmp_path: Path) -> None:
    root = harness_ws(tmp_path)
    start = head(root)
    for n, (harness, tool, args, effect) in enumerate(CALLS):
        call(root, harness, tool, args, effect, n)
    recorded = [op for op in ops(root) if op.source == "harness"]
    assert [(op.agent, op.tool) for op in recorded] == [(h, t) for h, t, _, _ in CALLS]
    with gitspace.open(root) as ws:
        report = replay(ws, head(root), start)
    assert report.ok and report.reexecuted == len(CALLS), report.divergence
    # Each op again, its files changed under its trailers: caught at that op.
    for commit in git(root, "rev-list", f"{start}..HEAD").split():
        paths = git(root, "diff-tree", "--no-commit-id", "--name-only", "-r", commit).split()
        kept = next(p for p in paths if git_run(root, "cat-file", "-e", f"{commit}:{p}").returncode == 0)
        forged = forge(root, commit, kept, "not what the tool wrote\n")
        with gitspace.open(root) as ws:
            d = replay(ws, forged, start).divergence
        assert d is not None and d.commit == forged, (commit, d)
        assert "from its recorded input gives different files" in d.reason, d.reason


def record(root: Path, entry: dict[str, Any], effect: dict[str, bytes | None]) -> None:
    """A call recorded through ``gitspace record`` (which believes what it is told)."""
    _effect(root, effect)
    out = subprocess.run([GITSPACE, "-C", str(root), "record"], input=json.dumps(entry),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr


def test_an_edit_claude_code_would_have_refused_or_that_cannot_be_checked_diverges(
        tmp_path: Path) -> None:
    root = harness_ws(tmp_path)
    cases: list[tuple[dict[str, Any], dict[str, bytes | None], str]] = [
        ({"file_path": "notes.md", "old_string": "a", "new_string": "z"},
         {"notes.md": b"z\nb\nz\n"}, "refused: old_string occurs 2 times and replace_all is false"),
        ({"file_path": "notes.md", "old_string": "absent", "new_string": "z"},
         {"notes.md": b"z\n"}, "refused: old_string is not in the file"),
        ({"file_path": "new.txt", "old_string": "x", "new_string": "y"},
         {"new.txt": b"y\n"}, "refused: the file does not exist"),
        ({"file_path": "notes.md", "old_string": "b",
          "new_string": {"$omitted": "ab" * 20, "bytes": 5000}},
         {"notes.md": b"a\n" + b"B" * 5000 + b"\na\n"},
         "cannot be checked: its new_string was not recorded, and no text around the change in "
         "notes.md has the recorded hash and size"),
        ({"input": {"$omitted": "cd" * 20, "bytes": 70000}},
         {"notes.md": b"q\n"}, "cannot be checked: part of its input was not recorded"),
    ]
    for args, effect, says in cases:
        start = head(root)
        record(root, {"tool": "Edit", "agent": "claude-code", "args": args, "cwd": str(root),
                      "paths": sorted(effect)}, effect)
        with gitspace.open(root) as ws:
            d = replay(ws, head(root), start).divergence
        assert d is not None and d.tool == "Edit" and says in d.reason, (says, d)
        git(root, "reset", "-q", "--hard", start)  # the next case starts from the same files


def test_a_shell_call_is_taken_as_recorded_but_only_over_the_paths_it_lists(
        tmp_path: Path) -> None:
    root = harness_ws(tmp_path)
    start = head(root)
    call(root, "claude-code", "Bash", {"command": "echo x > x.txt"}, {"x.txt": b"x\n"}, 1)
    with gitspace.open(root) as ws:
        report = replay(ws, head(root), start, allow_empty=True)
    assert report.ok and report.recorded_why == {"harness command": 1} and not report.reexecuted
    with gitspace.open(root) as ws:
        assert replay(ws, head(root), start).empty  # a shell call alone re-runs nothing
    bash = head(root)
    forged = forge(root, bash, "y.txt", "slipped in\n")  # a path the op does not list
    with gitspace.open(root) as ws:
        d = replay(ws, forged, start).divergence
    assert d is not None and d.commit == forged
    assert "a harness op must change exactly the paths it records" in d.reason


def test_an_omitted_old_string_comes_back_from_the_commit_when_its_hash_matches(
        tmp_path: Path) -> None:
    import hashlib

    root = harness_ws(tmp_path)
    block = "".join(f"an old line {i}\n" for i in range(400))  # > 4,096 characters
    (root / "big.txt").write_text(f"top\n{block}bottom\n")
    assert gs(root, "snapshot").returncode == 0
    start = head(root)
    omitted = {"$omitted": hashlib.sha1(block.encode()).hexdigest(), "bytes": len(block.encode())}
    record(root, {"tool": "Edit", "agent": "claude-code", "cwd": str(root), "paths": ["big.txt"],
                  "args": {"file_path": "big.txt", "old_string": omitted, "new_string": "new\n"}},
           {"big.txt": b"top\nnew\nbottom\n"})
    with gitspace.open(root) as ws:
        report = replay(ws, head(root), start)
    assert report.ok and report.reexecuted == 1, report.divergence
    git(root, "reset", "-q", "--hard", start)
    record(root, {"tool": "Edit", "agent": "claude-code", "cwd": str(root), "paths": ["big.txt"],
                  "args": {"file_path": "big.txt", "old_string": omitted, "new_string": "new\n"}},
           {"big.txt": b"top\nnew\nbottom, and more\n"})  # not what that Edit gives
    with gitspace.open(root) as ws:
        d = replay(ws, head(root), start).divergence
    assert d is not None and "cannot be checked: its old_string was not recorded" in d.reason
