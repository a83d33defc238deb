"""The racy-index settler on a file system with coarse timestamps: 1 s (ext3, HFS+) and 2 s (FAT).

Such a file system stamps a file with the start of its granule: a file written at 11.5 s on FAT
reads back as 10 s, and so does a rewrite at 11.9 s. ``settle`` trusted a file once the clock
had left the second of its stamp; on FAT a rewrite after that read could still carry the same
stamp, and once the index was written in a later granule git took the rewrite for unchanged.

The file system is simulated where gitspace looks at it (``os`` and ``time`` as ``racyindex``
and ``gitindex`` see them: every stamp floored to its granule, the clock placed in a chosen
phase of a granule), so each case is exact and takes no sleep. The judge is git's own rule for
an index entry, on the same coarse stamps: an entry recorded in an earlier second than its
index was written is trusted when its stat data matches the file's.
"""

from __future__ import annotations

import os
import time
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import call_ok

import gitspace
from gitspace.storage import gitindex, racyindex

NS = 1_000_000_000


class CoarseFS:
    """Stamps floored to ``granularity`` seconds, on a clock some way ahead of the kernel's.

    The clock only moves forward (``advance_to``); each move applies to what happens after it,
    so a file keeps the stamp it was written with while the clock runs on."""

    def __init__(self, granularity: int) -> None:
        self.g = granularity * NS
        self.moves: list[tuple[int, int]] = [(0, 0)]  # (kernel time of a move, offset from it)

    def sim(self, kernel_ns: int) -> int:
        offset = next(o for at, o in reversed(self.moves) if at <= kernel_ns)
        return kernel_ns + offset

    def stamp(self, kernel_ns: int) -> int:
        return self.sim(kernel_ns) // self.g * self.g

    def now(self) -> int:
        return self.sim(time.time_ns())

    def kernel(self, sim_ns: int) -> int:
        """The kernel time that reads as ``sim_ns`` now (to stamp a file with by ``os.utime``)."""
        return sim_ns - self.moves[-1][1]

    def place(self, kernel_ns: int, phase: float) -> int:
        """Set the clock so that ``kernel_ns`` falls ``phase`` seconds into a granule (one far
        from the kernel's own); that granule's start."""
        start = (kernel_ns // self.g + 1000) * self.g
        self.moves = [(0, start + int(phase * NS) - kernel_ns)]
        return start

    def advance_to(self, sim_ns: int) -> None:
        kernel = time.time_ns()
        assert sim_ns >= self.sim(kernel), "the clock only moves forward"
        self.moves.append((kernel, sim_ns - kernel))

    def coarse(self, st: os.stat_result) -> os.stat_result:
        times = {f"st_{k}_ns": self.stamp(getattr(st, f"st_{k}_ns"))
                 for k in ("atime", "mtime", "ctime")}
        extra = {k: getattr(st, k) for k in dir(st) if k.startswith("st_") and k not in times
                 and k not in ("st_mode", "st_ino", "st_dev", "st_nlink", "st_uid", "st_gid",
                               "st_size")}
        extra.update(times)
        extra.update({k[:-3]: v / NS for k, v in times.items()})
        head = tuple(st)[:7] + tuple(times[f"st_{k}_ns"] // NS for k in ("atime", "mtime", "ctime"))
        return os.stat_result(head, extra)

    def os(self) -> types.SimpleNamespace:
        fs = self

        class View(types.SimpleNamespace):
            def __getattr__(self, name: str) -> object:
                return getattr(os, name)

        return View(stat=lambda *a, **k: fs.coarse(os.stat(*a, **k)),
                    lstat=lambda *a, **k: fs.coarse(os.lstat(*a, **k)),
                    fstat=lambda fd: fs.coarse(os.fstat(fd)))

    def time(self) -> types.SimpleNamespace:
        fs = self

        class Clock(types.SimpleNamespace):
            def __getattr__(self, name: str) -> object:
                return getattr(time, name)

        return Clock(time_ns=fs.now, time=lambda: fs.now() / NS)


@pytest.fixture(params=[1, 2], ids=["1s", "2s"])
def fs(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[CoarseFS]:
    coarse = CoarseFS(request.param)
    for module in (racyindex, gitindex):
        monkeypatch.setattr(module, "os", coarse.os())
        monkeypatch.setattr(module, "time", coarse.time())
    racyindex._found.clear()
    yield coarse
    racyindex._found.clear()


def _trusted_but_changed(fs: CoarseFS, root: Path, rel: str) -> bool:
    """Would git, on these stamps, take ``rel`` for unchanged although its content is not the
    index entry's blob? (git's racy-git rule, whole seconds as it is built here.)"""
    index_path = root / ".git" / "index"
    gitindex.forget(index_path)
    loaded = gitindex.load(index_path)
    raw = loaded.raw[rel.encode()]
    fields = gitindex.stat_data(raw)
    index_second = fs.stamp(os.stat(index_path).st_mtime_ns) // NS
    st = fs.coarse(os.lstat(root / rel))
    trusted = fields[2] < index_second and racyindex._git_trusts(fields, st)
    from gitspace.storage.loose import hash_object

    return trusted and hash_object("blob", (root / rel).read_bytes()) != gitindex.entry_sha(raw)


def _written(tmp_path: Path) -> tuple[gitspace.Workspace, Path]:
    ws = gitspace.init(tmp_path / "ws")
    call_ok(ws, "create", {"path": "log.txt", "file_text": "entry 1\n" * 100})
    return ws, ws.root / "log.txt"


def _racy_now(fs: CoarseFS, root: Path, target: Path, phase: float) -> int:
    """Place the clock so that the file's last write is ``phase`` s into its granule, and make
    the index racy in git's eyes (its stamp in the file's granule); the granule's start."""
    written = target.lstat().st_mtime_ns
    start = fs.place(written, phase)
    index = root / ".git" / "index"
    gitindex.forget(index)
    loaded = gitindex.load(index)  # the entry as an index writer on this file system records it
    raw = loaded.raw[target.name.encode()]
    loaded.set(target.name, gitindex.entry_sha(raw), gitindex.stat_data(raw)[6],
               fs.coarse(target.lstat()))
    gitindex.store(index, loaded)
    os.utime(index, ns=(written, written))  # written in the file's granule: the entry is racy
    gitindex.forget(index)
    assert racyindex.racy(index) is not None and racyindex.racy(index).entries == 1  # type: ignore[union-attr]
    return start


def test_nothing_is_trusted_before_the_files_granule_is_over(fs: CoarseFS,
                                                             tmp_path: Path) -> None:
    ws, target = _written(tmp_path)
    try:
        start = _racy_now(fs, ws.root, target, phase=0.2)
        fs.advance_to(start + int(1.3 * NS))  # past the stamp's second, inside a FAT granule
        settled = racyindex.settle(ws.root / ".git" / "index", ws.root)
        # A rewrite of the same size right after, before the granule ends, keeps the stamp...
        target.write_bytes(target.read_bytes().replace(b"entry 1", b"entry 2"))
        if settled is not None:
            # ...and if the index settle wrote reached the disk in the next granule (a long
            # settle crosses one), git trusts whatever settle recorded.
            later = fs.kernel(start + 2 * NS + NS // 10)
            os.utime(ws.root / ".git" / "index", ns=(later, later))
            assert not _trusted_but_changed(fs, ws.root, "log.txt"), (
                f"settle trusted a file inside its granule ({settled}): git hides the rewrite")
    finally:
        ws.close()


def test_once_the_granule_is_over_the_settler_settles_and_hides_nothing(
        fs: CoarseFS, tmp_path: Path) -> None:
    ws, target = _written(tmp_path)
    try:
        start = _racy_now(fs, ws.root, target, phase=0.2)
        fs.advance_to(start + 2 * NS + NS // 5)  # two seconds on: any granule is over
        settled = racyindex.settle(ws.root / ".git" / "index", ws.root)
        assert settled is not None and settled.verified == 1, settled
        target.write_bytes(target.read_bytes().replace(b"entry 1", b"entry 2"))
        assert not _trusted_but_changed(fs, ws.root, "log.txt")
    finally:
        ws.close()
