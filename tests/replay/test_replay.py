"""Replay: honest branches replay clean; every way of lying is caught at the op that lies.

Lies are built with plain git plumbing (commit-tree, a private index), the way someone editing
history by hand would, never by calling gitspace internals.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import assert_clean, call_ok, git, git_env, git_run, head, parse_or_error

import gitspace
from gitspace.core.identity import Identity
from gitspace.core.result import Result
from gitspace.core.workspace import Workspace
from gitspace.replay.engine import BadRange, ReplayReport, replay
from gitspace.replay.onto import replay_onto
from gitspace.storage.ledger import Op
from gitspace.tools import builtins, registry

# -- helpers ---------------------------------------------------------------------------------


def message(root: Path, rev: str) -> str:
    """A commit's message exactly as stored."""
    return git(root, "cat-file", "commit", rev).split("\n\n", 1)[1]


def author(root: Path, rev: str) -> str:
    """A commit's author as ``Name <email>``."""
    return git(root, "log", "-1", "--format=%an <%ae>", rev).strip()


def commit_tree(root: Path, tree: str, *parents: str, msg: str | bytes,
                by: str | None = None, placed: bool = True) -> str:
    """A commit made with plumbing; ``by`` ("Name <email>") is its author, else the test's. An
    op's message (ledger format 4) is ``placed``: it names the op its first parent records, as a
    forger who knows the format writes it, so that each test meets the check it is about (the
    chain itself is tried in test_hostile_dropped_ops.py)."""
    if placed and parents and isinstance(msg, str):
        msg = placed_on(root, msg, parents[0])
    env = git_env()
    if by is not None:
        name, email = by.removesuffix(">").split(" <")
        env.update(GIT_AUTHOR_NAME=name, GIT_AUTHOR_EMAIL=email)
    args = [a for p in parents for a in ("-p", p)]
    data = msg.encode() if isinstance(msg, str) else msg
    return subprocess.run(["git", "commit-tree", tree, *args], cwd=root, env=env, input=data,
                          capture_output=True, check=True).stdout.decode().strip()


def placed_on(root: Path, msg: str, parent: str) -> str:
    """``msg`` with its ``Gitspace-After`` naming the op ``parent`` records (format 4 only)."""
    op = parse_or_error(msg)
    if not isinstance(op, Op) or op.format != 4:
        return msg
    parents = git(root, "rev-list", "--parents", "-n1", parent).split()[1:]
    before = parse_or_error(message(root, parent)) if len(parents) <= 1 else None
    kept = re.sub(r"^Gitspace-After: .*\n", "", msg, flags=re.M)
    if not isinstance(before, Op):
        return kept
    return f"{kept.rstrip(chr(10))}\nGitspace-After: {before.op_id}\n"


def like(root: Path, rev: str, tree: str, parent: str, msg: str | None = None) -> str:
    """A copy of commit ``rev`` (author, message unless given) with ``tree`` on ``parent``."""
    return commit_tree(root, tree, parent, msg=message(root, rev) if msg is None else msg,
                       by=author(root, rev))


def tree_of(root: Path, rev: str) -> str:
    return git(root, "rev-parse", f"{rev}^{{tree}}").strip()


def rechain(root: Path, base: str, commits: list[str]) -> str:
    """Copies of ``commits`` (trees, messages, authors), chained in that order on base."""
    parent = base
    for rev in commits:
        parent = like(root, rev, tree_of(root, rev), parent)
    return parent


def tree_with(root: Path, rev: str, files: dict[str, str | None], mode: str = "100644") -> str:
    """The tree of ``rev`` with ``files`` replaced (None removes), built in a private index."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {**git_env(), "GIT_INDEX_FILE": str(Path(tmp, "index"))}

        def run(*args: str, data: bytes | None = None) -> str:
            out = subprocess.run(["git", *args], cwd=root, env=env, input=data,
                                 capture_output=True, check=True)
            return out.stdout.decode().strip()

        run("read-tree", rev)
        for path, text in files.items():
            if text is None:
                run("update-index", "--force-remove", path)
            else:
                blob = run("hash-object", "-w", "--stdin", data=text.encode())
                run("update-index", "--add", "--cacheinfo", f"{mode},{blob},{path}")
        return run("write-tree")


def revs(root: Path, rev: str = "HEAD") -> list[str]:
    """First-parent commits, oldest first."""
    return git(root, "rev-list", "--first-parent", "--reverse", rev).split()


def user_state(root: Path) -> tuple[str, ...]:
    """Everything replay must leave alone in the user's repository."""
    index = Path(root, ".git", "index")
    return (git(root, "for-each-ref"), git(root, "symbolic-ref", "HEAD"), git(root, "status",
            "--porcelain", "--untracked-files=all"), git(root, "worktree", "list", "--porcelain"),
            index.read_bytes().hex() if index.exists() else "")


pytestmark = pytest.mark.usefixtures("scratch_dirs")  # replay's folders: none left after


def replayed(ws: Workspace, rev: str = "HEAD", base: str | None = None) -> ReplayReport:
    before = user_state(ws.root)
    report = replay(ws, head(ws.root, rev), base)
    assert user_state(ws.root) == before, "replay changed the user's repository"
    return report


def basic_ops(ws: Workspace) -> list[Result]:
    return [
        call_ok(ws, "create", {"path": "notes.md", "file_text": "title\nalpha\nbeta\ngamma\n"}),
        call_ok(ws, "str_replace", {"path": "notes.md", "old_str": "alpha", "new_str": "ALPHA"}),
        call_ok(ws, "str_replace", {"path": "notes.md", "old_str": "ALPHA", "new_str": "A+"}),
        call_ok(ws, "create", {"path": "other.md", "file_text": "other\n"}),
    ]


def add_script(ws: Workspace, name: str, body: str, helper: str | None = None) -> None:
    """A workspace constraint script, added as a person would (on disk, then snapshot)."""
    header = (f"# ---gitspace---\n# name: {name}\n# description: Test script {name}.\n"
              "# example: {}\n# mutates: true\n"
              '# args: {"type": "object", "properties": {}, "additionalProperties": false}\n'
              "# ---\n")
    folder = ws.root / "constraints"
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.py").write_text("#!/usr/bin/env python3\n" + header + body)
    if helper is not None:
        (folder / "_helper.py").write_text(helper)
    assert ws.snapshot().ok


BUMP = ("import os, sys\nsys.dont_write_bytecode = True\n"
        "sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))\n"
        "from _helper import STEP\n"
        "with open('counter.txt', 'a') as f:\n    f.write(STEP)\nprint('bumped')\n")


# -- honest branches replay clean ------------------------------------------------------------


def test_a_demo_branch_replays_clean(tmp_path: Path) -> None:
    from gitspace.agent.demo import run_demo

    root = tmp_path / "demo"
    run_demo(root, echo=lambda s: None)
    with gitspace.open(root) as ws:
        report = replayed(ws)
    assert report.ok, report.divergence
    assert report.total == len(revs(root)) > 40
    assert report.reexecuted == report.total - 1 and report.recorded_why == {"root commit": 1}
    tools_run = set(git(root, "log", "--format=%(trailers:key=Gitspace-Tool,valueonly)").split())
    assert {"move", "restore", "create", "plan_add", "plan_done", "memory"} <= tools_run
    assert_clean(root)


def test_basic_ops_undo_redo_and_outside_edits_replay_clean(ws: Workspace) -> None:
    basic_ops(ws)
    (ws.root / "outside.txt").write_text("a person wrote this\n")
    assert ws.snapshot().ok
    call_ok(ws, "undo", {})
    call_ok(ws, "redo", {})
    call_ok(ws, "checkpoint", {"name": "cp"})
    call_ok(ws, "delete", {"path": "other.md"})
    call_ok(ws, "restore", {"name": "cp"})
    git(ws.root, "commit", "--allow-empty", "-q", "-m", "a person's own commit")
    report = replayed(ws)
    assert report.ok, report.divergence
    assert report.recorded_why == {"root commit": 1, "external op": 1, "not an op": 1}
    assert report.reexecuted == 8 and report.total == 11


def test_from_replays_only_the_later_ops(ws: Workspace) -> None:
    basic_ops(ws)
    chain = revs(ws.root)
    report = replayed(ws, base=chain[2])
    assert report.ok and report.total == report.reexecuted == 2
    with pytest.raises(BadRange, match="already contains"):
        replay(ws, chain[1], chain[3])  # nothing of chain[1] is after chain[3]
    assert replay(ws, chain[2], chain[2]).total == 0


def test_from_a_revision_off_the_branch_replays_what_it_does_not_contain(ws: Workspace) -> None:
    basic_ops(ws)
    chain = revs(ws.root)
    side = commit_tree(ws.root, tree_of(ws.root, chain[1]), chain[1], msg="a side commit\n")
    merged = commit_tree(ws.root, tree_of(ws.root, "HEAD"), "HEAD", side, msg="merge\n")
    # side is reachable only through a second parent: replay what it does not contain.
    report = replay(ws, merged, side)
    assert report.ok, report.divergence
    assert report.start == chain[1] and report.total == 4 and report.reexecuted == 3
    assert report.recorded_why == {"merge commit": 1}
    lone = commit_tree(ws.root, tree_of(ws.root, "HEAD"), msg="unrelated\n")
    with pytest.raises(BadRange, match="no common history"):
        replay(ws, merged, lone)


def test_elided_arguments_are_expanded_and_checked(ws: Workspace) -> None:
    big = "".join(f"line {i}\n" for i in range(1000))
    call_ok(ws, "create", {"path": "big.txt", "file_text": big})
    assert '"$blob"' in message(ws.root, "HEAD")
    report = replayed(ws)
    assert report.ok and report.reexecuted == 1
    # The same op, but the file in the commit is not what its elided argument says.
    forged = like(ws.root, "HEAD", tree_with(ws.root, "HEAD", {"big.txt": big + "extra\n"}),
                  head(ws.root, "HEAD~1"))
    lie = replay(ws, forged)
    assert lie.divergence is not None and lie.divergence.paths == ["big.txt"]
    assert "+++ replayed/big.txt" in lie.divergence.diff and "-extra" in lie.divergence.diff


def test_an_elided_argument_whose_blob_is_missing_diverges(ws: Workspace) -> None:
    call_ok(ws, "create", {"path": "a.md", "file_text": "a\n"})
    msg = message(ws.root, "HEAD").replace(
        '{"file_text":"a\\n","path":"a.md"}', '{"file_text":{"$blob":"' + "1" * 40
        + '","bytes":2},"path":"a.md"}')
    assert '"$blob"' in msg
    tip = like(ws.root, "HEAD", tree_of(ws.root, "HEAD"), head(ws.root, "HEAD~1"), msg)
    report = replay(ws, tip)
    d = report.divergence
    assert d is not None and d.tool == "create" and d.paths == ["a.md"]
    assert "the elided argument's blob (file_text: 111111111111) is not in the repository, so " \
           "the op cannot be checked" in d.reason
    assert report.recorded_why == {"root commit": 1}


# -- lies ------------------------------------------------------------------------------------


def test_a_hand_edit_under_a_forged_tool_trailer_is_caught_at_that_commit(ws: Workspace) -> None:
    basic_ops(ws)
    honest = message(ws.root, "HEAD~2")  # str_replace alpha -> ALPHA
    (ws.root / "notes.md").write_text("title\nA+\nbeta (edited by hand)\ngamma\n")
    (ws.root / "secret.txt").write_text("slipped in\n")
    git(ws.root, "add", "-A")
    forged = placed_on(ws.root, honest.replace('"new_str":"ALPHA","old_str":"alpha"',
                                               '"new_str":"x","old_str":"beta"'), head(ws.root))
    git(ws.root, "commit", "-q", "-F", "-", input=forged.encode())
    call_ok(ws, "create", {"path": "after.md", "file_text": "later\n"})
    report = replayed(ws)
    d = report.divergence
    assert d is not None and d.commit == head(ws.root, "HEAD~1") and d.tool == "str_replace"
    assert d.args == {"new_str": "x", "old_str": "beta", "path": "notes.md"}
    assert d.paths == ["notes.md", "secret.txt"] and report.checked == 5
    assert "-beta (edited by hand)" in d.diff and "+x" in d.diff


def test_reordered_ops_are_caught_at_the_first_moved_op(ws: Workspace) -> None:
    basic_ops(ws)
    init, create, a, b, other = revs(ws.root)
    report = replay(ws, rechain(ws.root, create, [b, a, other]))
    d = report.divergence
    assert d is not None and d.op_id == gitspace_op(ws, b) and "failed" in d.reason
    assert "did not appear verbatim" in d.reason and d.paths == ["notes.md"]
    assert report.checked == 2  # the root and the create replayed; b is where it breaks


def test_a_dropped_op_is_caught_at_the_first_op_it_affects(ws: Workspace) -> None:
    basic_ops(ws)
    init, create, a, b, other = revs(ws.root)
    report = replay(ws, rechain(ws.root, init, [create, a, other]))  # b dropped
    d = report.divergence
    assert d is not None and d.op_id == gitspace_op(ws, other)
    assert d.reason == "re-running it produced different files." and d.paths == ["notes.md"]
    assert "-A+" in d.diff and "+ALPHA" in d.diff


def test_a_forged_undo_link_is_caught_though_the_files_agree(ws: Workspace) -> None:
    basic_ops(ws)
    call_ok(ws, "undo", {})
    first = gitspace_op(ws, "HEAD~4")
    real = gitspace_op(ws, "HEAD~1")
    forged = message(ws.root, "HEAD").replace(f"Gitspace-Undo-Of: {real}",
                                              f"Gitspace-Undo-Of: {first}")
    tip = like(ws.root, "HEAD", tree_of(ws.root, "HEAD"), head(ws.root, "HEAD~1"), forged)
    d = replay(ws, tip).divergence
    assert d is not None and d.tool == "undo" and not d.paths
    assert d.reason == ("the tool records different trailers than the commit has: undo_of "
                        f"(recorded ({first!r},), replayed ({real!r},))")


def test_a_malformed_trailer_block_diverges(ws: Workspace) -> None:
    call_ok(ws, "create", {"path": "a.md", "file_text": "a\n"})
    tip = commit_tree(ws.root, tree_of(ws.root, "HEAD"), head(ws.root),
                      msg="edit\n\nGitspace-Format: 1\nGitspace-Op: nope\n")
    d = replay(ws, tip).divergence
    assert d is not None and d.op_id is None and "malformed" in d.reason


def test_a_commit_claiming_a_ref_moving_tool_diverges_unrun(ws: Workspace) -> None:
    """branch, switch and checkpoint move refs and never commit: a commit that says it is such a
    call is refused from what the tool says of itself (Tool.moves_refs), before anything runs."""
    from gitspace.storage.ledger import Op, encode_message, new_op_id

    call_ok(ws, "create", {"path": "a.md", "file_text": "a\n"})
    forged = Op(op_id=new_op_id(), tool="branch", args={"name": "sneaky", "switch": False},
                agent="tester")
    tip = commit_tree(ws.root, tree_of(ws.root, "HEAD"), head(ws.root),
                      msg=encode_message(forged, "branch sneaky"), by="tester <tester@gitspace>")
    d = replayed(ws, tip).divergence
    assert d is not None and d.op_id == forged.op_id and "moves refs" in d.reason
    assert "sneaky" not in git(ws.root, "branch", "--list")


def test_a_merge_must_be_gits_own_merge_of_its_parents(ws: Workspace) -> None:
    call_ok(ws, "create", {"path": "notes.md", "file_text": "notes\n"})
    call_ok(ws, "branch", {"name": "agent"})
    call_ok(ws, "create", {"path": "agent.md", "file_text": "agent\n"})
    call_ok(ws, "switch", {"name": "main"})
    call_ok(ws, "create", {"path": "main.md", "file_text": "main\n"})
    main, agent = head(ws.root, "main"), head(ws.root, "agent")
    honest = commit_tree(ws.root, ws.repo.merge_tree(main, agent)[0], main, agent,
                         msg="Merge agent\n")
    report = replay(ws, honest, main, allow_empty=True)  # a merge alone re-runs no op
    assert report.ok and report.recorded_why == {"merge commit": 1}
    evil = commit_tree(ws.root, tree_with(ws.root, honest, {"slipped.txt": "in\n"}), main, agent,
                       msg="Merge agent\n")
    d = replay(ws, evil, main).divergence
    assert d is not None and d.commit == evil and d.paths == ["slipped.txt"]
    assert d.reason == "an evil merge: its files differ from merging its parents."
    assert "--- recorded/slipped.txt" in d.diff
    as_op = commit_tree(ws.root, tree_of(ws.root, honest), main, agent, msg=message(ws.root, agent))
    d = replay(ws, as_op, main).divergence
    assert d is not None and "merge commit carrying op trailers" in d.reason


def test_a_merge_resolved_by_hand_is_reported_with_its_conflict(ws: Workspace) -> None:
    main, agent = forked(ws)
    call_ok(ws, "switch", {"name": "agent"})
    call_ok(ws, "str_replace", {"path": "notes.md", "old_str": "beta", "new_str": "B"})
    agent = head(ws.root, "agent")
    resolved = commit_tree(ws.root, tree_with(ws.root, agent, {"notes.md": "hand\n"}), main,
                           agent, msg="Merge agent\n")
    d = replay(ws, resolved, main).divergence
    assert d is not None and "conflicts in notes.md" in d.reason and d.paths == ["notes.md"]


def test_an_init_op_with_a_parent_diverges(ws: Workspace) -> None:
    call_ok(ws, "create", {"path": "a.md", "file_text": "a\n"})
    root = revs(ws.root)[0]
    tip = like(ws.root, root, tree_with(ws.root, "HEAD", {"b.md": "b\n"}), head(ws.root))
    d = replay(ws, tip).divergence
    assert d is not None and d.tool == "init"
    assert d.reason == ("it claims to be the workspace's first commit (source init), but it has a "
                        "parent; only a commit without parents can be that.")


def test_an_outside_edit_must_change_exactly_the_paths_it_records(ws: Workspace) -> None:
    call_ok(ws, "create", {"path": "a.md", "file_text": "a\n"})
    (ws.root / "outside.md").write_text("by hand\n")
    assert ws.snapshot().ok
    assert replay(ws, head(ws.root)).ok
    more = like(ws.root, "HEAD", tree_with(ws.root, "HEAD", {"extra.md": "x\n"}), head(ws.root, "HEAD~1"))
    d = replay(ws, more).divergence
    assert d is not None and d.tool == "external_edit" and d.paths == ["extra.md", "outside.md"]
    assert "outside edit of 1 path(s) (outside.md), but the commit changes 2 (extra.md, " \
           "outside.md)" in d.reason
    fewer = like(ws.root, "HEAD", tree_of(ws.root, "HEAD~1"), head(ws.root, "HEAD~1"))
    assert replay(ws, fewer).divergence is not None
    someone = commit_tree(ws.root, tree_of(ws.root, "HEAD"), head(ws.root, "HEAD~1"),
                          msg=message(ws.root, "HEAD"), by="Boss <boss@corp.example>")
    d = replay(ws, someone).divergence
    assert d is not None and "its author is 'Boss <boss@corp.example>'" in d.reason


def commit_a_transcript(ws: Workspace, files: dict[str, str]) -> None:
    """A transcript op as ``gitspace run --commit-transcript`` records it."""
    from gitspace.core.transaction import Outcome

    who = ws.identity("transcript", source="transcript")
    op = who.op({"path": "transcripts/s1.json", "session": "s1"})

    def stage(txn: Any) -> Outcome:
        for path, text in files.items():
            txn.write(path, text.encode())
        return Outcome("Committed the conversation.", "transcript s1")

    ws.transact(op, stage, who.author)


def test_a_transcript_op_may_change_only_its_transcript(ws: Workspace) -> None:
    commit_a_transcript(ws, {"transcripts/s1.json": "{}\n"})
    report = replay(ws, head(ws.root))
    assert report.ok and report.recorded_why == {"root commit": 1, "transcript op": 1}
    commit_a_transcript(ws, {"transcripts/s1.json": "{\"more\": 1}\n", "evil.py": "x\n"})
    d = replay(ws, head(ws.root)).divergence
    assert d is not None and d.tool == "transcript" and d.paths == ["evil.py", "transcripts/s1.json"]
    assert "commits the transcript transcripts/s1.json only" in d.reason


@pytest.mark.parametrize("forge", ["subject", "approval"])
def test_a_forged_subject_or_an_added_body_line_is_caught(ws: Workspace, forge: str) -> None:
    call_ok(ws, "create", {"path": "a.md", "file_text": "a\n"})
    call_ok(ws, "str_replace", {"path": "a.md", "old_str": "a", "new_str": "b"})
    honest = message(ws.root, "HEAD")
    subject = honest.split("\n", 1)[0]
    if forge == "subject":
        forged, shown = honest.replace(subject, "security review passed", 1), [
            "-security review passed", f"+{subject}"]
    else:
        forged, shown = honest.replace("\n\nGitspace-Format", "\n\nApproved-by: boss\n\n"
                                       "Gitspace-Format", 1), ["-Approved-by: boss"]
    tip = like(ws.root, "HEAD", tree_of(ws.root, "HEAD"), head(ws.root, "HEAD~1"), forged)
    d = replay(ws, tip).divergence
    assert d is not None and d.tool == "str_replace" and not d.paths
    assert d.reason == ("its message differs from the one the tool writes: a subject or body "
                        "line the tool did not write.")
    assert "--- recorded message" in d.diff and "+++ replayed message" in d.diff
    assert all(line in d.diff for line in shown)


def test_a_forged_author_is_caught(ws: Workspace) -> None:
    call_ok(ws, "create", {"path": "a.md", "file_text": "a\n"})
    tip = commit_tree(ws.root, tree_of(ws.root, "HEAD"), head(ws.root, "HEAD~1"),
                      msg=message(ws.root, "HEAD"), by="Boss <boss@corp.example>")
    d = replay(ws, tip).divergence
    assert d is not None and d.tool == "create"
    assert d.reason == ("its author is 'Boss <boss@corp.example>', but the tool commits as "
                        "'tester <tester@gitspace>'.")


def test_the_workspace_size_cap_applies_to_the_replay(tmp_path: Path) -> None:
    big = "x" * 1_500_000 + "\n"
    with gitspace.init(tmp_path / "big", agent="tester", max_file_bytes=4 << 20) as ws:
        call_ok(ws, "create", {"path": "big.txt", "file_text": big})
        report = replay(ws, head(ws.root))
    assert report.ok and report.reexecuted == 1, report.divergence


def test_diffs_and_path_lists_are_bounded(ws: Workspace) -> None:
    from gitspace.replay.judge import DIFF_BYTES, DIFF_LINE_CHARS, PATHS_LISTED

    call_ok(ws, "create", {"path": "a.md", "file_text": "a\n"})
    wide = {"a.md": "".join(("€" * 2000) + f"{i}\n" for i in range(60))}
    many = {f"f{i:03}.md": f"{i}\n" for i in range(PATHS_LISTED + 50)}
    tip = like(ws.root, "HEAD", tree_with(ws.root, "HEAD", {**wide, **many}),
               head(ws.root, "HEAD~1"))
    d = replay(ws, tip).divergence
    assert d is not None and len(d.paths) == PATHS_LISTED and d.more_paths == 51
    assert all(len(line) <= DIFF_LINE_CHARS + 40 for line in d.diff)
    assert any(line.endswith("(1,702 more characters)") for line in d.diff)
    assert sum(len(line.encode()) + 1 for line in d.diff) <= DIFF_BYTES + 100
    assert d.diff[-1].startswith("... ") and d.diff[-1].endswith("more diff lines")


def test_no_scripts_leaves_workspace_scripts_unrun_and_counts_them(ws: Workspace,
                                                                  tmp_path: Path) -> None:
    runs = tmp_path / "runs.log"  # outside every work tree: each run of the script adds a line
    add_script(ws, "bump", f"with open({str(runs)!r}, 'a') as f:\n    f.write('ran\\n')\n"
               "with open('counter.txt', 'a') as f:\n    f.write('+1\\n')\n")
    call_ok(ws, "bump", {})
    call_ok(ws, "create", {"path": "a.md", "file_text": "a\n"})
    call_ok(ws, "bump", {})
    assert runs.read_text() == "ran\n" * 2
    report = replay(ws, head(ws.root), scripts=False)
    assert report.ok and report.unverified == 2 and report.reexecuted == 1
    assert report.as_json()["unverified"] == 2 and report.checked == report.total == 5
    assert runs.read_text() == "ran\n" * 2, "a script ran with scripts disabled"
    assert replay(ws, head(ws.root)).ok and runs.read_text() == "ran\n" * 4
    lie, _ = rewritten_script_op(ws)
    d = replay(ws, lie, scripts=False).divergence
    assert d is not None and "no Gitspace-Script" in d.reason


def rewritten_script_op(ws: Workspace) -> tuple[str, str]:
    """The last op (a script op) without its Gitspace-Script trailer: (new tip, the op)."""
    msg = "\n".join(line for line in message(ws.root, "HEAD").split("\n")
                    if not line.startswith("Gitspace-Script:"))
    return like(ws.root, "HEAD", tree_of(ws.root, "HEAD"), head(ws.root, "HEAD~1"), msg), "HEAD"


def test_a_scratch_folder_that_cannot_be_removed_is_named_in_the_report(
        ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil
    import types

    from gitspace.replay import scratch

    call_ok(ws, "create", {"path": "a.md", "file_text": "a\n"})
    # A git child still writing into the folder, as an interrupt can leave one, is what makes
    # removal fail for real; here removal simply never succeeds.
    monkeypatch.setattr(scratch, "shutil", types.SimpleNamespace(rmtree=lambda *a, **k: None))
    monkeypatch.setattr(scratch, "REMOVE_ATTEMPTS", 2)
    report = replay(ws, head(ws.root))
    monkeypatch.undo()
    assert report.ok and report.leftover is not None
    leftover = Path(report.leftover)
    assert leftover.name.startswith("gitspace-replay-") and leftover.is_dir()
    shutil.rmtree(leftover)


@pytest.fixture
def stamp_tool(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A test-only built-in tool, listed with the built-ins (the one registration a tool needs)."""
    def register(version: str) -> None:
        @registry.builtin("stamp_test", "Write stamp.txt (test only).", {"text": "x"},
                          registry.obj(["text"], text=registry.string("What to stamp.")),
                          mutates=True)
        def stamp(ws: Workspace, args: dict[str, Any], who: Identity) -> Result:
            from gitspace.core.transaction import Outcome

            def stage(txn: Any) -> Outcome:
                txn.write("stamp.txt", f"{version}: {args['text']}\n".encode())
                return Outcome("stamped", "stamp")

            return ws.transact(who.op(args), stage, who.author)

        monkeypatch.setitem(builtins.BUILTINS, "stamp_test", stamp)

    yield register


def test_a_tool_whose_behaviour_changed_since_the_op_diverges_there(ws: Workspace,
                                                                    stamp_tool: Any) -> None:
    stamp_tool("v1")
    call_ok(ws, "create", {"path": "a.md", "file_text": "a\n"})
    call_ok(ws, "stamp_test", {"text": "hello"})
    call_ok(ws, "stamp_test", {"text": "again"})
    assert replayed(ws).ok
    stamp_tool("v2")  # a new release of the tool writes something else for the same call
    d = replayed(ws).divergence
    assert d is not None and d.commit == head(ws.root, "HEAD~1") and d.paths == ["stamp.txt"]
    assert "-v1: hello" in d.diff and "+v2: hello" in d.diff


def test_scripts_run_as_they_were_in_the_tree_at_each_op(ws: Workspace) -> None:
    add_script(ws, "bump", BUMP, helper="STEP = '+1\\n'\n")
    call_ok(ws, "bump", {})
    call_ok(ws, "bump", {})
    # A person changes the helper and the script with a plain commit (not an op) ...
    (ws.root / "constraints" / "_helper.py").write_text("STEP = '+2\\n'\n")
    (ws.root / "constraints" / "bump.py").write_text(
        (ws.root / "constraints" / "bump.py").read_text() + "# v2\n")
    git(ws.root, "commit", "-qam", "faster bumps")
    call_ok(ws, "bump", {})  # ... and later ops run the new code.
    assert (ws.root / "counter.txt").read_text() == "+1\n+1\n+2\n"
    report = replayed(ws)
    assert report.ok, report.divergence
    assert report.recorded_why == {"root commit": 1, "external op": 1, "not an op": 1}


def rewritten(ws: Workspace, files: dict[str, str]) -> tuple[str, str]:
    """The script was added by an outside edit, then ran as an op. Rewrite both commits so the
    tree holds ``files`` from the outside edit on: (new tip, the original op commit)."""
    init, added, op = revs(ws.root)
    tip = init
    for rev in (added, op):
        tip = like(ws.root, rev, tree_with(ws.root, rev, files), tip)
    return tip, op


def test_a_script_changed_under_an_op_is_reported_as_such(ws: Workspace) -> None:
    add_script(ws, "bump", BUMP, helper="STEP = '+1\\n'\n")
    call_ok(ws, "bump", {})
    script = (ws.root / "constraints" / "bump.py").read_text()
    lie, op = rewritten(ws, {"constraints/bump.py": script.replace("'a'", "'w'")})
    report = replay(ws, lie)
    d = report.divergence
    assert d is not None and d.tool == "bump" and d.op_id == gitspace_op(ws, op)
    assert d.reason.startswith("the script changed since the op")
    assert "constraints/bump.py in the tree at this op" in d.reason
    assert report.recorded_why == {"root commit": 1, "external op": 1}


def test_a_helper_changed_under_an_op_shows_as_different_files(ws: Workspace) -> None:
    add_script(ws, "bump", BUMP, helper="STEP = '+1\\n'\n")
    call_ok(ws, "bump", {})
    lie, op = rewritten(ws, {"constraints/_helper.py": "STEP = '+3\\n'\n"})
    d = replay(ws, lie).divergence
    assert d is not None and d.op_id == gitspace_op(ws, op) and d.paths == ["counter.txt"]
    assert "-+1" in d.diff and "++3" in d.diff


# -- onto ------------------------------------------------------------------------------------


def forked(ws: Workspace) -> tuple[str, str]:
    """main and agent diverge on adjacent lines of notes.md: git rebase conflicts there."""
    call_ok(ws, "create", {"path": "notes.md", "file_text": "title\nalpha\nbeta\ngamma\n"})
    call_ok(ws, "checkpoint", {"name": "fork"})
    call_ok(ws, "branch", {"name": "agent", "from": "fork"})
    call_ok(ws, "str_replace", {"path": "notes.md", "old_str": "alpha", "new_str": "ALPHA"})
    call_ok(ws, "create", {"path": "agent.md", "file_text": "mine\n"})
    call_ok(ws, "switch", {"name": "main"})
    call_ok(ws, "str_replace", {"path": "notes.md", "old_str": "beta", "new_str": "BETA"})
    return head(ws.root, "main"), head(ws.root, "agent")


def test_onto_succeeds_where_git_rebase_conflicts(ws: Workspace, tmp_path: Path) -> None:
    main, agent = forked(ws)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(ws.root), str(clone))
    git(clone, "switch", "-q", "agent")
    assert git_run(clone, "rebase", "origin/main").returncode != 0, "git rebase should conflict"
    before = user_state(ws.root)
    report = replay_onto(ws, agent, main, "agent-on-main")
    assert report.ok and report.reexecuted == 2 and report.created == head(ws.root, "agent-on-main")
    after = user_state(ws.root)
    assert after[1:] == before[1:], "only the refs may change"
    assert set(after[0].splitlines()) - set(before[0].splitlines()) == {
        f"{report.created} commit\trefs/heads/agent-on-main"}
    assert git(ws.root, "show", "agent-on-main:notes.md") == "title\nALPHA\nBETA\ngamma\n"
    assert git(ws.root, "rev-parse", "agent-on-main~2").strip() == main
    assert [gitspace_op(ws, f"agent-on-main~{i}") for i in (1, 0)] == [
        gitspace_op(ws, f"agent~{i}") for i in (1, 0)]
    assert replay(ws, report.created, main).ok  # the new branch replays clean itself
    # Each re-run op names the commit it was recorded as; re-run again, still the first one.
    from gitspace.storage.ledger import parse_message

    origins = [parse_message(message(ws.root, f"agent-on-main~{i}")) for i in (1, 0)]
    assert [o.rebased_from for o in origins if o] == [head(ws.root, f"agent~{i}") for i in (1, 0)]
    again = replay_onto(ws, report.created, main, "again", base=main)
    assert again.ok and parse_message(message(ws.root, "again")).rebased_from == head(  # type: ignore[union-attr]
        ws.root, "agent")
    assert_clean(ws.root)


def test_onto_stops_cleanly_where_the_meaning_no_longer_applies(ws: Workspace) -> None:
    main, agent = forked(ws)
    call_ok(ws, "str_replace", {"path": "notes.md", "old_str": "alpha\n", "new_str": ""})
    main = head(ws.root, "main")
    before = user_state(ws.root)
    report = replay_onto(ws, agent, main, "agent-on-main")
    d = report.divergence
    assert d is not None and report.result == "stopped" and report.created is None
    assert d.op_id == gitspace_op(ws, "agent~1") and "did not appear verbatim" in d.reason
    assert user_state(ws.root) == before
    with pytest.raises(gitspace.GitspaceError, match="already exists"):
        replay_onto(ws, agent, main, "agent")


def test_onto_moves_outside_edits_by_merging_and_stops_on_a_conflict(ws: Workspace) -> None:
    main, agent = forked(ws)
    call_ok(ws, "switch", {"name": "agent"})
    (ws.root / "notes.md").write_text("title\nALPHA\nbeta\ngamma\nend by hand\n")
    assert ws.snapshot().ok
    call_ok(ws, "switch", {"name": "main"})
    report = replay_onto(ws, head(ws.root, "agent"), main, "moved")
    assert report.ok and report.recorded_why == {"external op": 1}
    assert git(ws.root, "show", "moved:notes.md") == "title\nALPHA\nBETA\ngamma\nend by hand\n"
    call_ok(ws, "create", {"path": "notes.md", "file_text": "title\nalpha\nBETA\ngamma\nEND\n"})
    stopped = replay_onto(ws, head(ws.root, "agent"), head(ws.root, "main"), "moved-again")
    d = stopped.divergence
    assert d is not None and "conflicts" in d.reason and d.tool == "external_edit"
    assert git_run(ws.root, "rev-parse", "--verify", "moved-again").returncode != 0
    assert replay(ws, report.created, main).ok  # the created branch replays clean


@pytest.mark.parametrize("where", ["moved", "base"])
def test_onto_stops_at_a_restore_of_a_checkpoint_that_would_not_move(ws: Workspace,
                                                                     where: str) -> None:
    main, _ = forked(ws)  # checkpoint "fork" is at the merge base
    call_ok(ws, "switch", {"name": "agent"})
    call_ok(ws, "checkpoint", {"name": "agent-1"})
    call_ok(ws, "delete", {"path": "agent.md"})
    call_ok(ws, "restore", {"name": "agent-1" if where == "moved" else "fork"})
    call_ok(ws, "create", {"path": "after.md", "file_text": "after\n"})
    before = user_state(ws.root)
    report = replay_onto(ws, head(ws.root, "agent"), main, "moved")
    d = report.divergence
    assert d is not None and report.result == "stopped" and d.tool == "restore"
    assert d.commit == head(ws.root, "agent~1") and report.checked == 3
    at = "a commit this replay moves" if where == "moved" else "the commit the ops start after"
    assert f"restores checkpoint {'agent-1' if where == 'moved' else 'fork'!r}, which is at {at}" \
        in d.reason and "Replay only the ops before it" in d.reason
    assert user_state(ws.root) == before


def test_onto_restores_a_checkpoint_the_branch_does_not_move(ws: Workspace) -> None:
    call_ok(ws, "checkpoint", {"name": "empty"})  # at the root commit, before the fork
    main, _ = forked(ws)
    call_ok(ws, "switch", {"name": "agent"})
    call_ok(ws, "restore", {"name": "empty"})
    call_ok(ws, "create", {"path": "fresh.md", "file_text": "fresh\n"})
    report = replay_onto(ws, head(ws.root, "agent"), main, "moved")
    assert report.ok, report.divergence
    assert git(ws.root, "ls-tree", "--name-only", "moved").split() == [".gitignore", "fresh.md"]
    assert replay(ws, "moved", main).ok  # the created branch replays clean


def test_onto_stops_where_part_of_an_outside_edit_is_already_there(ws: Workspace) -> None:
    main, _ = forked(ws)
    call_ok(ws, "switch", {"name": "agent"})
    (ws.root / "shared.md").write_text("same\n")
    (ws.root / "mine.md").write_text("only here\n")
    assert ws.snapshot().ok
    call_ok(ws, "switch", {"name": "main"})
    call_ok(ws, "create", {"path": "shared.md", "file_text": "same\n"})
    report = replay_onto(ws, head(ws.root, "agent"), head(ws.root, "main"), "moved")
    d = report.divergence
    assert d is not None and d.tool == "external_edit" and "shared.md is already on the new" \
        in d.reason and report.created is None


def gitspace_op(ws: Workspace, rev: str) -> str:
    from gitspace.storage.ledger import parse_message

    op = parse_message(message(ws.root, rev))
    assert op is not None
    return op.op_id


def test_a_script_that_uses_now_sees_the_recorded_moment_on_replay(ws: Workspace) -> None:
    import json

    # Recorded "in the past": a replay now would see another second.
    done = ws.call_as(ws.identity("append_entry", clock=1_700_000_000),
                      {"path": "journal/log.jsonl", "text": "shipped it"})
    assert done.ok, done.text
    entry = json.loads((ws.root / "journal/log.jsonl").read_text())
    assert entry["ts"].startswith("2023-11-14T22:13:20")
    assert ws.repo.commit(done.commit).time == 1_700_000_000
    report = replay(ws, head(ws.root))
    assert report.ok, report.divergence


def test_the_scratch_goes_to_ram_when_it_fits_and_where_a_person_says(
        ws: Workspace, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from gitspace.replay.scratch import scratch_parent

    call_ok(ws, "create", {"path": "a.md", "file_text": "a\n"})
    tip = head(ws.root)
    monkeypatch.delenv("GITSPACE_SCRATCH_DIR")
    monkeypatch.delenv("TMPDIR", raising=False)
    ram = Path("/dev/shm")
    fits = ram if ram.is_dir() and os.access(ram, os.W_OK) else Path(tempfile.gettempdir())
    assert scratch_parent(ws.repo, tip, 10) == fits
    assert scratch_parent(ws.repo, tip, 10**9) == Path(tempfile.gettempdir())  # no room in RAM
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    assert scratch_parent(ws.repo, tip, 10) == tmp_path
    monkeypatch.setenv("GITSPACE_SCRATCH_DIR", str(tmp_path / "x"))
    assert scratch_parent(ws.repo, tip, 10) == tmp_path / "x"
