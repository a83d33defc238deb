"""Recording Claude Code in a person's own checkout: ``gitspace hook claude-code`` fed payloads
as the real binary sends them, in-process through its real entry point, in a repository with a
staged file, an unstaged edit, untracked and ignored files and a stash.

What it must keep: nothing of the person's moves (HEAD, branches, ``.git/index`` byte for byte and
its stat, the stash, tags, ``git status --ignored``, their files); each op's diff is exactly its
call's change; each op's tree is what ``git add -A`` would stage; the person's own edits are
ops of their own, under their git identity; the line follows them when they commit, switch,
stash or reset between calls; ignored, filtered (Git LFS), excluded and over-cap files are
never opened.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import changed_files, git, git_run, ops
from hookcalls import EMAIL, LINE, NAME, PROGRAM, SID, call, line_ops, own_repo, payload, run_hook, write
from user_repo import fsck, users_own

from gitspace.harness import install


@pytest.fixture
def user(tmp_path: Path) -> Path:
    root = own_repo(tmp_path / "repo")
    install.install("claude-code", None, root, tmp_path / "home", PROGRAM)
    return root


def add_all_tree(root: Path) -> str:
    """The tree ``git add -A`` would stage for this work tree (in an index of the test's own)."""
    index = root.parent / "add-all.index"
    env = {"GIT_INDEX_FILE": str(index)}
    for args in (("read-tree", "HEAD"), ("add", "-A"), ("write-tree",)):
        proc = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True,
                              env={**os.environ, **env})
        assert proc.returncode == 0, proc.stderr
    index.unlink()
    return proc.stdout.strip()


def tree(root: Path, rev: str) -> str:
    return git(root, "rev-parse", f"{rev}^{{tree}}").strip()


def test_installing_in_your_own_checkout_changes_nothing_of_yours(tmp_path: Path) -> None:
    root = own_repo(tmp_path / "repo")
    before = users_own(root)
    wired = install.install("claude-code", None, root, tmp_path / "home", PROGRAM)
    assert wired.in_place and wired.scope == "local" and wired.excluded
    assert wired.path == root / ".claude" / "settings.local.json"
    assert "/.claude/settings.local.json" in (root / ".git" / "info" / "exclude").read_text()
    assert users_own(root) == before
    assert "settings.local.json" not in git(root, "--no-optional-locks", "status", "--porcelain")
    # The line starts at once, on HEAD, with the work tree as git add -A would stage it.
    start = line_ops(root)[-1]
    assert (start.tool, start.source, start.agent) == ("follow", "external", "Zoe-Tester")
    assert git(root, "log", "-1", "--format=%an <%ae>", LINE).strip() == f"{NAME} <{EMAIL}>"
    assert git(root, "rev-parse", f"{LINE}~1").strip() == git(root, "rev-parse", "HEAD").strip()
    assert tree(root, LINE) == add_all_tree(root)
    again = install.install("claude-code", None, root, tmp_path / "home", PROGRAM)
    assert not again.changed and len(line_ops(root)) == 1 + len(ops(root, "HEAD"))
    fsck(root)


def test_each_call_is_one_op_and_your_edits_are_yours(user: Path) -> None:
    before = users_own(user)
    start = git(user, "rev-parse", LINE).strip()
    call(user, "Write", {"file_path": str(user / "docs" / "plan.md"), "content": "# plan\n"},
         "toolu_w", write(user, "docs/plan.md", "# plan\n"))
    (user / "src" / "app.py").write_text("print('edited by you')\n")  # between two calls
    call(user, "Edit", {"file_path": str(user / "src" / "app.py"), "old_string": "you",
                        "new_string": "the agent"},
         "toolu_e", write(user, "src/app.py", "print('edited by the agent')\n"))
    call(user, "Write", {"file_path": str(user / "build" / "gen.js"), "content": "x"}, "toolu_i",
         write(user, "build/gen.js", "x"))  # ignored: never read, never recorded

    def shell() -> None:
        (user / "out").mkdir()
        (user / "out" / "a.txt").write_text("a\n")
        (user / "new.txt").unlink()

    call(user, "Bash", {"command": "mkdir out && echo a > out/a.txt && rm new.txt"}, "toolu_b",
         shell)
    recorded = line_ops(user)
    new = recorded[: len(recorded) - len(line_ops(user, start))]  # newest first
    assert [(op.tool, op.source, op.agent) for op in reversed(new)] == [
        ("Write", "harness", "claude-code"), ("external_edit", "external", "Zoe-Tester"),
        ("Edit", "harness", "claude-code"), ("Bash", "harness", "claude-code")]
    assert [changed_files(user, f"{LINE}~{n}") for n in (3, 2, 1, 0)] == [
        ["docs/plan.md"], ["src/app.py"], ["src/app.py"], ["new.txt", "out/a.txt"]]
    assert git(user, "log", "-1", "--format=%an <%ae>", f"{LINE}~2").strip() == f"{NAME} <{EMAIL}>"
    assert tree(user, LINE) == add_all_tree(user)
    after = users_own(user)
    for key in ("HEAD", "refs", "index", "index stat", "stash", "tags"):
        assert after[key] == before[key], key
    fsck(user)


def test_the_line_follows_you_when_you_commit_switch_stash_and_reset(user: Path) -> None:
    def edit(use_id: str, rel: str, text: str) -> None:
        call(user, "Write", {"file_path": str(user / rel), "content": text}, use_id,
             write(user, rel, text))

    edit("toolu_1", "a.txt", "one\n")
    git(user, "add", "a.txt")
    git(user, "commit", "-q", "-m", "you commit the agent's file")
    edit("toolu_2", "b.txt", "two\n")
    assert changed_files(user, LINE) == ["b.txt"]
    follow = line_ops(user)[1]
    assert follow.tool == "follow" and follow.args["commit"] == git(user, "rev-parse",
                                                                    "HEAD").strip()
    assert follow.args["count"] == 0  # a commit changes no file

    git(user, "switch", "-q", "-c", "feature")  # mid-session: uncommitted work comes along
    edit("toolu_3", "c.txt", "three\n")
    feature = "refs/gitspace/lines/feature"
    assert changed_files(user, feature) == ["c.txt"]
    assert tree(user, feature) == add_all_tree(user)
    assert line_ops(user, feature)[1].tool == "follow"

    git(user, "stash", "push", "-q", "-u", "-m", "mid-session")  # takes b.txt, c.txt, ...
    edit("toolu_4", "d.txt", "four\n")
    assert changed_files(user, feature) == ["d.txt"]
    call(user, "Bash", {"command": "true"}, "toolu_5")  # a scan: the stash is seen as yours
    assert [op.source for op in line_ops(user, feature)[:2]] == ["external", "harness"]
    assert tree(user, feature) == add_all_tree(user)
    git(user, "stash", "pop", "-q")
    git(user, "reset", "-q", "--hard", "HEAD~1")
    edit("toolu_6", "e.txt", "five\n")
    assert changed_files(user, feature) == ["e.txt"]
    call(user, "Bash", {"command": "true"}, "toolu_7")
    assert tree(user, feature) == add_all_tree(user)
    fsck(user)


def test_a_shell_command_gets_what_it_changed_and_you_what_you_changed(user: Path) -> None:
    (user / "notes.txt").write_text("changed by you before the command\n")

    def shell() -> None:
        (user / "made.txt").write_text("by the command\n")

    call(user, "Bash", {"command": "echo by the command > made.txt"}, "toolu_b", shell)
    bash, yours = line_ops(user)[:2]
    assert (bash.tool, bash.paths) == ("Bash", ("made.txt",))
    assert (yours.source, yours.args["paths"]) == ("external", ["notes.txt"])


def test_what_gitspace_never_opens(user: Path, tmp_path: Path) -> None:
    """Ignored, excluded, over-cap and Git LFS files are never opened by gitspace, and git runs
    no filter on them for gitspace."""
    log = tmp_path / "filter.log"
    clean = tmp_path / "clean.sh"
    clean.write_text(f"#!/bin/sh\necho \"$@\" >> {log}\ncat\n")
    clean.chmod(0o755)
    git(user, "config", "filter.lfs.clean", f"{clean} %f")
    git(user, "config", "filter.lfs.process", "")
    (user / ".git" / "info" / "attributes").write_text("*.psd filter=lfs\n")
    (user / ".git" / "info" / "gitspace-exclude").write_text("secret.env\n")
    names = {"ignored-x.log": b"x", "secret.env": b"KEY=1\n", "huge.bin": b"h" * (1 << 20 | 1),
             "art.psd": b"pixels"}
    opened: list[str] = []

    def audit(event: str, args: tuple[Any, ...]) -> None:  # every open for reading
        if watching and event == "open" and isinstance(args[0], str | bytes):
            mode, flags = args[1], args[2]
            if (mode is None or "r" in mode and "+" not in mode) and not flags & (
                    os.O_WRONLY | os.O_RDWR):
                opened.append(os.fsdecode(args[0]))

    watching = False
    sys.addaudithook(audit)
    watching = True
    try:
        for n, (name, data) in enumerate(names.items()):
            call(user, "Write", {"file_path": str(user / name), "content": "."}, f"toolu_{n}",
                 lambda name=name, data=data: (user / name).write_bytes(data))
        call(user, "Bash", {"command": "touch *"}, "toolu_b",
             lambda: [os.utime(user / name) for name in names])
    finally:
        watching = False
    assert not [p for p in opened if any(p.endswith(name) for name in names)], opened
    assert not log.exists(), "git ran the LFS filter"
    assert not any(name in (op.paths or ()) for op in line_ops(user) for name in names)
    code, err = run_hook(payload(user, "PostToolUse", "Write", {"file_path": str(
        user / "secret.env"), "content": "."}, "toolu_again"))
    assert code == 0 and "excluded from recording" in err


def test_a_hook_killed_at_random_moments_loses_nothing_and_touches_nothing(user: Path) -> None:
    before = users_own(user)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT")}
    import random

    rng = random.Random(23)
    for n in range(12):
        rel = f"killed/{n}.txt"
        (user / "killed").mkdir(exist_ok=True)
        data = json.dumps(payload(user, "PostToolUse", "Bash", {"command": f"make {rel}"},
                                  f"toolu_k{n}")).encode()
        (user / rel).write_text(f"{n}\n")
        proc = subprocess.Popen([sys.executable, "-m", "gitspace", "hook", "claude-code"],
                                cwd=user, env=env, stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        assert proc.stdin is not None
        proc.stdin.write(data)
        proc.stdin.close()
        time.sleep(rng.uniform(0.05, 0.6))
        os.killpg(proc.pid, 9)
        proc.wait()
        assert git_run(user, "fsck", "--strict", "--no-progress").returncode == 0
        after = users_own(user)
        for key in ("HEAD", "refs", "index", "index stat", "stash", "tags"):
            assert after[key] == before[key], (n, key)
        assert (user / rel).read_text() == f"{n}\n"
    # The next call catches up: everything the killed calls left is on the line. (A hook killed
    # while Python was still starting left no mark: the next scan, a shell command's or a
    # turn's, is what records its changes then.)
    call(user, "Bash", {"command": "echo last > last.txt"}, "toolu_last",
         write(user, "last.txt", "last\n"))
    assert tree(user, LINE) == add_all_tree(user)
    recorded = {p for op in line_ops(user) for p in (op.paths or op.args.get("paths") or ())}
    assert {f"killed/{n}.txt" for n in range(12)} <= recorded


def test_in_place_hooks_import_only_what_they_need(user: Path) -> None:
    # In a person's repository nearly everything is packed (make_user_repo's objects after a
    # gc): the after hook reads trees from packs itself, so GitPython ("git") never starts; the
    # before hook of a file tool imports no dataclasses, typing, subprocess or recorder at all,
    # and starts one git process (is the file ignored, or a filter's?), which the after hook
    # trusts. The after hook moves a ref alone: it loads no index, nor the index modules and
    # hashlib, struct they bring (milliseconds on every call).
    from test_harness_hook import loaded_by_hook

    git(user, "gc", "-q")
    target = str(user / "notes.txt")
    edit = {"file_path": target, "old_string": "one", "new_string": "ONE"}
    watch = {"dataclasses", "typing", "subprocess", "git", "gitspace.harness.recorder",
             "gitspace.harness.inplace.place", "gitspace.storage.gitrepo"}
    assert loaded_by_hook(user, payload(user, "PreToolUse", "Edit", edit, "toolu_i"),
                          watch) == set()
    (user / "notes.txt").write_text((user / "notes.txt").read_text().replace("one", "ONE"))
    after = loaded_by_hook(user, payload(user, "PostToolUse", "Edit", edit, "toolu_i"),
                           {"git", "subprocess", "gitspace.harness.owned", "dataclasses",
                            "typing", "gitspace.storage.gitindex", "gitspace.storage.racyindex",
                            "hashlib", "struct"})
    assert after == set(), "no GitPython, no git process (the before hook asked git already), " \
        "no index modules"
    assert line_ops(user)[0].tool_use_id == "toolu_i"


def test_codex_records_in_place_through_your_user_settings_and_nowhere_else(
        tmp_path: Path) -> None:
    import io

    from gitspace.harness import hook

    root = own_repo(tmp_path / "repo")
    home = tmp_path / "home"
    wired = install.install("codex", None, root, home, PROGRAM)
    assert wired.in_place and wired.scope == "user" and wired.path == home / ".codex" / "hooks.json"
    command = json.loads(wired.path.read_text())["hooks"]["PostToolUse"][0]["hooks"][0]["command"]
    assert command.endswith("hook codex --quiet-outside")
    assert not (root / ".codex").exists()

    def send(where: Path, event: str, **extra: Any) -> str:
        body = {"session_id": "s-1", "transcript_path": None, "cwd": str(where), "turn_id": "t",
                "hook_event_name": event, "model": "m", "permission_mode": "default", **extra}
        err = io.StringIO()
        assert hook.main(["hook", "codex", "--quiet-outside"], stdin=io.BytesIO(
            json.dumps(body).encode()), stdout=io.StringIO(), stderr=err) == 0
        return err.getvalue()

    bash = {"tool_name": "Bash", "tool_input": {"command": "echo c > c.txt"},
            "tool_use_id": "call_1"}
    send(root, "PreToolUse", **bash)
    (root / "c.txt").write_text("c\n")
    assert send(root, "PostToolUse", **bash, tool_response="") == ""
    assert [(op.tool, op.agent, op.paths) for op in line_ops(root)][0] == (
        "Bash", "codex", ("c.txt",))
    other = own_repo(tmp_path / "other")  # user-scope hooks run here too: silent, nothing made
    send(other, "PreToolUse", **bash)
    (other / "c.txt").write_text("c\n")
    assert send(other, "PostToolUse", **bash, tool_response="") == ""
    assert not (other / ".git" / "gitspace").exists()
    assert "refs/gitspace" not in git(other, "for-each-ref")


def test_local_settings_are_never_committed_in_a_workspace_either(tmp_path: Path) -> None:
    import gitspace

    gitspace.init(tmp_path / "ws").close()
    root = tmp_path / "ws"
    tip = git(root, "rev-parse", "HEAD")
    wired = install.install("claude-code", "local", root, tmp_path / "home", PROGRAM)
    assert wired.op is None and wired.excluded
    assert git(root, "rev-parse", "HEAD") == tip
    assert git(root, "--no-optional-locks", "status", "--porcelain") == ""


def test_undo_and_rewind_change_only_your_files_and_refuse_a_conflict(user: Path) -> None:
    from user_repo import gs

    def edit(use_id: str, rel: str, old: str, new: str) -> None:
        text = (user / rel).read_text()
        call(user, "Edit", {"file_path": str(user / rel), "old_string": old, "new_string": new},
             use_id, write(user, rel, text.replace(old, new)))

    run_hook(payload(user, "UserPromptSubmit"))
    edit("toolu_1", "notes.txt", "one", "ONE")
    assert run_hook(payload(user, "Stop"))[0] == 0  # turn 1 ends here
    run_hook(payload(user, "UserPromptSubmit"))
    call(user, "Write", {"file_path": str(user / "docs.md"), "content": "d\n"}, "toolu_2",
         write(user, "docs.md", "d\n"))
    edit("toolu_3", "notes.txt", "three", "THREE")
    (user / "new.txt").write_text("yours, changed after turn 1\n")
    before = users_own(user)
    first = next(op for op in line_ops(user) if op.tool_use_id == "toolu_1")

    out = gs(user, "undo", "--op", first.op_id)
    assert out.returncode == 0, out.stderr
    assert (user / "notes.txt").read_text() == "one\ntwo (being edited)\nTHREE\n"
    after = users_own(user)
    for key in ("HEAD", "refs", "index", "index stat", "stash", "tags"):
        assert after[key] == before[key], key
    undo = line_ops(user)[0]
    assert (undo.tool, undo.undo_of, undo.agent) == ("undo", (first.op_id,), "Zoe-Tester")
    assert changed_files(user, LINE) == ["notes.txt"]

    # A conflict is refused, with nothing changed.
    (user / "notes.txt").write_text("rewritten by you\n")
    third = next(op for op in line_ops(user) if op.tool_use_id == "toolu_3")
    tip = git(user, "rev-parse", LINE)
    refused = gs(user, "undo", "--op", third.op_id)
    assert refused.returncode == 1 and "cannot be taken back" in refused.stderr
    assert (user / "notes.txt").read_text() == "rewritten by you\n"
    assert git(user, "rev-parse", LINE) == tip

    # rewind 1: the files the agent changed since turn 1, your own edits kept.
    (user / "notes.txt").write_text("one\ntwo (being edited)\nTHREE\n")
    out = gs(user, "rewind", "1")
    assert out.returncode == 0, out.stderr
    assert not (user / "docs.md").exists()
    assert (user / "notes.txt").read_text() == "one\ntwo (being edited)\nthree\n"
    assert (user / "new.txt").read_text() == "yours, changed after turn 1\n"
    # rewind 1 --all: every file as turn 1 left it (your edit is recorded first, then overwritten).
    out = gs(user, "rewind", "1", "--all")
    assert out.returncode == 0, out.stderr
    assert (user / "new.txt").read_text() == "not added yet\n"
    assert (user / "notes.txt").read_text() == "ONE\ntwo (being edited)\nthree\n"
    assert line_ops(user)[1].source == "external" and "new.txt" in line_ops(user)[1].args["paths"]
    after = users_own(user)
    for key in ("HEAD", "refs", "index", "index stat", "stash", "tags"):
        assert after[key] == before[key], key
    fsck(user)
    listing = gs(user, "sessions").stdout  # the harness's session, and no "No saved sessions"
    assert f"s-{SID[:8]}" in listing and "No saved sessions" not in listing, listing


def test_gitspace_record_records_in_place_too(tmp_path: Path) -> None:
    """``gitspace record`` (any harness, a line of shell) in a checkout of the person's own,
    with no ``hooks install`` first: one op on the line, nothing of the person's moved."""
    root = own_repo(tmp_path / "repo")
    before = users_own(root)

    def record(phase: str) -> None:
        data = {"tool": "edit_file", "args": {"path": "notes.txt"}, "agent": "aider",
                "session": "s1", "tool_use_id": "t1", "paths": ["notes.txt"]}
        proc = subprocess.run([sys.executable, "-m", "gitspace", "record"], cwd=root,
                              input=json.dumps({**data, **({"phase": phase} if phase else {})}),
                              capture_output=True, text=True)
        assert proc.returncode == 0 and not proc.stderr, proc.stderr

    record("before")
    (root / "notes.txt").write_text("by aider\n")
    record("")
    edit = line_ops(root)[0]
    assert (edit.tool, edit.agent, edit.source, edit.paths) == (
        "edit_file", "aider", "harness", ("notes.txt",))
    assert changed_files(root, LINE) == ["notes.txt"]
    after = users_own(root)
    for key in ("HEAD", "refs", "index", "index stat", "stash", "tags"):
        assert after[key] == before[key], key
    fsck(root)


def test_a_link_where_gitspace_keeps_its_state_is_refused(tmp_path: Path) -> None:
    from gitspace.errors import GitspaceError

    root = own_repo(tmp_path / "repo")
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / ".git" / "gitspace").mkdir()
    os.symlink(outside, root / ".git" / "gitspace" / "inplace")
    before = users_own(root)
    with pytest.raises(GitspaceError, match="not a folder"):
        install.install("claude-code", None, root, tmp_path / "home", PROGRAM)
    assert list(outside.iterdir()) == [] and users_own(root) == before
    assert not (root / ".claude").exists()


@pytest.mark.parametrize(("name", "settings"), [("gemini-cli", ".gemini/settings.json"),
                                                ("cursor", ".cursor/hooks.json")])
def test_gemini_and_cursor_hooks_go_into_your_user_settings(tmp_path: Path, name: str,
                                                            settings: str) -> None:
    from gitspace.harness.route import recording

    root = own_repo(tmp_path / "repo")
    before = users_own(root)
    wired = install.install(name, None, root, tmp_path / "home", PROGRAM)
    assert (wired.in_place, wired.scope, wired.path) == (True, "user", tmp_path / "home" / settings)
    assert f"hook {name} --quiet-outside" in wired.path.read_text()
    assert recording(root / ".git") == [name]
    assert users_own(root, ignore=()) == before  # not even a settings file in the work tree
    install.uninstall(name, None, root, tmp_path / "home")
    assert recording(root / ".git") == []


def test_log_lists_your_commits_where_you_made_them_whatever_their_dates(user: Path) -> None:
    """One list, newest first, by what happened when, not by clocks: a commit dated in the
    future (a skewed clock, or the same second) or in the past (a rebase keeping dates) still
    sits between the calls it was made between."""
    from user_repo import gs

    def commit(rel: str, message: str, date: str) -> None:
        git(user, "add", rel)
        proc = subprocess.run(["git", "commit", "-q", "-m", message], cwd=user,
                              capture_output=True, text=True,
                              env={**os.environ, "GIT_COMMITTER_DATE": date})
        assert proc.returncode == 0, proc.stderr

    def edit(use_id: str, rel: str) -> None:
        call(user, "Write", {"file_path": str(user / rel), "content": rel + "\n"}, use_id,
             write(user, rel, rel + "\n"))

    edit("toolu_1", "a.txt")
    commit("a.txt", "yours, dated a day ahead", "@" + str(int(time.time()) + 86400))
    edit("toolu_2", "b.txt")
    commit("b.txt", "yours, dated a year back", "2000-01-01T00:00:00Z")
    edit("toolu_3", "c.txt")
    commit("c.txt", "yours, after the last call", "2000-01-02T00:00:00Z")

    def listed(*args: str) -> list[str]:
        out = gs(user, "log", "--format", "{tool} {subject}", "-n", "12", *args)
        assert out.returncode == 0, out.stderr
        return [s.split(" ", 1)[1] for s in out.stdout.splitlines()
                if not s.startswith("follow ")]

    newest = listed()
    assert newest[:7] == ["yours, after the last call", "Write c.txt", "yours, dated a year back",
                          "Write b.txt", "yours, dated a day ahead", "Write a.txt",
                          "the user's first commit"], newest
    assert listed("--", "a.txt", "b.txt") == ["yours, dated a year back", "Write b.txt",
                                              "yours, dated a day ahead", "Write a.txt"]
    assert listed("-n", "3")[:2] == newest[:2]
