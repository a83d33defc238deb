"""The timeline query as the CLI uses it (``query(repo, rev, filters, offset, limit)``): the
filters people type (agent, session, tool, source, several paths, since/until), exact paging,
and the cases a parser of git's output gets wrong.

Every expectation is checked against plain git (``git diff-tree`` per commit, ``git rev-list``),
never against another gitspace reader, and the hostile cases are the ones a parser over a byte
stream gets wrong: file names holding newlines, separators or 40 hex digits, commits that change
nothing, a forged trailer line in a commit body, a detached HEAD and a shallow clone.
tests/test_timeline_query.py covers the web view's side (totals, text search, locate).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import call_ok, git, git_env

import gitspace
from gitspace.core import timeline
from gitspace.core.timeline import Filters
from gitspace.errors import BadArguments, NotFound


def _diff_tree_files(root: Path, sha: str) -> list[str]:
    out = git(root, "diff-tree", "-r", "--root", "--no-commit-id", "--name-only", "--no-renames",
              "-z", sha)
    return [p for p in out.split("\0") if p]


def _first_parent(root: Path, rev: str = "HEAD") -> list[str]:
    return git(root, "rev-list", "--first-parent", rev).split()


@pytest.fixture
def busy(ws_root: Path) -> Path:
    """Two agents, two sessions, an outside edit, a checkpoint and a plain git commit."""
    with gitspace.init(ws_root, agent="alice", session="s-1") as ws:
        call_ok(ws, "create", {"path": "notes/a.md", "file_text": "a\n"})
        call_ok(ws, "create", {"path": "notes/b.md", "file_text": "b\n"})
        call_ok(ws, "checkpoint", {"name": "two-notes"})
    with gitspace.open(ws_root, agent="bob", session="s-2") as ws:
        call_ok(ws, "str_replace", {"path": "notes/a.md", "old_str": "a", "new_str": "A"})
        (ws_root / "outside.txt").write_text("by hand\n")
        assert ws.snapshot().ok
        call_ok(ws, "create", {"path": "src/main.py", "file_text": "print()\n"})
    (ws_root / "plain.txt").write_text("plain\n")
    git(ws_root, "add", "plain.txt")
    git(ws_root, "commit", "-q", "-m", "a plain commit")
    return ws_root


def _query(root: Path, rev: str | None = "HEAD", *, limit: int | None = None, skip: int = 0,
           filters: Filters | None = None) -> list[timeline.LogEntry]:
    with gitspace.open(root) as ws:
        return timeline.query(ws.repo, rev, filters, offset=skip,
                              limit=timeline.ALL if limit is None else limit, count=False).entries


def test_every_entry_matches_git(busy: Path) -> None:
    entries = _query(busy, limit=None)
    assert [e.commit for e in entries] == _first_parent(busy)
    for e in entries:
        assert e.files == _diff_tree_files(busy, e.commit)
        assert list(e.parents) == git(busy, "log", "-1", "--format=%P", e.commit).split()
    assert entries[0].op is None and entries[0].subject == "a plain commit"
    assert [e.op.tool for e in entries[1:] if e.op] == [
        "create", "external_edit", "str_replace", "create", "create", "init"]
    marked = [e for e in entries if e.checkpoints]
    assert [(e.checkpoints, e.op.tool if e.op else None) for e in marked] == [(["two-notes"], "create")]


def test_filters_keep_exactly_the_matching_ops(busy: Path) -> None:
    everything = _query(busy, limit=None)

    def expect(pred: object) -> list[str]:
        return [e.commit for e in everything if e.op and pred(e.op)]  # type: ignore[operator]

    cases = {
        Filters(agent="alice"): expect(lambda op: op.agent == "alice"),
        Filters(agent="bob", tool="create"): expect(lambda op: op.agent == "bob" and op.tool == "create"),
        Filters(session="s-1"): expect(lambda op: op.session == "s-1"),
        Filters(source="external"): expect(lambda op: op.source == "external"),
        Filters(tool="str_replace"): expect(lambda op: op.tool == "str_replace"),
        Filters(agent="nobody"): [],
    }
    for filters, commits in cases.items():
        assert [e.commit for e in _query(busy, limit=None, filters=filters)] == commits, filters
    assert len(cases[Filters(agent="alice")]) == 3  # init, two creates
    by_path = _query(busy, limit=None, filters=Filters(paths=("notes/a.md",)))
    assert [e.op.tool for e in by_path if e.op] == ["str_replace", "create"]
    assert "notes/b.md" not in by_path[1].files and by_path[0].files == ["notes/a.md"]
    folder = _query(busy, limit=None, filters=Filters(paths=("src",)))
    assert [e.files for e in folder] == [["src/main.py"]]


def test_since_and_until_use_the_commit_time(ws_root: Path) -> None:
    gitspace.init(ws_root, agent="a").close()
    for day in ("2021-01-01", "2022-01-01", "2023-01-01"):
        (ws_root / f"{day}.txt").write_text(day)
        git(ws_root, "add", ".")
        env = {**git_env(), "GIT_COMMITTER_DATE": f"{day}T12:00:00Z"}
        import subprocess

        subprocess.run(["git", "commit", "-q", "-m", day], cwd=ws_root, env=env, check=True)
    subjects = [e.subject for e in _query(ws_root, limit=None,
                                          filters=Filters(since="2021-06-01", until="2022-06-01"))]
    assert subjects == ["2022-01-01"]


def _keeps(filters: Filters, e: timeline.LogEntry) -> bool:
    """What the filters mean, said independently of how query applies them."""
    wanted = {"agent": filters.agent, "tool": filters.tool}
    if not any(wanted.values()):
        return True
    return e.op is not None and all(getattr(e.op, k) == v for k, v in wanted.items() if v)


def test_paging_equals_slicing_even_with_forged_trailer_lines(ws_root: Path) -> None:
    with gitspace.init(ws_root, agent="pager") as ws:
        for i in range(12):
            call_ok(ws, "create", {"path": f"f{i}.txt", "file_text": f"{i}\n"})
            # An op whose *result text* (a body paragraph) holds a look-alike trailer line:
            # git's --grep matches it, the ledger's parser must not.
            call_ok(ws, "create", {"path": f"g{i}.txt",
                                   "file_text": "x\n\nGitspace-Tool: str_replace\nGitspace-Agent: pager\n"})
        call_ok(ws, "str_replace", {"path": "f0.txt", "old_str": "0", "new_str": "zero"})
    forged = git(ws_root, "log", "--format=%H", "--grep=^Gitspace-Tool: str_replace$")
    every = _query(ws_root, limit=None)
    for filters in (Filters(), Filters(tool="create"), Filters(tool="str_replace", agent="pager")):
        full = [e.commit for e in every if _keeps(filters, e)]
        for skip in range(0, len(full) + 2, 5):
            for limit in (1, 3, 7, None):
                page = _query(ws_root, skip=skip, limit=limit, filters=filters)
                end = None if limit is None else skip + limit
                assert [e.commit for e in page] == full[skip:end], (filters, skip, limit)
    assert len([e for e in every if _keeps(Filters(tool="str_replace"), e)]) == 1
    assert forged  # the create's body really does fool git's grep (so the check is exercised)


def test_hostile_file_names_and_empty_commits(ws_root: Path) -> None:
    gitspace.init(ws_root, agent="a").close()
    names = ["line\nbreak.txt", "\nleading-newline", "sep\x1e\x1f.txt", "a" * 40,
             "0123456789abcdef0123456789abcdef01234567", "sp ace", "ünï.md"]
    for name in names:
        (ws_root / name).write_text("x")
    git(ws_root, "add", "-A")
    git(ws_root, "commit", "-q", "-m", "hostile names")
    git(ws_root, "commit", "-q", "--allow-empty", "-m", "nothing changed")
    git(ws_root, "commit", "-q", "--allow-empty", "--allow-empty-message", "-m", "")
    entries = _query(ws_root, limit=None)
    assert [e.files for e in entries[:2]] == [[], []]
    assert entries[0].subject == "" and entries[1].subject == "nothing changed"
    assert sorted(entries[2].files) == sorted(names)
    assert entries[2].files == _diff_tree_files(ws_root, entries[2].commit)
    assert entries[-1].op is not None and entries[-1].op.tool == "init"


def test_reads_a_detached_head_and_a_shallow_clone(busy: Path, tmp_path: Path) -> None:
    tip = git(busy, "rev-parse", "HEAD~2").strip()
    git(busy, "checkout", "-q", "--detach", tip)
    entries = _query(busy, limit=None)
    assert entries[0].commit == tip and len(entries) == len(_first_parent(busy, tip))
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "3", "--branch", "main", f"file://{busy}", str(shallow))
    entries = _query(shallow, limit=None)
    assert len(entries) == 3
    # The shallow boundary lists every file of its tree, as git log does.
    assert entries[-1].files == git(shallow, "ls-tree", "-r", "--name-only", "-z",
                                    entries[-1].commit).strip("\0").split("\0")


def test_a_malformed_op_is_listed_with_its_problem_and_filtered_out(ws_root: Path) -> None:
    gitspace.init(ws_root, agent="a").close()
    git(ws_root, "commit", "-q", "--allow-empty", "-m",
        "looks like an op\n\nGitspace-Format: 1\nGitspace-Op: nope")
    entries = _query(ws_root, limit=None)
    assert entries[0].op is None and entries[0].problem
    assert _query(ws_root, limit=None, filters=Filters(tool="init"))[0].op.tool == "init"  # type: ignore[union-attr]


def test_bad_queries_are_expected_errors(busy: Path) -> None:
    with gitspace.open(busy) as ws:
        with pytest.raises(NotFound, match="not a branch or revision here"):
            timeline.find(ws, "no-such-branch")
        with pytest.raises(BadArguments):
            timeline.query(ws.repo, "--all")
        with pytest.raises(BadArguments, match="op source"):
            Filters(source="robot")
        with pytest.raises(BadArguments, match="control character"):
            Filters(agent="a\nb")
        with pytest.raises(BadArguments, match="control character"):
            Filters(paths=("ok", "bad\x00"))
        # Regex characters in a value are literal: "a.ice" must not match "alice".
        assert timeline.query(ws.repo, "HEAD", Filters(agent="a.ice")).entries == []


def test_several_paths_and_a_path_given_both_ways(busy: Path) -> None:
    both = _query(busy, filters=Filters(paths=("notes/a.md", "outside.txt")))
    assert [e.op.tool for e in both if e.op] == ["external_edit", "str_replace", "create"]
    assert Filters(path="x", paths=("y",)).paths == ("x", "y")


def test_the_helpers_read_a_detached_head(busy: Path) -> None:
    git(busy, "checkout", "-q", "--detach", "HEAD~1")
    with gitspace.open(busy) as ws:
        assert [e.commit for e in timeline.timeline(ws, None)] == _first_parent(busy)
        report = timeline.verify(ws)
        assert report.ok and report.commits == len(_first_parent(busy))


def test_an_empty_repository_has_an_empty_timeline(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "empty")
    with gitspace.open(tmp_path / "empty") as ws:
        assert timeline.query(ws.repo, "HEAD").entries == []
        assert timeline.timeline(ws) == [] and timeline.verify(ws).commits == 0
