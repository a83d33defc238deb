"""provenance/notes.py: refs/notes/ai read as git reads notes (whole or fanned-out names), written
as one notes commit through the writer; a hostile note (100 MB, not a log, on a commit this clone
lacks) is refused with a sentence and breaks nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git, git_env

from gitspace.core.writer import Writer
from gitspace.errors import ConcurrentUpdate
from gitspace.provenance import authorship, notes
from gitspace.storage.gitrepo import GitRepo
from gitspace.storage.objects import Signature

WHO = Signature("Zoë van Dijk", "zoe@example.invalid")
LOG = ("a.txt\n  h_31dce776f88375 1\n---\n"
       '{"schema_version": "authorship/3.0.0", "base_commit_sha": "", "prompts": {}}\n')


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    root = tmp_path / "r"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    for n in range(3):
        (root / "a.txt").write_text(f"{n}\n")
        git(root, "add", ".")
        git(root, "commit", "-q", "-m", f"c{n}")
    opened = GitRepo.open(root)
    yield opened
    opened.close()


def commits(repo: GitRepo) -> list[str]:
    return git(repo.root, "rev-list", "HEAD").split()


def test_notes_git_wrote_are_read_whole_or_fanned_out(repo: GitRepo) -> None:
    many = commits(repo)
    for sha in many:
        git(repo.root, "notes", "--ref=ai", "add", "-m", LOG.rstrip("\n"), sha)
    assert notes.Notes(repo).get(many[0]) is not None
    # Fan the tree out as git does for many notes (ab/cdef...), by hand.
    tip = git(repo.root, "rev-parse", "refs/notes/ai").strip()
    entries = git(repo.root, "ls-tree", tip).splitlines()
    blobs = {line.split()[3]: line.split()[2] for line in entries}
    inner = {}
    for name, blob in blobs.items():
        inner.setdefault(name[:2], []).append(f"100644 blob {blob}\t{name[2:]}")
    top = []
    for fan, rows in inner.items():
        sub = git(repo.root, "mktree", input="\n".join(rows).encode() + b"\n").strip()
        top.append(f"040000 tree {sub}\t{fan}")
    tree = git(repo.root, "mktree", input="\n".join(top).encode() + b"\n").strip()
    fanned = git(repo.root, "commit-tree", tree, "-p", tip, "-m", "fan out").strip()
    git(repo.root, "update-ref", "refs/notes/ai", fanned)
    read = notes.Notes(repo)
    assert all(read.get(sha) is not None for sha in many)
    assert set(read.commits()) == set(many)
    # gitspace writes into the fan-out git reads, and git reads what gitspace wrote.
    writer = Writer(repo)
    with writer.locked():
        notes.put(writer, WHO, {many[1]: LOG.replace("a.txt", "b.txt")}, "a test")
    assert "b.txt" in git(repo.root, "notes", "--ref=ai", "show", many[1])
    assert len(git(repo.root, "ls-tree", "-r", "refs/notes/ai").splitlines()) == len(many)
    assert git(repo.root, "log", "-1", "--format=%an <%ae>|%cn <%ce>", "refs/notes/ai").strip() \
        == "Zoë van Dijk <zoe@example.invalid>|Zoë van Dijk <zoe@example.invalid>"


def test_a_hundred_megabyte_note_is_refused_unread(repo: GitRepo) -> None:
    sha = commits(repo)[0]
    big = repo.root / "big"
    with open(big, "wb") as f:
        f.write(LOG.encode())
        f.seek(100 << 20)
        f.write(b"\n")
    blob = git(repo.root, "hash-object", "-w", str(big)).strip()
    git(repo.root, "notes", "--ref=ai", "add", "-C", blob, sha)
    read = notes.Notes(repo)
    with pytest.raises(authorship.NoteRefused, match="more than the 16 MiB"):
        read.text(sha)
    assert read.get(sha) is None and "more than the 16 MiB" in read.refused[sha]
    done = subprocess.run(["git", "-C", str(repo.root), "repack", "-adq"], env=git_env())
    assert done.returncode == 0
    with pytest.raises(authorship.NoteRefused):  # packed: git says the size, nothing inflated
        notes.Notes(repo).text(sha)


def test_a_note_that_is_no_log_or_names_a_missing_commit_breaks_nothing(repo: GitRepo,
                                                                        tmp_path: Path) -> None:
    first = commits(repo)[-1]
    git(repo.root, "notes", "--ref=ai", "add", "-m", "just some text", first)
    missing = "1234567890abcdef1234567890abcdef12345678"
    blob = git(repo.root, "hash-object", "-w", "--stdin", input=LOG.encode()).strip()
    tip = git(repo.root, "rev-parse", "refs/notes/ai").strip()
    rows = git(repo.root, "ls-tree", tip) + f"100644 blob {blob}\t{missing}\n"
    tree = git(repo.root, "mktree", input=rows.encode()).strip()
    git(repo.root, "update-ref", "refs/notes/ai",
        git(repo.root, "commit-tree", tree, "-p", tip, "-m", "hostile").strip())
    read = notes.Notes(repo)
    assert read.get(first) is None and "no line '---'" in read.refused[first]
    assert read.get(missing) is not None  # harmless: nothing asks about a commit not here
    done = subprocess.run([sys.executable, "-m", "gitspace", "-C", str(repo.root), "provenance",
                           first], capture_output=True, text=True)
    assert done.returncode == 0 and "no line '---'" in done.stdout, done.stderr
    assert "Traceback" not in done.stderr


def test_a_notes_ref_moved_meanwhile_is_read_again_not_overwritten(repo: GitRepo) -> None:
    a, b = commits(repo)[:2]
    writer = Writer(repo)
    with writer.locked():
        notes.put(writer, WHO, {a: LOG}, "first")
    real_put = writer.apply
    moved = []

    def apply_after_someone_else(change):  # type: ignore[no-untyped-def]
        if not moved:  # another tool writes a note between our read and our move
            moved.append(git(repo.root, "notes", "--ref=ai", "add", "-m", "theirs", b))
            raise ConcurrentUpdate("refs/notes/ai moved meanwhile.")
        return real_put(change)

    writer.apply = apply_after_someone_else  # type: ignore[method-assign]
    with writer.locked():
        notes.put(writer, WHO, {commits(repo)[2]: LOG}, "second")
    shown = git(repo.root, "notes", "--ref=ai", "list")
    assert len(shown.splitlines()) == 3, "their note and ours are both there"
