"""Loose objects are packed in the background, so .git stays near its git-gc size."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import assert_clean, call_ok

import gitspace
from gitspace.core import timeline


def _loose(root: Path) -> int:
    objects = root / ".git" / "objects"
    return sum(len(os.listdir(objects / d)) for d in os.listdir(objects) if len(d) == 2)


def test_ops_trigger_a_background_repack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITSPACE_PACK_THRESHOLD", "64")
    with gitspace.init(tmp_path / "ws", agent="packer") as ws:
        for i in range(120):
            call_ok(ws, "create", {"path": f"f{i % 7}.txt", "file_text": f"version {i}\n"})
        ws.repo.wait_for_packing()
        packs = list((ws.root / ".git" / "objects" / "pack").glob("*.pack"))
        assert packs, "no pack was written"
        # 120 ops wrote ~480 objects; what is still loose is what came after the last repack.
        assert _loose(ws.root) < 300
        assert_clean(ws.root)
        assert len(timeline.timeline(ws, None)) == 121


def test_zero_threshold_turns_packing_off(tmp_path: Path) -> None:
    with gitspace.init(tmp_path / "ws") as ws:  # conftest sets GITSPACE_PACK_THRESHOLD=0
        for i in range(40):
            call_ok(ws, "create", {"path": "f.txt", "file_text": f"{i}\n"})
        assert not ws.repo.maybe_pack()
        assert not (ws.root / ".git" / "objects" / "pack").exists() or not list(
            (ws.root / ".git" / "objects" / "pack").glob("*.pack"))


PRUNER = """
import os, sys
objects = sys.argv[1]
while True:  # what git prune-packed does to empty fan-out folders, as fast as it can
    for name in os.listdir(objects):
        if len(name) == 2:
            try:
                os.rmdir(os.path.join(objects, name))
            except OSError:
                pass
"""


def test_ops_survive_a_concurrent_prune_of_empty_object_folders(tmp_path: Path) -> None:
    import subprocess
    import sys

    with gitspace.init(tmp_path / "ws", agent="racer") as ws:
        pruner = subprocess.Popen([sys.executable, "-c", PRUNER, str(ws.root / ".git" / "objects")])
        try:
            for i in range(1000):  # the unprotected writer lost about 1 op in 400 here
                call_ok(ws, "create", {"path": f"f{i % 50}.txt", "file_text": f"{i}\n"})
        finally:
            pruner.kill()
            pruner.wait()
        assert_clean(ws.root)
