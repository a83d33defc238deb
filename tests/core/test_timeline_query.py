"""The read layer under the web view: the paged timeline query, locating ops, diffs, files and
blame, and the tree of attempts. Real repositories; every count is checked against plain git."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import call_ok, git

import gitspace
from gitspace.core import attempts, browse, diffs, lookup, timeline
from gitspace.core.timeline import Filters
from gitspace.errors import BadArguments, NotFound
from gitspace.storage.gitrepo import GitRepo
from gitspace.tools.builtins import restoring


@pytest.fixture
def repo(ws: gitspace.Workspace) -> GitRepo:
    return ws.repo


def _history(ws: gitspace.Workspace) -> None:
    call_ok(ws, "create", {"path": "notes/a.md", "file_text": "alpha\n"})
    call_ok(ws, "checkpoint", {"name": "start"})
    call_ok(ws, "create", {"path": "notes/b.md", "file_text": "beta\n"})
    call_ok(ws, "str_replace", {"path": "notes/a.md", "old_str": "alpha", "new_str": "ALPHA é"})
    call_ok(ws, "restore", {"name": "start"})
    call_ok(ws, "create", {"path": "src/c.py", "file_text": "def f():\n    return 1\n"})
    call_ok(ws, "undo", {})
    call_ok(ws, "redo", {})


def test_pages_cover_the_branch_exactly_once(ws: gitspace.Workspace, repo: GitRepo) -> None:
    for i in range(23):
        call_ok(ws, "create", {"path": f"f{i}.txt", "file_text": f"{i}\n"})
    everything = git(ws.root, "rev-list", "--first-parent", "HEAD").split()
    seen = []
    for offset in range(0, 30, 7):
        page = timeline.query(repo, "refs/heads/main", offset=offset, limit=7)
        assert page.total == len(everything)
        seen += [e.commit for e in page.entries]
    assert seen == everything  # newest first, no gap, no repeat
    newest = timeline.query(repo, "refs/heads/main", limit=1).entries[0]
    assert newest.files == ["f22.txt"] and newest.op is not None and newest.op.agent == "tester"
    assert newest.parents == (everything[1],)


def test_filters_are_exact_and_counted_like_git(ws: gitspace.Workspace, repo: GitRepo) -> None:
    _history(ws)
    with gitspace.open(ws.root, agent="other") as other:
        call_ok(other, "create", {"path": "notes/other.md", "file_text": "x\n"})
        # A result paragraph that quotes a trailer line must not fool the agent filter.
        call_ok(other, "create", {"path": "quote.md", "file_text": "Gitspace-Agent: tester\n"})

    def count(**kw: str) -> int:
        return timeline.query(ws.repo, "refs/heads/main", Filters(**kw)).total  # type: ignore[arg-type]

    assert count(agent="other") == 2
    assert count(agent="tester") == int(git(ws.root, "rev-list", "--count", "--first-parent",
                                            "--author=tester@gitspace", "HEAD"))
    assert count(tool="restore") == 1 and count(tool="undo") == 1 and count(tool="redo") == 1
    assert count(source="init") == 1 and count(source="external") == 0
    assert count(path="notes") == int(git(ws.root, "rev-list", "--count", "--first-parent",
                                          "HEAD", "--", "notes"))
    assert count(text="alpha é") == 1  # non-ASCII: matched on the decoded args
    assert count(text="NOTES/B.MD") == 1  # case-insensitive, over subjects and args
    assert count(text="no such words") == 0
    assert count(agent="tester", tool="create") == 3


def test_hostile_filter_values_are_refused_or_literal(ws: gitspace.Workspace, repo: GitRepo) -> None:
    _history(ws)
    assert timeline.query(repo, "refs/heads/main", Filters(text=".*")).total == 0  # not a regex
    assert timeline.query(repo, "refs/heads/main", Filters(path=":(glob)**")).total == 0
    with pytest.raises(BadArguments):
        Filters(agent="a\nb")
    with pytest.raises(BadArguments):
        Filters(source="bogus")
    with pytest.raises(BadArguments):
        timeline.query(repo, "--all")


def test_locate_finds_ops_checkpoints_branches_and_tool_use_ids(ws: gitspace.Workspace,
                                                                 repo: GitRepo) -> None:
    done = ws.call("create", {"path": "x.md", "file_text": "x\n"}, tool_use_id="toolu_01")
    call_ok(ws, "checkpoint", {"name": "here"})
    assert done.op and done.commit
    assert lookup.resolve(repo, done.op).commit == done.commit
    assert lookup.resolve(repo, "here").commit == done.commit
    assert lookup.resolve(repo, "main").commit == done.commit
    assert timeline.find_trailer(repo, "Gitspace-Tool-Use-Id", "toolu_01") == done.commit
    assert timeline.find_trailer(repo, "Gitspace-Tool-Use-Id", "toolu_.*") is None
    for bad in ("--output=/tmp/x", "nope", "", "01AAAAAAAAAAAAAAAAAAAAAAAA"):
        with pytest.raises(NotFound):
            lookup.resolve(repo, bad)


def test_diffs_parse_added_changed_binary_and_odd_names(ws: gitspace.Workspace, repo: GitRepo) -> None:
    call_ok(ws, "create", {"path": "a.py", "file_text": "one\ntwo\nthree\n"})
    before = ws.tip()
    call_ok(ws, "str_replace", {"path": "a.py", "old_str": "two", "new_str": "TWO"})
    (ws.root / "bin.dat").write_bytes(b"\x00\x01\x02binary")
    (ws.root / 'we ird "name".txt').write_text("q\n")
    assert ws.snapshot().ok
    found = {f.path: f for f in diffs.between(repo, before, ws.tip())}
    changed = found["a.py"]
    assert (changed.status, changed.added, changed.removed) == ("modified", 1, 1)
    kinds = [(line.kind, line.text, line.old, line.new) for line in changed.hunks[0].lines]
    assert ("-", "two", 2, None) in kinds and ("+", "TWO", None, 2) in kinds
    assert found["bin.dat"].binary and found["bin.dat"].status == "added"
    assert found['we ird "name".txt'].added == 1
    cut = diffs.parse(git(ws.root, "diff-tree", "-p", before, ws.tip()).encode(), max_lines=2)
    assert any(f.note for f in cut)


def test_browse_shows_what_each_thing_is(ws: gitspace.Workspace, repo: GitRepo) -> None:
    call_ok(ws, "create", {"path": "docs/readme.md", "file_text": "# hi\nline two\n"})
    (ws.root / "blob.bin").write_bytes(b"\x00" * 10)
    (ws.root / "link").symlink_to("docs/readme.md")
    assert ws.snapshot().ok
    call_ok(ws, "str_replace", {"path": "docs/readme.md", "old_str": "two", "new_str": "2"})
    tip = ws.tip()
    top = {i.name: i.kind for i in browse.listing(repo, tip)}
    assert top["docs"] == "tree" and top["blob.bin"] == "blob" and top["link"] == "link"
    assert browse.read(repo, tip, "blob.bin").binary
    assert browse.read(repo, tip, "link").data == b"docs/readme.md"
    assert browse.read(repo, tip, "docs/readme.md", limit=3).data is None  # too large to show
    blamed = browse.blame(repo, tip, "docs/readme.md")
    assert [(b.text, b.op.tool if b.op else None) for b in blamed] == [
        ("# hi", "create"), ("line 2", "str_replace")]
    with pytest.raises(NotFound):
        browse.read(repo, tip, "../etc/passwd")
    with pytest.raises(NotFound):
        browse.listing(repo, tip, "blob.bin")


def test_attempts_show_dead_ends_restores_and_undo_links(ws: gitspace.Workspace, repo: GitRepo) -> None:
    _history(ws)
    rows = timeline.briefs(repo, ["main", "--"])
    marks = {name: commit for commit, names in timeline.checkpoint_marks(repo).items()
             for name in names}
    drawn = attempts.layout(rows, marks, {ws.tip(): ["main"]}, restoring())
    kinds = [ln.kind for ln in drawn.links]
    assert kinds.count("restore") == 1 and kinds.count("undo") == 1 and kinds.count("redo") == 1
    restore = next(ln for ln in drawn.links if ln.kind == "restore")
    assert restore.target is not None and rows[restore.target].commit == marks["start"]
    dead = [n.brief.subject for n in drawn.nodes if n.dead_end]
    assert dead == ["str_replace notes/a.md"]  # the attempt the restore left
    assert drawn.nodes[0].way_out and not drawn.nodes[restore.source + 1].way_out
    assert drawn.lanes == 2


def test_an_empty_repository_has_an_empty_timeline(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    repo = GitRepo.open(tmp_path)
    try:
        assert timeline.query(repo, "refs/heads/main").total == 0
        assert timeline.query(repo, None).entries == []
    finally:
        repo.close()



def test_remembered_counts_follow_a_branch_forward_and_back(ws: gitspace.Workspace,
                                                            repo: GitRepo) -> None:
    counts = timeline.Counts()

    def total() -> int:
        return timeline.query(repo, "refs/heads/main", counts=counts).total

    def git_count() -> int:
        return int(git(ws.root, "rev-list", "--count", "--first-parent", "main"))

    call_ok(ws, "create", {"path": "a.txt", "file_text": "a\n"})
    assert total() == git_count()
    for i in range(3):
        call_ok(ws, "create", {"path": f"b{i}.txt", "file_text": "b\n"})
    assert total() == git_count()  # counted forward from the remembered tip
    git(ws.root, "update-ref", "refs/heads/main", "main~2")  # moved back (a reset by hand)
    assert total() == git_count()
