"""Helpers for the hostile corpus: histories an attacker could hand gitspace, and the folder the
attack aims at.

``Outside`` is a sibling of the workspace that every attack tries to write into (through a
symbolic link the history planted, a `..` entry, a race). Its fingerprint covers every entry,
every file's bytes and every folder's mtime, so even a file written and deleted again shows.

Commits are made with git's own plumbing, never through gitspace: history is input here.
"""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import assert_clean, git, git_env, git_run, lock_files

import gitspace


@dataclass(frozen=True)
class Link:
    """A symbolic link entry for ``commit``: its target, as git stores it."""

    target: str


def fingerprint(folder: Path) -> dict[str, tuple[object, ...]]:
    """Every entry under ``folder`` (links are never followed): kind, mode, content, and each
    folder's mtime, so a file created and removed again is noticed."""
    out: dict[str, tuple[object, ...]] = {}
    top = os.lstat(folder)
    out["."] = ("dir", top.st_mode, top.st_mtime_ns)
    for path, dirs, names in os.walk(folder):
        for name in sorted(dirs + names):
            full = Path(path, name)
            rel = full.relative_to(folder).as_posix()
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(full))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", st.st_mode, st.st_mtime_ns)
            elif stat.S_ISREG(st.st_mode):
                out[rel] = ("file", st.st_mode, hashlib.sha256(full.read_bytes()).hexdigest())
            else:
                out[rel] = ("special", st.st_mode)
    return out


class Outside:
    """A folder next to the workspace that nothing gitspace does may change."""

    def __init__(self, path: Path, files: dict[str, str] | None = None) -> None:
        self.path = path
        path.mkdir(parents=True)
        (path / "victim.txt").write_text("the user's file, outside the workspace\n")
        (path / "sub").mkdir()
        (path / "sub" / "deep.txt").write_text("deeper\n")
        for rel, text in (files or {}).items():
            (path / rel).write_text(text)
        self.before = fingerprint(path)

    def settled(self) -> None:
        """What the folder holds now is what it must keep (a scenario put more there first)."""
        self.before = fingerprint(self.path)

    def unchanged(self) -> None:
        after = fingerprint(self.path)
        assert after == self.before, (
            "something changed outside the workspace: "
            f"{sorted(set(after.items()) ^ set(self.before.items()))}")


@pytest.fixture
def outside(tmp_path: Path) -> Outside:
    """The folder next to the workspace that the attacks aim at."""
    return Outside(tmp_path / "outside")


@pytest.fixture(autouse=True)
def neighbour(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every scenario of a ``test_hostile_*`` module runs beside ``tmp_path/neighbour``, a folder
    no scenario names, fingerprinted before and after: whatever the scenario's own ``Outside``
    is aimed at, a write that lands beside the scratch folder in any other way fails it too."""
    if not request.module.__name__.startswith("test_hostile_"):
        yield
        return
    folder = Outside(request.getfixturevalue("tmp_path") / "neighbour")
    yield
    folder.unchanged()


def _plumbing(root: Path, env: dict[str, str], *args: str, data: bytes | None = None) -> str:
    proc = subprocess.run(["git", *args], cwd=root, env=env, input=data, capture_output=True)
    assert proc.returncode == 0, f"git {' '.join(args)}: {proc.stderr.decode()}"
    return proc.stdout.decode().strip()


def tree(root: Path, parent: str | None, files: dict[str, str | bytes | Link | None],
         executable: frozenset[str] = frozenset()) -> str:
    """The tree of commit ``parent`` (empty for None) with ``files`` set (None removes a path,
    and every path below it), built in a private index so the checkout is never touched."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {**git_env(), "GIT_INDEX_FILE": str(Path(tmp, "index"))}
        if parent is not None:
            _plumbing(root, env, "read-tree", parent)
        for path, content in files.items():
            if content is None:
                listed = _plumbing(root, env, "ls-files", "-z", "--", path)
                for name in [n for n in listed.split("\0") if n]:
                    _plumbing(root, env, "update-index", "--force-remove", "--", name)
                continue
            if isinstance(content, Link):
                mode, data = "120000", os.fsencode(content.target)
            else:
                mode = "100755" if path in executable else "100644"
                data = content.encode() if isinstance(content, str) else content
            blob = _plumbing(root, env, "hash-object", "-w", "--stdin", data=data)
            info = f"{mode} {blob}\t{path}\0".encode("utf-8", "surrogateescape")
            _plumbing(root, env, "update-index", "--add", "--replace", "-z", "--index-info",
                      data=info)
        return _plumbing(root, env, "write-tree")


def commit(root: Path, parent: str | None, files: dict[str, str | bytes | Link | None],
           message: str = "a commit from elsewhere\n", tree_sha: str | None = None) -> str:
    """A plain (non-op) commit on ``parent`` changing ``files`` (or with tree ``tree_sha``)."""
    sha = tree_sha or tree(root, parent, files)
    parents = ["-p", parent] if parent else []
    return _plumbing(root, git_env(), "commit-tree", sha, *parents, data=message.encode())


def raw_tree(root: Path, entries: list[tuple[str, bytes, str]]) -> str:
    """A tree object written byte for byte: ``(mode, name, object)`` entries, names unchecked,
    as a hostile remote could send (``..``, ``.git``, a name holding a slash)."""
    body = b"".join(mode.encode() + b" " + name + b"\0" + bytes.fromhex(sha)
                    for mode, name, sha in entries)
    return _plumbing(root, git_env(), "hash-object", "-t", "tree", "--literally", "-w",
                     "--stdin", data=body)


def blob(root: Path, data: bytes) -> str:
    return _plumbing(root, git_env(), "hash-object", "-w", "--stdin", data=data)


@dataclass(frozen=True)
class Planted:
    """The classic attack: ``lnk`` -> the outside folder in one commit, ``lnk/file`` after."""

    base: str
    link: str  # base + lnk -> outside
    file: str  # link, with lnk replaced by a folder holding "file"


def plant(root: Path, base: str, outside: Path, name: str = "lnk") -> Planted:
    link = commit(root, base, {name: Link(str(outside))}, "add a link\n")
    then = commit(root, link, {name: None, f"{name}/file": "written through the link?\n",
                               f"{name}/victim.txt": "overwritten through the link?\n"},
                  "write beneath it\n")
    return Planted(base, link, then)


def drop(root: Path, *refs: str) -> None:
    """Delete ``refs`` and prune every unreachable object: the attacker's own trees (which git
    fsck rightly rejects) leave, so fsck judges only what gitspace wrote."""
    for ref in refs:
        git(root, "update-ref", "-d", ref)
    git(root, "reflog", "expire", "--expire=now", "--all")
    git(root, "prune", "--expire=now")


def assert_sound(root: Path) -> None:
    """The scenario's closing check: fsck --strict, a clean status, an index git can write."""
    assert_clean(root)
    git(root, "write-tree")
    assert git(root, "diff-index", "--cached", "HEAD") == ""


# -- scenarios that end sealed (policy half: tests/test_hostile_{user_files,path_policy,...}) -----


def status(root: Path) -> str:
    return git(root, "--no-optional-locks", "status", "--porcelain", "--untracked-files=all")


def fsck(root: Path) -> None:
    proc = git_run(root, "fsck", "--strict", "--no-progress")
    assert proc.returncode == 0, f"git fsck --strict failed:\n{proc.stdout.decode()}" \
        f"{proc.stderr.decode()}"


@contextmanager
def sealed(root: Path, outside: Outside, *, clean: bool = False) -> Iterator[None]:
    """The scenario in the block may fail or be refused, but must leave everything sealed:
    ``git fsck --strict`` passes, ``git status`` shows what it showed before (nothing left over;
    with ``clean``, nothing at all: the block recorded what was pending), no lock or journal
    remains, and nothing outside changed."""
    before = "" if clean else status(root)
    yield
    fsck(root)
    assert status(root) == before, f"git status changed:\n{status(root)}"
    assert not lock_files(root), f"a lock file was left behind: {lock_files(root)}"
    assert not (root / ".git" / "gitspace" / "journal.json").exists(), "a journal was left"
    outside.unchanged()


@contextmanager
def workspace(tmp_path: Path, files: dict[str, str | Link],
              outside_files: dict[str, str] | None = None,
              ) -> Iterator[tuple[gitspace.Workspace, Outside]]:
    """A workspace at tmp_path/ws whose first commit holds ``files`` (a ``Link`` is a symbolic
    link, as a cloned history checks it out), and the folder beside it (holding
    ``outside_files`` too, which a link may name as ``{outside}/NAME``)."""
    root = tmp_path / "ws"
    outside = Outside(tmp_path / "outside", outside_files)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, Link):
            os.symlink(text.target.replace("{outside}", str(outside.path)), root / rel)
        else:
            (root / rel).write_text(text)
    root.mkdir(exist_ok=True)
    ws = gitspace.init(root, agent="tester")
    try:
        yield ws, outside
    finally:
        ws.close()


def objects_hold(root: Path, text: str) -> bool:
    """Does any object in the repository (reachable or not, loose or packed) hold ``text``?"""
    listed = git(root, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)")
    shas = [line for line in listed.split() if line]
    if not shas:
        return False
    proc = subprocess.run(["git", "cat-file", "--batch"], cwd=root, env=git_env(),
                          input="\n".join(shas).encode() + b"\n", capture_output=True)
    return text.encode() in proc.stdout


def fifo(path: Path) -> Path:
    """A named pipe at ``path`` nobody writes into: a reader that opens it waits for ever."""
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path


def never_blocks(args: list[str], cwd: Path, *, stdin: bytes = b"", seconds: float = 60,
                 env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``args`` and insist it finishes: a read that blocks on a fifo fails the test (the
    child is killed) instead of hanging the suite. Output is text (undecodable bytes replaced)."""
    try:
        proc = subprocess.run(args, cwd=cwd, input=stdin, capture_output=True, timeout=seconds,
                              env=env or dict(os.environ))
    except subprocess.TimeoutExpired:
        raise AssertionError(f"{' '.join(args)} blocked for {seconds:.0f} s (a read with no "
                             "bound or one that waits)") from None
    return subprocess.CompletedProcess(args, proc.returncode, proc.stdout.decode(errors="replace"),
                                       proc.stderr.decode(errors="replace"))


def gitspace_argv(root: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "gitspace", "-C", str(root), *args]


def cli(root: Path, *args: str, env: dict[str, str] | None = None,
        prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """Run the gitspace CLI in a fresh process, as a user would."""
    return subprocess.run([*prefix, sys.executable, "-m", "gitspace", "-C", str(root), *args],
                          capture_output=True, text=True, env=env or dict(os.environ), timeout=120)


def usage_failure(proc: subprocess.CompletedProcess[str]) -> None:
    """How a command was typed is wrong (a malformed --args): exit 2, as every usage error, with
    the command's usage line and what is wrong, and no traceback."""
    assert proc.returncode == 2, f"exit {proc.returncode}: {proc.stderr}"
    assert "Traceback" not in proc.stderr and "hit a bug" not in proc.stderr, proc.stderr
    assert "Usage:" in proc.stderr and "--args" in proc.stderr, proc.stderr


def expected_failure(proc: subprocess.CompletedProcess[str]) -> None:
    """Exit 1 with a sentence and a hint on stderr, and no traceback."""
    assert proc.returncode == 1, f"exit {proc.returncode}: {proc.stderr}"
    assert "Traceback" not in proc.stderr and "hit a bug" not in proc.stderr, proc.stderr
    assert "hint" in proc.stderr.lower(), f"no hint in: {proc.stderr}"
