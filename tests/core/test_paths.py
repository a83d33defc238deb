"""Hostile agent-supplied paths are refused by every file tool, before anything is touched."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import assert_clean, call_ok, state

import gitspace
from gitspace.core.paths import normalize
from gitspace.errors import PathRefused

HOSTILE = {
    "dot-dot": ["..", "../x.txt", "a/../../b.txt", "a/../b.txt", "./../x.txt", "a/./b.txt",
                "a//b.txt", "", "/"],
    "absolute": ["/etc/passwd", "{outside}/abs.txt", "C:/x.txt", "c:x.txt", "~", "~/x.txt",
                 "~root/x.txt"],
    "separators": ["..\\x.txt", "a\\b.txt", "a\uff0fb.txt", "a\u2215b.txt", "a\u2044b.txt",
                   "\u2024\u2024/x.txt", "\uff0e\uff0e/x.txt", "\u2025/x.txt"],
    "control": ["a\0b.txt", "a\nb.txt", "a\rb.txt", "a\tb.txt", "\u202etxt.exe", "a\u200db.txt",
                "a\u200bb.txt", "a\ufeffb.txt", "a\u2028b.txt"],
    "encoded": ["%2e%2e/x.txt", "a%2Fb.txt", "%2E%2E%2Fx.txt", "..%2fx.txt",
                "cafe\u0301.txt"],  # the last one is NFD
    "git": [".git", ".git/config", ".git/hooks/pre-commit", ".GIT/x", ".Git/config", ".git./x",
            ".git /x", "x/.git/y", "x/.GIT"],
    "long": ["a" * 300, "d/" + "\u00e9" * 130],
    "symlinks": ["out", "out/x.txt", "out/sub/x.txt", "inlink/x.txt", "inlink"],
}


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "sub").mkdir()
    (folder / "x.txt").write_text("outside\n")
    (folder / "sub" / "x.txt").write_text("outside too\n")
    return folder


def _tree_listing(base: Path) -> dict[str, bytes]:
    out = {}
    for folder, dirs, names in os.walk(base):
        dirs[:] = [d for d in dirs if d != ".git"]  # a background repack may be changing it
        for name in names:
            p = Path(folder, name)
            rel = p.relative_to(base).as_posix()
            out[rel] = os.readlink(p).encode() if p.is_symlink() else p.read_bytes()
    return dict(sorted(out.items()))


def _calls(path: str) -> list[tuple[str, dict[str, object]]]:
    return [
        ("create", {"path": path, "file_text": "pwned\n"}),
        ("str_replace", {"path": path, "old_str": "outside", "new_str": "pwned"}),
        ("insert", {"path": path, "insert_line": 0, "insert_text": "pwned\n"}),
        ("append", {"path": path, "text": "pwned\n"}),
        ("delete", {"path": path}),
        ("rename", {"old_path": path, "new_path": "moved.txt"}),
        ("rename", {"old_path": "a.txt", "new_path": path}),
        ("view", {"path": path}),
        ("search", {"pattern": "outside", "path": path}),
    ]


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_hostile_paths_are_refused_everywhere(tmp_path: Path, outside: Path, kind: str) -> None:
    root = tmp_path / "ws"
    with gitspace.init(root, agent="tester") as ws:
        call_ok(ws, "create", {"path": "a.txt", "file_text": "outside\n"})
        call_ok(ws, "create", {"path": "sub/b.txt", "file_text": "b\n"})
        os.symlink(outside, root / "out")
        os.symlink("sub", root / "inlink")
        before = state(root)
        everything = _tree_listing(tmp_path)
        accepted = []
        for raw in HOSTILE[kind]:
            path = raw.format(outside=outside)
            for tool, args in _calls(path):
                if tool in ("view", "search") and path == "":
                    continue  # the empty path means "the workspace root" for reads
                result = ws.call(tool, args)
                if not isinstance(result.error, PathRefused) or "refused" not in result.text:
                    accepted.append(f"{tool} {path!r}: {result.text}")
                assert result.op is None and result.commit is None
            assert state(root) == before, f"{path!r} changed the workspace"
            assert _tree_listing(tmp_path) == everything, f"{path!r} wrote outside"
        assert accepted == []
        (root / "out").unlink()
        (root / "inlink").unlink()
    assert_clean(root)


@pytest.mark.parametrize("raw,canonical", [
    ("notes/todo.md", "notes/todo.md"),
    ("./notes/todo.md", "notes/todo.md"),
    ("notes/", "notes"),
    ("caf\u00e9.txt", "caf\u00e9.txt"),
    ("a b/c d.txt", "a b/c d.txt"),
    (".gitignore", ".gitignore"),
    ("x.git/y", "x.git/y"),
    (".github/workflows/ci.yml", ".github/workflows/ci.yml"),
    ("100%.txt", "100%.txt"),
])
def test_plain_paths_are_accepted_in_canonical_form(raw: str, canonical: str) -> None:
    assert normalize(raw) == canonical


def test_accepted_unusual_names_round_trip(ws: gitspace.Workspace) -> None:
    for path in ("caf\u00e9.txt", "a b/c d.txt", "x.git/y", "100%.txt", "-rf", "--help"):
        result = call_ok(ws, "create", {"path": path, "file_text": f"{path}\n"})
        assert result.changed == [path]
        assert (ws.root / path).read_text() == f"{path}\n"
        assert call_ok(ws, "delete", {"path": path}).changed == [path]
    assert_clean(ws.root)


def test_symlink_replaced_under_an_op_is_not_followed(ws: gitspace.Workspace, outside: Path) -> None:
    """A folder swapped for a symlink after the agent last looked is still refused."""
    call_ok(ws, "create", {"path": "d/x.txt", "file_text": "inside\n"})
    (ws.root / "d" / "x.txt").unlink()
    (ws.root / "d").rmdir()
    os.symlink(outside, ws.root / "d")
    result = ws.call("append", {"path": "d/x.txt", "text": "pwned\n"})
    assert isinstance(result.error, PathRefused)
    assert (outside / "x.txt").read_text() == "outside\n"
