"""``gitspace hook claude-code`` fed payloads shaped exactly as Claude Code sends them (see
test_claude_code_wire.py), in-process through its real entry point: outside edits kept apart,
interleaved calls, failures caught up by the next call, and hostile payloads."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import assert_clean, changed_files, files, git, ops, state
from hookcalls import SID, call, payload, run_hook, users_repo, write

import gitspace
from gitspace.harness import hook
from gitspace.harness import payload as harness_payload
from gitspace.harness import state as hook_state


@pytest.fixture
def root(tmp_path: Path) -> Path:
    gitspace.init(tmp_path / "ws").close()
    return tmp_path / "ws"


def harness(root: Path) -> list[Any]:
    return [op for op in ops(root) if op.source == "harness"]


def test_a_persons_edit_between_calls_is_an_op_of_its_own(root: Path) -> None:
    a = str(root / "a.txt")
    call(root, "Write", {"file_path": a, "content": "one\n"}, "toolu_1", write(root, "a.txt", "one\n"))
    (root / "a.txt").write_text("one\nby a person\n")  # between the two calls
    (root / "notes.txt").write_text("a person's note\n")
    call(root, "Edit", {"file_path": a, "old_string": "one", "new_string": "ONE"}, "toolu_2",
         write(root, "a.txt", "ONE\nby a person\n"))
    sources = [(op.source, op.tool) for op in ops(root)]
    assert sources == [("init", "init"), ("harness", "Write"), ("external", "external_edit"),
                       ("harness", "Edit")]
    assert git(root, "show", "HEAD~1:a.txt") == "one\nby a person\n"
    assert "-one\n+ONE" in git(root, "diff", "HEAD~1", "HEAD")
    # The person's other file is not folded into the Edit: a shell command records it first.
    assert changed_files(root) == ["a.txt"]
    call(root, "Bash", {"command": "touch x"}, "toolu_3", write(root, "x", ""))
    assert [op.tool for op in ops(root)[-2:]] == ["external_edit", "Bash"]
    assert changed_files(root, "HEAD~1") == ["notes.txt"] and changed_files(root) == ["x"]
    assert_clean(root)


def test_a_failed_call_records_only_what_it_changed(root: Path) -> None:
    call(root, "Bash", {"command": "false"}, "toolu_1", failed="Exit code 1")
    assert harness(root) == []
    call(root, "Bash", {"command": "echo z > z; exit 3"}, "toolu_2", write(root, "z", "z\n"),
         failed="Exit code 3")
    (op,) = harness(root)
    assert op.paths == ("z",) and "The call failed (Exit code 3)" in git(root, "log", "-1",
                                                                         "--format=%B")
    assert_clean(root)


def test_a_shell_command_never_claims_a_running_file_tools_file(root: Path) -> None:
    # Parallel calls (subagents, other sessions): a Write announced before the Bash finished.
    run_hook(payload(root, "PreToolUse", "Bash", {"command": "make"}, "toolu_b"))
    run_hook(payload(root, "PreToolUse", "Write", {"file_path": str(root / "w"), "content": "w"},
                     "toolu_w"))
    (root / "w").write_text("w")
    (root / "built").write_text("made\n")
    run_hook(payload(root, "PostToolUse", "Bash", {"command": "make"}, "toolu_b"))
    run_hook(payload(root, "PostToolUse", "Write", {"file_path": str(root / "w"), "content": "w"},
                     "toolu_w"))
    assert [(op.tool, op.paths) for op in harness(root)] == [("Bash", ("built",)),
                                                             ("Write", ("w",))]
    assert_clean(root)


def test_overlapping_shell_commands_share_what_they_changed_and_say_so(root: Path) -> None:
    run_hook(payload(root, "PreToolUse", "Bash", {"command": "a"}, "toolu_a"))
    run_hook(payload(root, "PreToolUse", "Bash", {"command": "b"}, "toolu_b"))
    (root / "from-a").write_text("a")
    (root / "from-b").write_text("b")
    run_hook(payload(root, "PostToolUse", "Bash", {"command": "b"}, "toolu_b"))
    run_hook(payload(root, "PostToolUse", "Bash", {"command": "a"}, "toolu_a"))
    (op,) = harness(root)
    assert op.tool_use_id == "toolu_b" and op.paths == ("from-a", "from-b")
    assert "Other commands ran at the same time (Bash toolu_a)" in git(root, "log", "-1",
                                                                       "--format=%B")
    assert_clean(root)


def test_an_edit_made_before_overlapping_commands_stays_an_outside_edit(root: Path) -> None:
    (root / "by-a-person").write_text("before any command\n")
    run_hook(payload(root, "PreToolUse", "Bash", {"command": "a"}, "toolu_a"))
    run_hook(payload(root, "PreToolUse", "Bash", {"command": "b"}, "toolu_b"))
    (root / "from-b").write_text("b")
    run_hook(payload(root, "PostToolUse", "Bash", {"command": "b"}, "toolu_b"))
    run_hook(payload(root, "PostToolUse", "Bash", {"command": "a"}, "toolu_a"))
    assert [(op.source, op.paths) for op in ops(root)[1:]] == [("external", None),
                                                               ("harness", ("from-b",))]
    assert changed_files(root, "HEAD~1") == ["by-a-person"]
    assert_clean(root)


@pytest.mark.parametrize("lock", ["refs/heads/main.lock", "index.lock"])
def test_a_failure_mid_call_is_caught_up_by_the_next_call(root: Path, lock: str) -> None:
    # A git lock left by some other process: the ref cannot move (refs/heads/main.lock), or it
    # moved and the index cannot follow (index.lock), so the op is rolled back.
    a, b = str(root / "a.txt"), str(root / "b.txt")
    run_hook(payload(root, "PreToolUse", "Write", {"file_path": a, "content": "A"}, "toolu_1"))
    (root / "a.txt").write_text("A")
    (root / ".git" / lock).write_text("")
    code, err = run_hook(payload(root, "PostToolUse", "Write", {"file_path": a, "content": "A"},
                                 "toolu_1"))
    assert code == 0 and "lock" in err and "the next call records" in err
    assert [op.source for op in ops(root)] == ["init"]  # nothing half-recorded
    assert hook_state.missed(root / ".git") is not None
    (root / ".git" / lock).unlink()
    call(root, "Write", {"file_path": b, "content": "B"}, "toolu_2", write(root, "b.txt", "B"))
    assert [(op.source, op.tool, op.paths) for op in ops(root)[1:]] == [
        ("external", "external_edit", None), ("harness", "Write", ("b.txt",))]
    assert changed_files(root, "HEAD~1") == ["a.txt"], "what the failed call left, once"
    assert hook_state.missed(root / ".git") is None
    assert_clean(root)


@pytest.mark.parametrize("raw", [b"", b"{not json", b"[1, 2]", b"\xff\xfe garbage", b"null"])
def test_bad_json_never_breaks_the_harness(root: Path, raw: bytes,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(root)
    (root / "pending.txt").write_text("made while the hook could not read its payload\n")
    code, err = run_hook(None, raw=raw)
    assert code == 0 and err.startswith("gitspace: The payload is not")
    assert [op.source for op in ops(root)] == ["init"]
    run_hook(payload(root, "Stop"))  # the next call catches up
    assert [op.source for op in ops(root)] == ["init", "external"]
    assert_clean(root)


def test_a_payload_over_the_cap_is_refused_unread(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(root)
    code, err = run_hook(None, raw=b" " * (harness_payload.MAX_PAYLOAD + 1))
    assert code == 0 and "over 64 MiB" in err
    assert [op.source for op in ops(root)] == ["init"]


def test_paths_outside_the_workspace_are_never_recorded(root: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("not yours\n")
    before = state(root)
    for given in (str(secret), str(root / ".." / "secret.txt"), str(root / ".git" / "config"),
                  "/etc/passwd"):
        err = call(root, "Write", {"file_path": given, "content": "x"}, "toolu_x")
        assert "outside the workspace" in err
    (root / "link").symlink_to(tmp_path)
    err = call(root, "Write", {"file_path": str(root / "link" / "secret.txt"), "content": "x"},
               "toolu_y")
    assert "outside the workspace" in err
    (root / "link").unlink()
    assert state(root) == before and harness(root) == []
    assert "not yours" not in git(root, "log", "-p", "--all")


def test_paths_gitspace_owns_or_git_refuses_are_never_recorded(root: Path) -> None:
    """A harness edit to .gitspace/ (its .gitignore would commit every transcript) or to a name
    git reads as .git is left as it is and never committed."""
    before = git(root, "rev-parse", "HEAD")
    for rel in (".gitspace/.gitignore", ".GIT/config", "git~1/x"):
        err = call(root, "Write", {"file_path": str(root / rel), "content": "!*\n"}, "toolu_g",
                   write(root, rel, "!*\n"))
        assert "not record" in err, err
    assert harness(root) == [] and git(root, "rev-parse", "HEAD") == before


def test_an_excluded_path_is_never_read_or_recorded_in_a_workspace_either(root: Path) -> None:
    """gitspace exclude holds for a workspace's hooks too: a file tool that names the path, and
    a shell command's scan (its before hook keeps what pending files hold), never read it."""
    from gitspace.core import exclude

    exclude.add(root / ".git", ["secret.env"])
    err = call(root, "Write", {"file_path": str(root / "secret.env"), "content": "KEY=1\n"},
               "toolu_s", write(root, "secret.env", "KEY=1\n"))
    assert "secret.env is excluded from recording" in err
    (root / "secret.env").write_text("KEY=2\n")  # pending when the next shell command starts
    err = call(root, "Bash", {"command": "make"}, "toolu_b", write(root, "out.txt", "built\n"))
    assert "secret.env (excluded from recording" in err and "size cap" not in err
    assert [op.paths for op in harness(root)] == [("out.txt",)]
    for content in (b"KEY=1\n", b"KEY=2\n"):  # not even a loose object
        sha = git(root, "hash-object", "--stdin", input=content).strip()
        assert subprocess.run(["git", "cat-file", "-e", sha], cwd=root).returncode != 0


def test_a_payload_for_another_folder_is_refused(root: Path, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    other = tmp_path / "other"
    gitspace.init(other).close()
    (other / "x").write_text("pending in another workspace\n")
    (root / "y").write_text("pending here\n")
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(root))  # the project the hook runs for
    for cwd in (other, tmp_path):
        hostile = payload(root, "PostToolUse", "Bash", {"command": "touch x"}, "toolu_1")
        hostile["cwd"] = str(cwd)
        code, err = run_hook(hostile)
        assert code == 0 and "is not inside the workspace" in err
    assert harness(root) == [] and [op.source for op in ops(other)] == ["init"]
    # Inside the project (a subfolder the agent's shell moved to) is fine.
    (root / "sub").mkdir()
    inside = payload(root, "PostToolUse", "Bash", {"command": "touch y"}, "toolu_2")
    inside["cwd"] = str(root / "sub")
    assert run_hook(inside)[0] == 0
    assert [op.paths for op in harness(root)] == [("y",)]


def test_huge_inputs_are_elided_in_the_args(root: Path) -> None:
    big = "line of text\n" * 20_000
    call(root, "Write", {"file_path": str(root / "big.txt"), "content": big}, "toolu_1",
         write(root, "big.txt", big))
    replacement = "y" * 10_000
    call(root, "Edit", {"file_path": str(root / "big.txt"), "old_string": "line of text\nline",
                        "new_string": replacement}, "toolu_2",
         write(root, "big.txt", big.replace("line of text\nline", replacement, 1)))
    write_op, edit_op = harness(root)
    sha = git(root, "rev-parse", "HEAD~1:big.txt").strip()
    assert write_op.args["content"] == {"$blob": sha, "bytes": len(big)}
    assert edit_op.args["new_string"]["bytes"] == 10_000 and "$omitted" in edit_op.args["new_string"]
    assert len(git(root, "log", "-1", "--format=%B")) < 2000


def test_the_turn_ends_at_a_checkpoint_and_a_person_finds_it(root: Path) -> None:
    run_hook(payload(root, "UserPromptSubmit", prompt="do it", prompt_id="p-1"))
    call(root, "Write", {"file_path": str(root / "a"), "content": "a"}, "toolu_1", write(root, "a", "a"))
    run_hook(payload(root, "Stop"))
    run_hook(payload(root, "UserPromptSubmit", prompt="more", prompt_id="p-2"))
    (root / "between").write_text("a person, during turn 2\n")
    run_hook(payload(root, "Stop", prompt_id="p-2"))
    tags = git(root, "tag", "--list", "gitspace/*").split()
    assert tags == [f"gitspace/claude-code-{SID[:8]}-turn-1", f"gitspace/claude-code-{SID[:8]}-turn-2"]
    assert "turn 1 (prompt p-1)" in git(root, "log", "-1", "--format=%B", "HEAD~1")
    assert [op.source for op in ops(root)][-1] == "external"
    assert_clean(root)


def test_the_transcript_is_committed_only_on_request(root: Path, tmp_path: Path) -> None:
    transcript = tmp_path / "claude-home" / f"{SID}.jsonl"
    transcript.parent.mkdir()
    transcript.write_text('{"type": "user", "text": "hello"}\n{"type": "assistant"}\n')

    def turn(number: int, transcript_path: str, *flags: str) -> None:  # each Stop ends a turn
        run_hook(payload(root, "UserPromptSubmit", prompt_id=f"p-{number}"))
        run_hook(payload(root, "Stop", transcript_path=transcript_path, prompt_id=f"p-{number}"),
                 *flags)

    turn(1, str(transcript))
    assert "transcripts" not in {p.split("/")[0] for p in files(root)}
    turn(2, str(transcript), "--commit-transcript")
    rel = f"transcripts/claude-code-{SID}.json"
    assert json.loads(files(root)[rel])["entries"][0]["text"] == "hello"
    assert ops(root)[-1].source == "transcript"
    # A payload naming some other file as the transcript gets nothing committed.
    turn(3, "/etc/passwd", "--commit-transcript")
    assert ops(root)[-1].source == "transcript" and len([o for o in ops(root)
                                                         if o.source == "transcript"]) == 1
    assert_clean(root)


def test_outside_a_workspace_the_hook_records_nothing(tmp_path: Path) -> None:
    user = users_repo(tmp_path / "user-repo")
    before = state(user)
    code, err = run_hook(payload(user, "PostToolUse", "Bash", {"command": "x"}, "toolu_1"))
    assert code == 0 and "gitspace records nothing in" in err and "not turned on" in err
    assert "nothing was lost" not in err  # nothing is recorded here: no promise of catching up
    # Said once (for this folder and session), plainly, then quiet:
    assert run_hook(payload(user, "PostToolUse", "Bash", {"command": "y"}, "toolu_2")) == (0, "")
    code, err = run_hook(payload(user, "PostToolUse", "Bash", {"command": "x"}, "toolu_1"),
                         "--quiet-outside")
    assert code == 0 and err == ""
    plain = tmp_path / "plain"
    plain.mkdir()
    assert run_hook(payload(plain, "Stop"), "--quiet-outside") == (0, "")
    assert state(user) == before and not (user / ".git" / "gitspace").exists()


def test_in_your_own_repository_through_attach(tmp_path: Path) -> None:
    user = users_repo(tmp_path / "repo")
    (user / "README").write_text("mine, edited, not committed\n")
    (user / "scratch.txt").write_text("untracked\n")
    before = state(user)
    from gitspace.team.attach import attach

    worktree = attach(user, "claude-code").path
    call(worktree, "Write", {"file_path": str(worktree / "plan.md"), "content": "# plan\n"},
         "toolu_w", write(worktree, "plan.md", "# plan\n"))
    call(worktree, "Bash", {"command": "echo built > out.txt"}, "toolu_b",
         write(worktree, "out.txt", "built\n"))
    recorded = [op for op in ops(worktree, "agent/claude-code") if op.source == "harness"]
    assert [(op.tool, op.paths) for op in recorded] == [("Write", ("plan.md",)),
                                                        ("Bash", ("out.txt",))]
    assert state(user) == before, "your checkout, index and HEAD are untouched"
    assert_clean(worktree)


def test_locate_finds_what_git_finds(root: Path, tmp_path: Path) -> None:
    from gitspace.storage.gitrepo import GitRepo
    from gitspace.team.attach import attach

    (root / "sub" / "deeper").mkdir(parents=True)
    user = users_repo(tmp_path / "user")
    worktree = attach(user, "agent").path
    for start in (root, root / "sub" / "deeper", user, worktree):
        fast, slow = GitRepo.locate(start), GitRepo.open(start)
        assert (fast.root, fast.gitdir, fast.commondir) == (slow.root.resolve(),
                                                            slow.gitdir.resolve(), slow.commondir)
        fast.close()
        slow.close()


def test_after_a_recorded_call_the_next_before_hook_needs_no_walk(root: Path) -> None:
    # The before hook's fast path (no lock, no git process) holds only while the checkout is
    # known to be owned: each op's new tip is remembered, so it holds after every call.
    from gitspace.core import owner
    from gitspace.storage import loose

    for n in range(2):
        call(root, "Write", {"file_path": str(root / f"f{n}.txt"), "content": "x"}, f"toolu_{n}",
             write(root, f"f{n}.txt", "x"))
        found = loose.find(root)
        assert found is not None and owner.known_owned(*found)
    assert len(harness(root)) == 2


def loaded_by_hook(root: Path, data: dict[str, Any], watch: set[str]) -> set[str]:
    """Which of the modules ``watch`` a real ``gitspace hook claude-code`` process imported."""
    code = ("import sys; from gitspace.__main__ import main; sys.argv = ['gitspace', 'hook', "
            "'claude-code']\ntry:\n    main()\nexcept SystemExit:\n    pass\n"
            f"print(' '.join(sorted(set({sorted(watch)!r}) & set(sys.modules))))")
    proc = subprocess.run([sys.executable, "-c", code], input=json.dumps(data).encode(),
                          capture_output=True, cwd=root)
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr.decode()
    return set(proc.stdout.decode().split())


def test_a_file_tools_hooks_import_only_what_they_need(root: Path) -> None:
    # What a hook must not pay for on every tool call (each costs milliseconds at start): the
    # before hook of a file tool no dataclasses (inspect, ast...), typing, recorder or git
    # process; its after hook no git process either, nor GitPython (no packed object is read).
    call(root, "Write", {"file_path": str(root / "a.txt"), "content": "a"}, "toolu_a",
         write(root, "a.txt", "a"))
    edit = {"file_path": str(root / "a.txt"), "old_string": "a", "new_string": "b"}
    before = loaded_by_hook(root, payload(root, "PreToolUse", "Edit", edit, "toolu_b"),
                            {"dataclasses", "typing", "subprocess", "secrets", "git",
                             "gitspace.harness.recorder"})
    assert before == set()
    assert [r.use_id for r in hook_state.running(root / ".git")] == ["toolu_b"]
    (root / "a.txt").write_text("b")
    after = loaded_by_hook(root, payload(root, "PostToolUse", "Edit", edit, "toolu_b"),
                           {"subprocess", "git", "gitspace.harness.recorder"})
    assert after == {"gitspace.harness.recorder"}
    assert [(op.tool, op.tool_use_id) for op in harness(root)][-1] == ("Edit", "toolu_b")


@pytest.mark.parametrize("argv", [["hook"], ["hook", "claude-code", "extra"], ["hook", "nope"],
                                  ["hook", "claude-code", "--bogus"]])
def test_a_misconfigured_hook_never_blocks_the_call(argv: list[str]) -> None:
    # Claude Code reads a PreToolUse hook's exit 2 as "block this tool call".
    err = io.StringIO()
    assert hook.main(argv, stdin=io.BytesIO(b"{}"), stdout=io.StringIO(), stderr=err) == 0
    assert err.getvalue().startswith(("usage:", "gitspace:"))
