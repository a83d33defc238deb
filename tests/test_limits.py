"""Every documented limit at its exact edge: one byte (or character, or entry) under, at, and
over. Also the stat data written into index entries and the mode read back after a staged write.

Limits: a path part of 255 bytes and a path of 4,096 (core/paths.py; with the workspace folder in
front and 32 bytes to spare, at most the system's PATH_MAX), 64 parts deep, the file-size cap
(1 MiB by default), the characters of a tool's answer recorded in its commit (ledger.RESULT_CAP)
and of a constraint script's answer (16,000), view's 16,000-character cap, and the 5,000 index
entries from which an index asked to be split (core.splitIndex=true) is split.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest
from conftest import assert_clean, call_ok, call_refused, git, git_env, write_script

import gitspace
from gitspace.core import paths
from gitspace.core.transaction import Outcome, Txn
from gitspace.errors import FileRefused, PathRefused
from gitspace.storage import gitindex, ledger
from gitspace.storage.objects import EXEC_MODE, FILE_MODE
from gitspace.tools.files import VIEW_CAP

MiB = 1 << 20


# -- paths -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["n" * 254, "n" * 255, "é" * 127 + "n"])  # 255 bytes, 128 chars
def test_a_path_part_of_up_to_255_bytes_is_a_file(ws: gitspace.Workspace, name: str) -> None:
    assert len(name.encode()) <= 255
    call_ok(ws, "create", {"path": f"d/{name}", "file_text": "x\n"})
    assert (ws.root / "d" / name).read_text() == "x\n"
    assert git(ws.root, "ls-files", "-z", "d").rstrip("\0") == f"d/{name}"
    assert_clean(ws.root)


@pytest.mark.parametrize("name", ["n" * 256, "é" * 128])  # 256 bytes
def test_a_path_part_of_256_bytes_is_refused(ws: gitspace.Workspace, name: str) -> None:
    call_refused(ws, "create", {"path": f"d/{name}", "file_text": "x\n"}, PathRefused,
            "one of its parts is longer than 255 bytes")


def long_path(length: int, tail: str = "f") -> str:
    """A relative path of exactly ``length`` bytes: 200-byte folders, then a name of 20 to 220
    bytes made of ``tail``."""
    folders = "d" * 200 + "/"
    count = max(0, (length - 20) // len(folders))
    return folders * count + tail * (length - len(folders) * count)


@pytest.mark.parametrize("length", [4095, 4096])
def test_a_path_of_up_to_4096_bytes_is_well_formed(length: int) -> None:
    rel = long_path(length)
    assert len(rel.encode()) == length and paths.normalize(rel) == rel


def test_a_path_of_4097_bytes_is_refused() -> None:
    with pytest.raises(PathRefused, match="it is longer than 4,096 bytes"):
        paths.normalize(long_path(4097))


SYSTEM_SAYS = "inside this workspace it would be longer than the system's limit of 4,096 bytes"


@pytest.mark.parametrize("parts", [paths.MAX_DEPTH - 1, paths.MAX_DEPTH])
def test_a_path_of_up_to_64_parts_is_a_file(ws: gitspace.Workspace, parts: int) -> None:
    rel = "d/" * (parts - 1) + "f"
    call_ok(ws, "create", {"path": rel, "file_text": "deep\n"})
    assert git(ws.root, "ls-files", rel).strip() == rel
    assert_clean(ws.root)


def test_a_path_of_65_parts_is_refused(ws: gitspace.Workspace) -> None:
    assert paths.MAX_DEPTH == 64
    call_refused(ws, "create", {"path": "d/" * 64 + "f", "file_text": "x\n"}, PathRefused,
                 "it is more than 64 folders deep")


def room(ws: gitspace.Workspace) -> int:
    """The longest relative path gitspace takes in this workspace: with the folder in front and
    32 bytes to spare (the separator, the final NUL, a write's tmp name), PATH_MAX."""
    assert os.pathconf(ws.root, "PC_PATH_MAX") == 4096
    return 4096 - 32 - len(os.fsencode(ws.root))


def test_the_longest_path_the_system_takes_in_this_workspace(ws: gitspace.Workspace) -> None:
    """That file is written; one byte more is refused before anything is touched."""
    most = long_path(room(ws), "f")
    assert len(most.rsplit("/", 1)[1]) >= 18  # a name at least as long as the write's tmp file
    call_ok(ws, "create", {"path": most, "file_text": "deep\n"})
    assert (ws.root / most).read_text() == "deep\n"
    assert_clean(ws.root)
    for rel in (long_path(room(ws) + 1, "g"), long_path(4096, "g")):
        call_refused(ws, "create", {"path": rel, "file_text": "x\n"}, PathRefused, SYSTEM_SAYS)


def test_a_one_byte_name_at_the_limit_leaves_room_for_the_tmp_file(ws: gitspace.Workspace) -> None:
    """The tmp file a write makes beside a name (".gitspace-" and 8 characters) is longer than
    a one-byte name: the 32 bytes to spare hold it, and view reads the file back by its path."""
    folder = long_path(room(ws) - 2, "d")
    call_ok(ws, "create", {"path": f"{folder}/f", "file_text": "short name\n"})
    assert "short name" in call_ok(ws, "view", {"path": f"{folder}/f"}).text
    call_refused(ws, "create", {"path": f"{folder}d/f", "file_text": "x\n"}, PathRefused, SYSTEM_SAYS)
    assert_clean(ws.root)


def test_a_path_from_history_too_long_for_the_system_in_full_is_still_written(
        ws: gitspace.Workspace, tmp_path: Path) -> None:
    """A checkpoint made in a workspace with a short folder, restored where the folder is long:
    the work-tree writer works relative to folder descriptors, so no whole path is ever handed
    to the system and the restore succeeds."""
    call_ok(ws, "create", {"path": "a.txt", "file_text": "a\n"})
    call_ok(ws, "checkpoint", {"name": "cp"})
    rel = long_path(room(ws), "f")
    call_ok(ws, "create", {"path": rel, "file_text": "deep\n"})
    call_ok(ws, "checkpoint", {"name": "deep"})
    call_ok(ws, "restore", {"name": "cp"})
    deeper = tmp_path / ("x" * 40) / "ws"
    deeper.parent.mkdir()
    ws.root.rename(deeper)
    assert len(os.fsencode(deeper / rel)) > 4095
    with gitspace.open(deeper, agent="tester") as moved:
        call_ok(moved, "restore", {"name": "deep"})
    assert git(deeper, "ls-files", rel).strip() == rel
    assert git(deeper, "status", "--porcelain") == ""  # git read it back: the content is right


# -- the file-size cap -----------------------------------------------------------------------


@pytest.fixture
def capped(ws_root: Path) -> gitspace.Workspace:
    return gitspace.init(ws_root, agent="tester", max_file_bytes=1000)


def test_writes_up_to_the_size_cap_and_not_one_byte_more(capped: gitspace.Workspace) -> None:
    call_ok(capped, "create", {"path": "under.txt", "file_text": "u" * 999})
    call_ok(capped, "create", {"path": "at.txt", "file_text": "a" * 1000})
    call_refused(capped, "create", {"path": "over.txt", "file_text": "o" * 1001}, FileRefused,
            "1,001 bytes is over the 1,000-byte cap")
    call_refused(capped, "append", {"path": "at.txt", "text": "+"}, FileRefused,
            "1,001 bytes is over the 1,000-byte cap")
    call_ok(capped, "append", {"path": "under.txt", "text": "+"})  # now exactly at the cap
    assert len((capped.root / "under.txt").read_bytes()) == 1000


def test_files_on_disk_up_to_the_size_cap_are_edited_and_recorded(
        capped: gitspace.Workspace) -> None:
    root = capped.root
    (root / "at.txt").write_text("a" * 999 + "\n")
    (root / "over.txt").write_text("o" * 1000 + "\n")
    snap = capped.snapshot()
    assert snap.ok and snap.changed == ["at.txt"]
    assert "over.txt (1,001 bytes, over the 1,000-byte cap)" in snap.text
    call_ok(capped, "str_replace", {"path": "at.txt", "old_str": "a\n", "new_str": "b\n"})
    assert call_ok(capped, "view", {"path": "at.txt"}).text.endswith("a" * 998 + "b")
    call_refused(capped, "str_replace", {"path": "over.txt", "old_str": "o\n", "new_str": "p\n"},
            FileRefused, "over.txt is 1,001 bytes, over the 1,000-byte cap")
    call_refused(capped, "view", {"path": "over.txt"}, FileRefused, "1,001 bytes, too large to view")
    assert git(root, "ls-files", "over.txt") == ""


def test_the_default_size_cap_is_one_mebibyte(ws: gitspace.Workspace) -> None:
    assert ws.max_file_bytes == MiB
    call_ok(ws, "create", {"path": "at.txt", "file_text": "x" * MiB})
    call_refused(ws, "append", {"path": "at.txt", "text": "y"}, FileRefused,
            "1,048,577 bytes is over the 1,048,576-byte cap")


# -- answers: recorded in the commit, from a script, from view ---------------------------------


@pytest.mark.parametrize("size", [ledger.RESULT_CAP - 1, ledger.RESULT_CAP, ledger.RESULT_CAP + 1])
def test_the_answer_recorded_in_an_op_commit_is_capped(ws: gitspace.Workspace, size: int) -> None:
    def stage(txn: Txn) -> Outcome:
        txn.write("a.txt", b"a\n")
        return Outcome("r" * size, "answer of a given size")

    who = ws.identity("create")
    done = ws.transact(who.op({"path": "a.txt", "file_text": "a\n"}), stage, who.author)
    recorded = ledger.result_of(ws.repo.commit(done.commit or "").message)
    if size <= ledger.RESULT_CAP:
        assert recorded == "r" * size
    else:
        assert recorded == "r" * ledger.RESULT_CAP + "\n[... 1 more characters]"


@pytest.mark.parametrize("size", [15_999, 16_000, 16_001])
def test_a_scripts_answer_is_capped_at_16000_characters(ws: gitspace.Workspace,
                                                         size: int) -> None:
    write_script(ws.root / "constraints", "say", False, f"head -c {size} /dev/zero | tr '\\0' s\n")
    text = call_ok(ws, "say", {"path": "a"}).text
    if size <= 16_000:
        assert text == "s" * size
    else:
        assert text == "s" * 16_000 + "\n[output truncated: 1 more characters not shown]"


def lines_numbering_to(chars: int) -> list[str]:
    """Lines whose numbered view (``numbered``: "{n:>6}\\t{line}", joined by newlines) is
    exactly ``chars`` characters long: full lines of 100 characters, then one to make it up."""
    full = chars // 101
    rest = chars - (101 * full - 1)
    if 0 < rest < 8:  # too little room for a last line's number: one full line less
        full, rest = full - 1, rest + 101
    return ["x" * 93] * full + (["x" * (rest - 8)] if rest else [])


@pytest.mark.parametrize("chars", [VIEW_CAP - 1, VIEW_CAP, VIEW_CAP + 1])
def test_view_returns_up_to_16000_characters(ws: gitspace.Workspace, chars: int) -> None:
    from gitspace.tools.files import numbered

    lines = lines_numbering_to(chars)
    assert len(numbered(lines, 1)) == chars
    call_ok(ws, "create", {"path": "a.txt", "file_text": "\n".join(lines) + "\n"})
    result = ws.call("view", {"path": "a.txt"})
    if chars <= VIEW_CAP:
        assert result.ok and result.text.endswith(lines[-1])
    else:
        assert not result.ok and isinstance(result.error, FileRefused)
        assert f"take {chars:,} characters, over the 16,000-character view cap" in result.text


# -- the split index ---------------------------------------------------------------------------


def _workspace_with_entries(root: Path, count: int) -> gitspace.Workspace:
    """A workspace whose index and tree hold ``count`` entries (the files are not written out:
    the index records them as git would after a sparse checkout of nothing)."""
    ws = gitspace.init(root, agent="tester")
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=root, env=git_env(),
                          input=b"x\n", capture_output=True, check=True).stdout.decode().strip()
    listing = "".join(f"100644 {blob}\tbulk/f{i:05}\n" for i in range(count - 1))
    git(root, "update-index", "--index-info", input=listing.encode())
    tree = git(root, "write-tree").strip()
    commit = git(root, "commit-tree", tree, "-p", "HEAD", "-m", "bulk", input=b"").strip()
    git(root, "update-ref", "refs/heads/main", commit)
    assert len(gitindex.load(root / ".git" / "index").paths) == count  # with .gitignore
    return ws


def _split(root: Path) -> bool:
    return gitindex.parse((root / ".git" / "index").read_bytes(), root / ".git").shared is not None


def test_an_index_asked_to_split_is_split_from_5000_entries(ws_root: Path) -> None:
    """core.splitIndex=true: from SPLIT_OPT_IN_AT entries on (unasked, only from SPLIT_AT)."""
    assert gitindex.SPLIT_OPT_IN_AT == 5000
    ws = _workspace_with_entries(ws_root, 4998)
    git(ws_root, "config", "core.splitIndex", "true")
    assert call_ok(ws, "create", {"path": "one.txt", "file_text": "1\n"}).notes == []
    assert len(gitindex.load(ws_root / ".git" / "index").paths) == 4999 and not _split(ws_root)
    notes = call_ok(ws, "create", {"path": "two.txt", "file_text": "2\n"}).notes
    assert len(gitindex.load(ws_root / ".git" / "index").paths) == 5000 and _split(ws_root)
    # Said once, to the person: what changed, who cannot read it now, how to keep a plain index.
    assert notes == [
        "The index now holds 5,000 entries, so gitspace writes it in git's split-index format "
        "(core.splitIndex), which keeps each op fast. git reads it; tools built on libgit2 "
        "(GitKraken, many IDE plugins) and dulwich do not. To keep a plain index, run "
        "'git config core.splitIndex false' in this workspace."]
    assert call_ok(ws, "append", {"path": "two.txt", "text": "2\n"}).notes == []  # (once)
    assert _split(ws_root)
    call_ok(ws, "delete", {"path": "two.txt"})
    assert not _split(ws_root)  # 4,999 again
    assert git(ws_root, "ls-files", "-s", "one.txt").split()[1] == \
        git(ws_root, "rev-parse", "HEAD:one.txt").strip()
    ws.close()


def test_an_index_of_100000_entries_is_split_unless_the_config_says_false(ws_root: Path) -> None:
    """Unasked, from SPLIT_AT entries on; core.splitIndex=false keeps it plain at any size (for
    the libgit2 and dulwich clients the note names)."""
    assert gitindex.SPLIT_AT == 100_000
    ws = _workspace_with_entries(ws_root, gitindex.SPLIT_AT - 2)
    call_ok(ws, "create", {"path": "one.txt", "file_text": "1\n"})
    assert not _split(ws_root)
    notes = call_ok(ws, "create", {"path": "two.txt", "file_text": "2\n"}).notes
    assert _split(ws_root) and len(notes) == 1 and "100,000 entries" in notes[0]
    ws.close()
    git(ws_root, "config", "core.splitIndex", "false")
    with gitspace.open(ws_root, agent="tester") as ws:
        assert call_ok(ws, "create", {"path": "three.txt", "file_text": "3\n"}).notes == []
    assert not _split(ws_root)
    assert len(gitindex.load(ws_root / ".git" / "index").paths) == gitindex.SPLIT_AT + 1


@pytest.mark.parametrize("length", [4094, 4095, 4096])
def test_index_names_around_the_4095_byte_length_field(ws: gitspace.Workspace,
                                                       length: int) -> None:
    """A name's length sits in 12 bits; from 4,095 bytes on git ends it with a NUL instead."""
    index_path = ws.root / ".git" / "index"
    name = long_path(length)
    index = gitindex.load(index_path)
    blob = ws.repo.write_blob(b"x\n")
    index.set(name, blob, FILE_MODE, None)
    gitindex.store(index_path, index)
    assert name in git(ws.root, "ls-files", "-z").split("\0")
    assert os.fsencode(name) in gitindex.parse(index_path.read_bytes()).paths


# -- what an op writes into the index, and the mode of a staged write --------------------------


def test_index_entries_carry_the_written_files_stat_data(ws: gitspace.Workspace) -> None:
    call_ok(ws, "create", {"path": "a.txt", "file_text": "a\n"})
    (ws.root / "b.txt").write_text("outside\n")
    call_ok(ws, "append", {"path": "b.txt", "text": "more\n"})  # b.txt's outside edit first
    call_ok(ws, "str_replace", {"path": "a.txt", "old_str": "a", "new_str": "A"})
    for rel in ("a.txt", "b.txt"):
        st = os.lstat(ws.root / rel)
        debug = git(ws.root, "ls-files", "--debug", rel).split("\n")
        fields = dict(pair.split(": ") for line in debug[1:] for pair in line.strip().split("\t")
                      if pair)
        assert fields["ctime"] == f"{st.st_ctime_ns // 10**9}:{st.st_ctime_ns % 10**9}"
        assert fields["mtime"] == f"{st.st_mtime_ns // 10**9}:{st.st_mtime_ns % 10**9}"
        assert fields["dev"].split()[0] == str(st.st_dev & 0xFFFFFFFF)
        assert fields["ino"].split()[0] == str(st.st_ino & 0xFFFFFFFF)
        assert fields["uid"].split()[0] == str(st.st_uid)
        assert fields["gid"].split()[0] == str(st.st_gid)
        assert fields["size"].split()[0] == str(st.st_size)
    assert git(ws.root, "diff-files", "--name-only") == ""  # git trusts the stat: nothing to re-read


def test_the_mode_read_back_after_a_staged_write(ws: gitspace.Workspace) -> None:
    seen: dict[str, int] = {}

    def stage(txn: Txn) -> Outcome:
        seen["absent"] = txn.mode("run.sh")
        txn.write("run.sh", b"#!/bin/sh\n", EXEC_MODE)
        seen["staged exec"] = txn.mode("run.sh")
        txn.write("run.sh", b"#!/bin/sh\necho hi\n")  # no mode: the staged one stays
        seen["rewritten"] = txn.mode("run.sh")
        assert txn.read("run.sh") == b"#!/bin/sh\necho hi\n"  # the staged content reads back
        return Outcome("wrote run.sh", "write run.sh")

    who = ws.identity("create")
    ws.transact(who.op({"path": "run.sh"}), stage, who.author)
    assert seen == {"absent": FILE_MODE, "staged exec": EXEC_MODE, "rewritten": EXEC_MODE}
    assert os.stat(ws.root / "run.sh").st_mode & 0o777 == 0o755
    assert git(ws.root, "ls-files", "-s", "run.sh").split()[0] == "100755"
    call_ok(ws, "str_replace", {"path": "run.sh", "old_str": "hi", "new_str": "ho"})
    assert stat.S_IMODE(os.stat(ws.root / "run.sh").st_mode) == 0o755  # an edit keeps the mode
    assert git(ws.root, "ls-tree", "HEAD", "run.sh").split()[0] == "100755"
    assert_clean(ws.root)
