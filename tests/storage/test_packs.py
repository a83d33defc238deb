"""storage/packs.py reads every object of real packs exactly as ``git cat-file`` does: deltas by
offset and by reference, large offsets, and it says None (never a wrong object) when a pack is
damaged or the object is elsewhere."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from conftest import git, git_run

from gitspace.storage.packs import Packs, apply_delta


def _history(root: Path) -> None:
    """Commits whose files grow and change a little each time: git stores them as delta chains."""
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    for i in range(1, 25):
        (root / "grow.txt").write_text("".join(f"line {n}\n" for n in range(i * 150)))
        (root / "log.txt").write_text("".join(f"entry {n}\n" for n in range(i)))
        (root / f"noise{i % 3}.bin").write_bytes(os.urandom(2000))
        (root / "empty").write_bytes(b"")
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", f"commit {i}")


def _objects(root: Path) -> list[tuple[str, str, str]]:
    out = git(root, "cat-file", "--batch-all-objects",
              "--batch-check=%(objectname) %(objecttype) %(objectsize)")
    return [tuple(line.split()) for line in out.splitlines()]  # type: ignore[misc]


def _chains(root: Path) -> int:
    idx = next((root / ".git" / "objects" / "pack").glob("*.idx"))
    listing = git(root, "verify-pack", "-v", str(idx))
    return sum(1 for line in listing.splitlines() if len(line.split()) == 7)


def _all_read_as_git_reads_them(root: Path) -> int:
    packs = Packs(root / ".git" / "objects")
    found = _objects(root)
    for sha, kind, size in found:
        assert packs.read(sha) == (kind, git_run(root, "cat-file", kind, sha).stdout), sha
        # (the size a note's cap is checked by, read from the entry's header or its delta's)
        assert packs.size(sha) == int(size), sha
    return len(found)


def test_offset_deltas(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    _history(root)
    git(root, "gc", "-q", "--aggressive")
    assert _chains(root) > 20, "the fixture must hold delta chains"
    assert _all_read_as_git_reads_them(root) > 90


def test_reference_deltas_and_large_offsets(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    _history(root)
    git(root, "-c", "repack.useDeltaBaseOffset=false", "repack", "-adfq")
    assert _chains(root) > 20
    pack_dir = root / ".git" / "objects" / "pack"
    pack = next(pack_dir.glob("*.pack"))
    # An index whose offsets past 1,000 bytes sit in the 64-bit table, as in packs over 2 GiB.
    for idx in pack_dir.glob("*.idx"):
        idx.unlink()
    subprocess.run(["git", "index-pack", "--index-version=2,1000", str(pack)], cwd=root,
                   check=True, capture_output=True)
    assert _all_read_as_git_reads_them(root) > 90


def test_what_is_not_in_a_pack_or_is_damaged_reads_as_none(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    _history(root)
    git(root, "gc", "-q")
    packs = Packs(root / ".git" / "objects")
    assert packs.read("0" * 40) is None
    assert packs.read("not an object id") is None
    sha, kind, _ = _objects(root)[0]
    assert packs.read(sha) is not None
    pack = next((root / ".git" / "objects" / "pack").glob("*.pack"))
    data = bytearray(pack.read_bytes())
    for i in range(12, len(data) - 20):  # every entry's bytes, header and trailer kept
        data[i] ^= 0x55
    os.chmod(pack, 0o644)
    pack.write_bytes(bytes(data))
    damaged = Packs(root / ".git" / "objects")
    assert all(damaged.read(row[0]) is None for row in _objects(root)[:40])


def test_a_pack_written_later_is_found(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    _history(root)
    packs = Packs(root / ".git" / "objects")
    head = git(root, "rev-parse", "HEAD").strip()
    assert packs.read(head) is None  # loose: not this module's to read
    git(root, "gc", "-q")
    assert packs.read(head) == ("commit", git_run(root, "cat-file", "commit", head).stdout)


def test_a_delta_for_another_base_is_refused() -> None:
    base = b"hello world\n"
    delta = bytes([len(base), 5, 0x90, 5])  # copy 5 bytes from offset 0
    assert apply_delta(base, delta) == b"hello"
    try:
        apply_delta(b"short", delta)
    except ValueError:
        pass
    else:
        raise AssertionError("a delta made for a 12-byte base applied to a 5-byte one")
