"""Replay against forged and malformed histories: every branch of the replay code that reports a
commit instead of re-running it (or that re-runs it and reports what went wrong), each reached
by a history built with plain git plumbing, and the default ``replay --onto`` depends on. Also
the judge's helpers exactly (the listing of paths, the diff's caps at their edges) and an op
recorded in an older ledger format.

The other lies (a hand edit under a tool trailer, reordered or dropped ops, forged subjects,
authors and undo links, evil merges, a missing elided blob...) are in test_replay.py.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import call_ok, git, git_env, head, ops
from hostile import raw_tree
from test_replay import (
    add_script,
    commit_tree,
    like,
    message,
    tree_of,
    tree_with,
)

from gitspace.core.workspace import Workspace
from gitspace.replay import judge
from gitspace.replay.engine import BadRange, replay
from gitspace.replay.onto import replay_onto
from gitspace.storage import ledger, records
from gitspace.storage.ledger import Op
from gitspace.storage.objects import Commit

OP_ID = "01ARZ3NDEKTSV4RRFFQ69G5FAV"

pytestmark = pytest.mark.usefixtures("scratch_dirs")  # no scratch folder may be left behind


def blob(root: Path, data: bytes) -> str:
    return subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=root, env=git_env(),
                          input=data, capture_output=True, check=True).stdout.decode().strip()


def with_args(msg: str, args: str) -> str:
    """``msg`` with its Gitspace-Args line replaced (``args`` must be canonical JSON)."""
    return re.sub(r"^Gitspace-Args: .*$", lambda _: f"Gitspace-Args: {args}", msg, count=1,
                  flags=re.M)


def op_message(subject: str, tool: str, source: str, args: str, agent: str | None = None,
               extra: str = "") -> str:
    lines = ["Gitspace-Format: 1", f"Gitspace-Op: {OP_ID}", f"Gitspace-Tool: {tool}",
             f"Gitspace-Source: {source}", f"Gitspace-Args: {args}"]
    if agent:
        lines.append(f"Gitspace-Agent: {agent}")
    return f"{subject}\n\n" + "\n".join(lines) + "\n" + extra


def forged_create(ws: Workspace, args: str, extra_trailer: str = "") -> str:
    """The tip's create op of a.md again, with ``args`` (and a trailer line, before the op it
    names as the one before it, which is last) swapped in."""
    msg = with_args(message(ws.root, "HEAD"), args).rstrip("\n") + "\n"
    after = re.search(r"^Gitspace-After: .*\n", msg, flags=re.M)
    msg = msg + extra_trailer if after is None else \
        msg[:after.start()] + extra_trailer + msg[after.start():]
    return like(ws.root, "HEAD", tree_of(ws.root, "HEAD"), head(ws.root, "HEAD~1"), msg)


# -- each forgery, and what replay must say about it -------------------------------------------


def octopus(ws: Workspace) -> str:
    call_ok(ws, "create", {"path": "b.md", "file_text": "b\n"})
    tip = head(ws.root)
    return commit_tree(ws.root, tree_of(ws.root, tip), tip, head(ws.root, "HEAD~1"),
                       head(ws.root, "HEAD~2"), msg="merge three\n")


def elided_in_another_form(ws: Workspace) -> str:
    sha = blob(ws.root, b"a\n")
    return forged_create(ws, f'{{"file_text":{{"$blob":"{sha}","bytes":2,"x":1}},"path":"a.md"}}')


def elided_with_another_size(ws: Workspace) -> str:
    sha = blob(ws.root, b"a\n")
    return forged_create(ws, f'{{"file_text":{{"$blob":"{sha}","bytes":7}},"path":"a.md"}}')


def elided_naming_a_tree(ws: Workspace) -> str:
    tree = tree_of(ws.root, "HEAD")
    return forged_create(ws, f'{{"file_text":{{"$blob":"{tree}","bytes":2}},"path":"a.md"}}')


def elided_naming_binary(ws: Workspace) -> str:
    sha = blob(ws.root, b"\xff\xfe")
    return forged_create(ws, f'{{"file_text":{{"$blob":"{sha}","bytes":2}},"path":"a.md"}}')


def external_without_paths(ws: Workspace) -> str:
    tree = tree_with(ws.root, "HEAD", {"b.md": "b\n"})
    return commit_tree(ws.root, tree, head(ws.root), by="unknown <unknown@gitspace>",
                       msg=op_message("external edit of b.md", "external_edit", "external",
                                      '{"count":1}'))


def external_by_someone_else(ws: Workspace) -> str:
    tree = tree_with(ws.root, "HEAD", {"b.md": "b\n"})
    return commit_tree(ws.root, tree, head(ws.root), by="Mallory <m@evil.example>",
                       msg=op_message("external edit of b.md", "external_edit", "external",
                                      '{"count":1,"paths":["b.md"]}', agent="unknown"))


def transcript_elsewhere(ws: Workspace) -> str:
    tree = tree_with(ws.root, "HEAD", {"notes/s1.json": "{}\n"})
    return commit_tree(ws.root, tree, head(ws.root), by="tester <tester@gitspace>",
                       msg=op_message("transcript s1", "transcript", "transcript",
                                      '{"path":"notes/s1.json","session":"s1"}', agent="tester"))


def builtin_with_a_script(ws: Workspace) -> str:
    return forged_create(ws, '{"file_text":"a\\n","path":"a.md"}',
                         "Gitspace-Script: " + "ab" * 20 + "\n")


def branch_call_as_an_op(ws: Workspace) -> str:
    return commit_tree(ws.root, tree_of(ws.root, "HEAD"), head(ws.root), by="tester <tester@gitspace>",
                       msg=op_message("branch x", "branch", "tool", '{"name":"x"}',
                                      agent="tester"))


def rerun_fails(ws: Workspace) -> str:
    tree = tree_with(ws.root, "HEAD", {"a.md": "zebra\n"})
    return commit_tree(ws.root, tree, head(ws.root), by="tester <tester@gitspace>",
                       msg=op_message("str_replace a.md", "str_replace", "tool",
                                      '{"new_str":"zebra","old_str":"lion","path":"a.md"}',
                                      agent="tester"))


def elided_naming_no_object_id(ws: Workspace) -> str:
    return forged_create(ws, '{"file_text":{"$blob":"a1b2","bytes":2},"path":"a.md"}')


def rerun_changes_nothing(ws: Workspace) -> str:
    """An op recorded on top of the state it would produce: re-running it is 'unchanged'."""
    return like(ws.root, "HEAD", tree_of(ws.root, "HEAD"), head(ws.root))


CASES: dict[str, tuple[Callable[[Workspace], str], str | None, str]] = {
    "octopus merge": (octopus, None, "it merges 3 parents, and replay can check only a merge "
                                     "of two"),
    "elided in another form": (elided_in_another_form, "create",
                               "its argument 'file_text' is elided in a form the ledger does not "
                               "define, so the op cannot be checked."),
    "elided with another size": (elided_with_another_size, "create",
                                 "the elided argument 'file_text' says 7 bytes, but its blob "
                                 "78981922613b has 2, so the op cannot be checked."),  # (a\n)
    "elided naming a tree": (elided_naming_a_tree, "create", "which is not a UTF-8 text blob"),
    "elided naming no object id": (elided_naming_no_object_id, "create",
                                   "its argument 'file_text' is elided in a form the ledger does "
                                   "not define"),
    "elided naming binary": (elided_naming_binary, "create",
                             "the elided argument 'file_text' names 46b134b197f3, which is not a "
                             "UTF-8 text blob, so the op cannot be checked."),  # (ff fe)
    "external without its path list": (external_without_paths, "external_edit",
                                       "its arguments do not record which paths the outside edit "
                                       "changed (count and paths)"),
    "external by someone else": (external_by_someone_else, "external_edit",
                                 "its author is 'Mallory <m@evil.example>', but gitspace authors "
                                 "an op of agent 'unknown' as 'unknown <unknown@gitspace>'."),
    "transcript elsewhere": (transcript_elsewhere, "transcript",
                             "its path argument is not transcripts/<session>.json"),
    "built-in tool with a script": (builtin_with_a_script, "create",
                                    "the op ran script abababababab, but create is now a built-in "
                                    "tool."),
    "op that records a branch call": (branch_call_as_an_op, "branch",
                                      "it records a branch call, but branch moves refs and "
                                      "records no commit of its own"),
    "re-run fails": (rerun_fails, "str_replace",
                     "re-running it failed: No replacement was performed, old_str `lion`"),
    "re-run changes nothing": (rerun_changes_nothing, "create",
                               "re-running it changed nothing, but the recorded commit is an op"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_forged_commit_is_reported_at_itself(ws: Workspace, case: str) -> None:
    build, tool, reason = CASES[case]
    call_ok(ws, "create", {"path": "a.md", "file_text": "a\n"})
    tip = build(ws)
    before = git(ws.root, "for-each-ref")
    report = replay(ws, tip)
    d = report.divergence
    assert d is not None, f"{case} replayed clean"
    assert d.commit == tip and d.tool == tool
    assert reason in d.reason, d.reason
    assert report.as_json()["divergence"]["reason"] == d.reason
    assert git(ws.root, "for-each-ref") == before


def test_an_unrun_script_op_by_someone_else_is_caught_without_running_it(
        ws: Workspace, tmp_path: Path) -> None:
    add_script(ws, "bump", "open('counter.txt', 'a').write('+1\\n')\n")
    call_ok(ws, "bump", {})
    tip = commit_tree(ws.root, tree_of(ws.root, "HEAD"), head(ws.root, "HEAD~1"),
                      msg=message(ws.root, "HEAD"), by="Boss <boss@corp.example>")
    d = replay(ws, tip, scripts=False).divergence
    assert d is not None and d.tool == "bump" and d.commit == tip
    assert "its author is 'Boss <boss@corp.example>'" in d.reason


# -- replay --onto -----------------------------------------------------------------------------


def forked(ws: Workspace) -> tuple[str, str]:
    """main moves on after 'feature' forked from it: (the fork point, feature's tip)."""
    call_ok(ws, "create", {"path": "a.md", "file_text": "a\n"})
    fork = head(ws.root)
    call_ok(ws, "branch", {"name": "feature"})
    call_ok(ws, "create", {"path": "f.md", "file_text": "feature\n"})
    call_ok(ws, "append", {"path": "a.md", "text": "from feature\n"})
    call_ok(ws, "switch", {"name": "main"})
    call_ok(ws, "create", {"path": "m.md", "file_text": "main moved on\n"})
    return fork, head(ws.root, "feature")


def test_onto_starts_after_the_merge_base_by_default(ws: Workspace) -> None:
    """The default --onto depends on: without --from, the ops replayed are those after the merge
    base of the branch and --onto (like git rebase), not the whole branch."""
    fork, feature = forked(ws)
    main = head(ws.root, "main")
    report = replay_onto(ws, feature, main, "moved")
    assert report.ok and report.base == fork and report.start == fork
    assert report.total == report.reexecuted == 2
    assert git(ws.root, "rev-list", "--count", "main..moved").strip() == "2"
    assert git(ws.root, "rev-parse", "moved~2").strip() == main
    assert git(ws.root, "show", "moved:a.md") == "a\nfrom feature\n"
    assert git(ws.root, "show", "moved:m.md") == "main moved on\n"


def test_onto_a_revision_without_common_history_is_a_usage_error(ws: Workspace) -> None:
    fork, feature = forked(ws)
    orphan = commit_tree(ws.root, tree_of(ws.root, "main"), msg="unrelated root\n")
    with pytest.raises(BadRange, match="have no common history") as caught:
        replay_onto(ws, feature, orphan, "moved")
    assert caught.value.option == "--onto"
    assert "moved" not in git(ws.root, "branch", "--list")


def test_onto_stops_at_a_plain_commit_whose_change_is_already_there(ws: Workspace) -> None:
    fork, feature = forked(ws)
    same = commit_tree(ws.root, tree_with(ws.root, feature, {"m.md": "main moved on\n"}), feature,
                       msg="a person adds what main already has\n")
    report = replay_onto(ws, same, head(ws.root, "main"), "moved")
    d = report.divergence
    assert d is not None and d.commit == same and d.op_id is None
    assert "it would change nothing on the new base: its change is already there." == d.reason
    assert report.created is None and "moved" not in git(ws.root, "branch", "--list")


def test_onto_stops_at_a_malformed_op_before_looking_for_restores(ws: Workspace) -> None:
    fork, feature = forked(ws)
    broken = like(ws.root, feature, tree_of(ws.root, feature), head(ws.root, f"{feature}~1"),
                  message(ws.root, feature).replace("Gitspace-Source: tool\n", ""))
    report = replay_onto(ws, broken, head(ws.root, "main"), "moved")
    d = report.divergence
    assert d is not None and d.commit == broken
    assert "its trailer block is malformed: Missing trailer(s): Gitspace-Source." in d.reason


# -- the judge's helpers exactly --------------------------------------------------------------


def test_a_listing_shows_five_paths_and_counts_the_rest() -> None:
    assert judge._listing([]) == "none"
    assert judge._listing(list("abcde")) == "a, b, c, d, e"
    assert judge._listing(list("abcdefg")) == "a, b, c, d, e and 2 more"


def test_a_diff_is_capped_at_40_lines() -> None:
    lines = [f"+{i}" for i in range(43)]
    assert judge.cap_diff(lines[:40]) == lines[:40]
    assert judge.cap_diff(lines) == [*lines[:40], "... 3 more diff lines"]


def test_a_diff_is_capped_at_16000_bytes_exactly() -> None:
    line = "\U0001f600" * 249 + "abc"  # 999 bytes and its newline: 1,000
    assert len(line.encode()) + 1 == 1000 and judge.DIFF_BYTES == 16_000
    assert judge.cap_diff([line] * 16) == [line] * 16  # 16,000 bytes: all of them
    assert judge.cap_diff([line] * 18) == [*[line] * 16, "... 2 more diff lines"]


def test_a_long_diff_line_is_cut_at_300_characters() -> None:
    assert judge.cap_diff(["x" * 300]) == ["x" * 300]
    assert judge.cap_diff(["x" * 1301]) == ["x" * 300 + " ... (1,001 more characters)"]


def test_a_merge_that_carries_an_op_is_refused_by_name(ws: Workspace) -> None:
    merge = Commit("a" * 40, "b" * 40, ("c" * 40, "d" * 40), "", "", "")
    why, tree = judge.merge_problem(ws.repo, merge, Op("01ARZ3NDEKTSV4RRFFQ69G5FAV", "create", {}))
    assert why == ("it is a merge commit carrying op trailers, but ops are never merges: an op "
                   "always has exactly one parent.") and tree is None


def test_a_script_changed_under_an_op_that_is_not_re_run_is_caught(ws: Workspace) -> None:
    add_script(ws, "bump", "open('counter.txt', 'a').write('+1\\n')\n")
    call_ok(ws, "bump", {})
    recorded = ws.repo.hash_object("blob", (ws.root / "constraints" / "bump.py").read_bytes())
    changed = (ws.root / "constraints" / "bump.py").read_text() + "# changed\n"
    before = commit_tree(ws.root, tree_with(ws.root, "HEAD~1", {"constraints/bump.py": changed}),
                         head(ws.root, "HEAD~1"), msg="a person edits the script\n")
    tip = commit_tree(ws.root, tree_with(ws.root, "HEAD", {"constraints/bump.py": changed}),
                      before, msg=message(ws.root, "HEAD"), by="tester <tester@gitspace>")
    d = replay(ws, tip, scripts=False).divergence
    assert d is not None and d.tool == "bump" and d.commit == tip
    now = ws.repo.hash_object("blob", changed.encode())
    assert d.reason == (f"the script changed since the op: it ran blob {recorded[:12]}, but "
                        f"constraints/bump.py in the tree at this op is blob {now[:12]}.")


def test_an_op_of_an_older_format_is_compared_in_that_format(
        ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    """After a format bump the tool writes format 5; the format-4 op is compared as format 4,
    the format-1 op as format 1 (which names no op before it)."""
    monkeypatch.setattr(ledger, "FORMAT", 1)
    call_ok(ws, "create", {"path": "a.md", "file_text": "one\n"})
    monkeypatch.setattr(ledger, "FORMAT", 4)
    call_ok(ws, "create", {"path": "b.md", "file_text": "two\n"})
    v4 = ledger.FORMATS[4]
    monkeypatch.setitem(ledger.FORMATS, 5, records.replace(v4, sources=(*v4.sources, "hook")))
    monkeypatch.setattr(ledger, "FORMAT", 5)
    assert [op.format for op in ops(ws.root)] == [4, 1, 4]
    report = replay(ws, head(ws.root))
    assert report.ok, report.divergence


def test_a_from_that_leaves_nothing_or_shares_no_history_says_what_to_pass(ws: Workspace) -> None:
    call_ok(ws, "create", {"path": "a.md", "file_text": "a\n"})
    tip = head(ws.root)
    call_ok(ws, "append", {"path": "a.md", "text": "more\n"})
    later = head(ws.root)
    with pytest.raises(BadRange) as nothing:
        replay(ws, tip, base=later)
    assert nothing.value.option == "--from"
    assert nothing.value.message == (f"{later[:12]} already contains every commit of "
                                     f"{tip[:12]}, so there are no ops after it to replay.")
    assert nothing.value.hint == ("--from names the commit the ops to replay start after, or the "
                                  "branch they forked from.")
    orphan = commit_tree(ws.root, tree_of(ws.root, "HEAD"), msg="unrelated root\n")
    with pytest.raises(BadRange) as unrelated:
        replay(ws, tip, base=orphan)
    assert unrelated.value.message == (f"{tip[:12]} and {orphan[:12]} have no common history, "
                                       f"so no op of {tip[:12]} starts after {orphan[:12]}.")
    assert unrelated.value.hint == ("Pass --from a commit of the branch itself (see 'gitspace "
                                    "log'), or leave it out to replay from the root commit.")


def test_progress_counts_every_commit_and_the_report_says_ok(ws: Workspace) -> None:
    call_ok(ws, "create", {"path": "a.md", "file_text": "a\n"})
    call_ok(ws, "append", {"path": "a.md", "text": "b\n"})
    seen: list[tuple[int, int]] = []
    report = replay(ws, head(ws.root), progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (2, 2) and [done for done, _ in seen] == sorted(done for done, _ in seen)
    assert {total for _, total in seen} == {2}
    assert report.as_json()["ok"] is True and report.as_json()["divergence"] is None


# -- trees no work tree can hold, and trees gitspace cannot read --------------------------------


def with_entries(root: Path, rev: str, extra: list[tuple[str, bytes, str]]) -> str:
    """The tree of ``rev`` with ``extra`` entries added at its top, written byte for byte (names
    unchecked, as a hostile remote could send them)."""
    listed = [(line.split()[0], line.split("\t", 1)[1].encode(), line.split()[2])
              for line in git(root, "ls-tree", rev).splitlines()]
    return raw_tree(root, sorted([*listed, *extra], key=lambda e: e[1]))


def dotdot(root: Path) -> tuple[str, bytes, str]:
    """A folder named '..' holding x.txt: a path no work tree can hold."""
    return ("40000", b"..", raw_tree(root, [("100644", b"x.txt", blob(root, b"x\n"))]))


def test_a_plain_commit_whose_tree_no_work_tree_can_hold_is_reported_at_itself(
        ws: Workspace) -> None:
    call_ok(ws, "create", {"path": "a.md", "file_text": "a\n"})
    base = head(ws.root)
    tip = commit_tree(ws.root, with_entries(ws.root, "HEAD", [dotdot(ws.root)]), base,
                      msg="a commit from elsewhere\n")
    report = replay(ws, tip, base)
    d = report.divergence
    assert d is not None and d.commit == tip and d.op_id is None and d.tool is None
    assert "refused the path" in d.reason, d.reason
    assert (report.base, report.start, report.total) == (base, base, 1)
    assert report.as_recorded == 0 and report.checked == 0


def test_an_op_whose_tree_gitspace_cannot_read_is_reported_at_itself(ws: Workspace) -> None:
    """An outside edit whose tree gives a file a mode without a kind: judging it reads the tree,
    which fails; replay reports the commit (no diff, no paths) instead of failing."""
    call_ok(ws, "create", {"path": "a.md", "file_text": "a\n"})
    base = head(ws.root)
    odd = with_entries(ws.root, "HEAD", [("644", b"p", blob(ws.root, b"p\n"))])
    tip = commit_tree(ws.root, odd, base, by="unknown <unknown@gitspace>",
                      msg=op_message("external edit of p", "external_edit", "external",
                                     '{"count":1,"paths":["p"]}', agent="unknown"))
    report = replay(ws, tip, base)
    d = report.divergence
    assert d is not None and d.commit == tip
    assert (d.op_id, d.tool, d.args, d.paths, d.diff) == (None, None, {}, [], [])
    assert "gives 'p' the mode 644, which is no kind of file git knows" in d.reason, d.reason
    assert report.checked == 0


def test_an_unrun_script_op_whose_tree_no_work_tree_can_hold_is_reported_at_itself(
        ws: Workspace) -> None:
    """With scripts off, a script op is taken as recorded: a tree naming '..' stops the replay
    there (it is neither applied nor counted as unverified)."""
    add_script(ws, "bump", "open('counter.txt', 'a').write('+1\\n')\n")
    op = call_ok(ws, "bump", {}).op
    tip = like(ws.root, "HEAD", with_entries(ws.root, "HEAD", [dotdot(ws.root)]),
               head(ws.root, "HEAD~1"))
    call_ok(ws, "create", {"path": "later.md", "file_text": "later\n"})
    later = like(ws.root, "HEAD", with_entries(ws.root, "HEAD", [dotdot(ws.root)]), tip)
    report = replay(ws, later, head(ws.root, "HEAD~2"), scripts=False)
    d = report.divergence
    assert d is not None and d.commit == tip and (d.op_id, d.tool) == (op, "bump")
    assert "refused the path" in d.reason, d.reason
    assert report.unverified == 0 and report.reexecuted == 0


def test_a_script_that_switches_branches_on_replay_is_reported_at_its_op(ws: Workspace) -> None:
    """A workspace script that behaves otherwise in replay's scratch (here: it switches branches
    there) diverges at its op, and nothing is taken from the other branch."""
    add_script(ws, "hop", "import os, subprocess\n"
               "if 'gitspace-replay-' in os.environ['GITSPACE_WORKSPACE']:\n"
               "    subprocess.run(['git', 'checkout', '-q', '-b', 'elsewhere'], check=True)\n"
               "open('counter.txt', 'a').write('+1\\n')\n")
    op = call_ok(ws, "hop", {}).op
    d = replay(ws, head(ws.root)).divergence
    assert d is not None and (d.commit, d.op_id, d.tool) == (head(ws.root), op, "hop")
    assert d.reason == "re-running it switched branches; an op never does."


def test_an_op_re_run_over_a_file_whose_outside_edit_was_dropped_is_reported(
        ws: Workspace) -> None:
    """A script op writes a file its .gitignore hides; once it is no longer ignored, the next op
    appends to it, so gitspace first records the file as an outside edit (an ignored one it
    would refuse: docs/trust.md). With that outside edit dropped from the history, the re-run
    append finds the file as an outside change first: replay says so there."""
    ignores = (ws.root / ".gitignore").read_text()
    (ws.root / ".gitignore").write_text(ignores + "cache/\n")
    add_script(ws, "warm", "import os\nos.makedirs('cache', exist_ok=True)\n"
               "open('cache/x', 'w').write('warm\\n')\n"
               "open('counter.txt', 'a').write('+1\\n')\n")
    call_ok(ws, "warm", {})
    warm = head(ws.root)
    (ws.root / ".gitignore").write_text(ignores)
    appended = call_ok(ws, "append", {"path": "cache/x", "text": "more\n"})
    assert appended.external_op is not None and head(ws.root, "HEAD~2") == warm
    tip = like(ws.root, "HEAD", tree_of(ws.root, "HEAD"), warm)
    assert replay(ws, head(ws.root)).ok
    d = replay(ws, tip).divergence
    assert d is not None and (d.commit, d.op_id, d.tool) == (tip, appended.op, "append")
    assert d.reason == "re-running it found outside changes first."


def test_the_report_counts_commits_taken_as_recorded_by_why_and_says_it_all_as_json(
        ws: Workspace) -> None:
    call_ok(ws, "create", {"path": "a.md", "file_text": "a\n"})
    one = commit_tree(ws.root, tree_with(ws.root, "HEAD", {"b.md": "b\n"}), head(ws.root),
                      msg="a person's commit\n")
    two = commit_tree(ws.root, tree_with(ws.root, one, {"c.md": "c\n"}), one,
                      msg="another person's commit\n")
    report = replay(ws, two)
    root = git(ws.root, "rev-list", "--max-parents=0", "HEAD").strip()
    assert report.as_json() == {
        "tip": two, "base": None, "total": 4, "start": root, "reexecuted": 1, "as_recorded": 3,
        "recorded_why": {"root commit": 1, "not an op": 2}, "unverified": 0, "scripts": True,
        "empty": None, "fetched": [], "onto": None, "branch": None, "created": None,
        "leftover": None, "ok": True, "result": "match", "checked": 4, "divergence": None}


# -- the rest of the judge's reports ------------------------------------------------------------


def test_an_op_of_a_source_this_replay_does_not_know_is_reported(
        ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    """A newer format may add a source (here 'hook'); this replay cannot check such an op."""
    call_ok(ws, "create", {"path": "a.md", "file_text": "a\n"})
    v1 = ledger.FORMATS[1]
    monkeypatch.setitem(ledger.FORMATS, 3, records.replace(v1, sources=(*v1.sources, "hook")))
    tree = tree_with(ws.root, "HEAD", {"b.md": "b\n"})
    msg = op_message("hook wrote b.md", "hook_write", "hook", '{"path":"b.md"}', agent="tester")
    tip = commit_tree(ws.root, tree, head(ws.root), by="tester <tester@gitspace>",
                      msg=msg.replace("Gitspace-Format: 1", "Gitspace-Format: 3"))
    d = replay(ws, tip).divergence
    assert d is not None and (d.commit, d.tool) == (tip, "hook_write") and d.paths == ["b.md"]
    assert d.reason == "its source 'hook' is one this replay does not know how to check."


def test_a_script_op_of_a_tool_that_is_gone_fails_to_re_run(ws: Workspace) -> None:
    call_ok(ws, "create", {"path": "a.md", "file_text": "a\n"})
    tree = tree_with(ws.root, "HEAD", {"b.md": "b\n"})
    tip = commit_tree(ws.root, tree, head(ws.root), by="tester <tester@gitspace>",
                      msg=op_message("gone b.md", "gone", "tool", "{}", agent="tester",
                                     extra="Gitspace-Script: " + "ab" * 20 + "\n"))
    d = replay(ws, tip).divergence
    assert d is not None and (d.commit, d.tool) == (tip, "gone")
    assert d.reason.startswith("re-running it failed: "), d.reason
    assert "gone" in d.reason


def test_a_built_in_script_changed_since_its_op_is_named_as_built_in(ws: Workspace) -> None:
    call_ok(ws, "append_entry", {"path": "log.jsonl", "text": "one", "ts": "2026-01-01T00:00:00Z"})
    msg = message(ws.root, "HEAD")
    ran = re.search(r"^Gitspace-Script: ([0-9a-f]{40})$", msg, re.M)
    assert ran is not None
    forged = "cd" * 20
    tip = like(ws.root, "HEAD", tree_of(ws.root, "HEAD"), head(ws.root, "HEAD~1"),
               msg.replace(ran.group(1), forged))
    d = replay(ws, tip).divergence
    assert d is not None and (d.commit, d.tool) == (tip, "append_entry")
    assert d.reason == (f"the script changed since the op: it ran blob {forged[:12]}, but the "
                        f"built-in script append_entry of this gitspace is blob {ran.group(1)[:12]}.")


def test_a_plain_commit_whose_tree_names_a_file_twice_is_reported_without_paths(
        ws: Workspace) -> None:
    """Neither applying the tree nor listing what it changes can read it: the divergence says
    why, with no paths and no diff."""
    call_ok(ws, "create", {"path": "a.md", "file_text": "a\n"})
    base = head(ws.root)
    twice = with_entries(ws.root, "HEAD", [("100644", b"d", blob(ws.root, b"one\n")),
                                           ("100755", b"d", blob(ws.root, b"two\n"))])
    tip = commit_tree(ws.root, twice, base, msg="a commit from elsewhere\n")
    d = replay(ws, tip, base).divergence
    assert d is not None and d.commit == tip and (d.op_id, d.paths, d.diff) == (None, [], [])
    assert "names 'd' twice" in d.reason, d.reason


def test_a_message_with_bytes_that_are_not_utf8_is_shown_with_replacement_characters(
        ws: Workspace) -> None:
    call_ok(ws, "create", {"path": "a.md", "file_text": "a\n"})
    honest = message(ws.root, "HEAD").encode()
    forged = honest.replace(b"\n\nGitspace-Format", b"\n\nSign\xe9: boss\n\nGitspace-Format", 1)
    who = b"tester <tester@gitspace> 1700000000 +0000"
    raw = (f"tree {tree_of(ws.root, 'HEAD')}\nparent {head(ws.root, 'HEAD~1')}\n".encode()
           + b"author " + who + b"\ncommitter " + who + b"\n\n" + forged)
    # (git commit-tree would re-encode the message as if it were Latin-1: written as it is)
    tip = subprocess.run(["git", "hash-object", "-t", "commit", "--literally", "-w", "--stdin"],
                         cwd=ws.root, env=git_env(), input=raw, capture_output=True,
                         check=True).stdout.decode().strip()
    d = replay(ws, tip).divergence
    assert d is not None and d.commit == tip and d.tool == "create"
    assert "-Sign\ufffd: boss" in d.diff, d.diff


def test_a_file_that_is_not_utf8_is_diffed_with_replacement_characters(ws: Workspace) -> None:
    call_ok(ws, "create", {"path": "a.md", "file_text": "a\n"})
    latin = with_entries(ws.root, "HEAD~1", [("100644", b"a.md", blob(ws.root, b"caf\xe9\n"))])
    tip = like(ws.root, "HEAD", latin, head(ws.root, "HEAD~1"))
    d = replay(ws, tip).divergence
    assert d is not None and d.reason == "re-running it produced different files."
    assert d.paths == ["a.md"] and "-caf\ufffd" in d.diff and "+a" in d.diff


def test_an_outside_edit_without_an_agent_must_be_authored_as_a_persons(ws: Workspace) -> None:
    call_ok(ws, "create", {"path": "a.md", "file_text": "a\n"})
    tree = tree_with(ws.root, "HEAD", {"b.md": "b\n"})
    msg = op_message("external edit of b.md", "external_edit", "external",
                     '{"count":1,"paths":["b.md"]}')
    honest = commit_tree(ws.root, tree, head(ws.root), by="human <human@gitspace>", msg=msg)
    assert replay(ws, honest).ok
    # A person is authored by their git identity (core/person.py), whatever it is: only an
    # author that names no one that way is refused.
    assert replay(ws, commit_tree(ws.root, tree, head(ws.root), by="Zoë van Dijk <zoe@x.example>",
                                  msg=msg)).ok
    forged = commit_tree(ws.root, tree, head(ws.root), by="Mallory <>", msg=msg)
    d = replay(ws, forged).divergence
    assert d is not None and d.reason == ("its author is 'Mallory <>', but gitspace authors an op "
                                          "made with no agent as the person who made it, by "
                                          "their git identity 'Name <email>'.")


def test_a_persons_git_colours_never_reach_the_report(ws: Workspace, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[color]\n\tui = always\n\tdiff = always\n")
    monkeypatch.setenv("HOME", str(home))
    call_ok(ws, "create", {"path": "a.md", "file_text": "a\n"})
    tip = like(ws.root, "HEAD", tree_with(ws.root, "HEAD", {"a.md": "b\n"}), head(ws.root, "HEAD~1"))
    d = replay(ws, tip).divergence
    assert d is not None and "-b" in d.diff and "+a" in d.diff
    assert not any("\x1b" in line for line in d.diff), d.diff


def test_a_diff_shows_the_first_20_paths_and_counts_the_lines_it_leaves_out(
        ws: Workspace) -> None:
    """21 files the re-run did not write: the diff is of the first 20 (7 lines each), cut at 40
    lines, and the last line counts the other 100."""
    call_ok(ws, "create", {"path": "a.md", "file_text": "a\n"})
    extra = {f"f{i:02}.md": f"{i}\n" for i in range(21)}
    tip = like(ws.root, "HEAD", tree_with(ws.root, "HEAD", extra), head(ws.root, "HEAD~1"))
    d = replay(ws, tip).divergence
    assert d is not None and d.paths == sorted(extra)
    assert len(d.diff) == 41 and d.diff[-1] == "... 100 more diff lines", d.diff[-1]


def test_a_divergence_without_a_replayed_tree_shows_the_change_the_commit_records(
        ws: Workspace) -> None:
    call_ok(ws, "create", {"path": "a.md", "file_text": "a\n"})
    tip = rerun_fails(ws)
    d = replay(ws, tip).divergence
    assert d is not None and d.reason.startswith("re-running it failed")
    assert (d.paths, d.more_paths) == (["a.md"], 0)
    assert "--- before/a.md" in d.diff and "+++ recorded/a.md" in d.diff, d.diff
