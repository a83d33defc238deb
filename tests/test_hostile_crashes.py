"""Inputs that crashed a command (exit 3, a traceback, HTTP 500) where an expected answer is due.

- a worklog entry whose timestamp, in UTC, falls outside the years 1-9999 (``peek``, ``last_n``,
  ``range``, ``today`` and ``last_hours`` formatted it and overflowed): it is a malformed line;
- ``gitspace rewind '²'`` (``isdigit()`` says yes, ``int()`` says no): it is no turn number;
- ``detach --force`` of an agent whose worktree's ``.gitspace`` is a link: the link is removed
  with the worktree, never followed or archived;
- the web view on a NUL in any path or parameter: a 4xx page, never a 500.

Every scenario ends sealed: ``git fsck --strict``, the status it began with, nothing outside.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import git
from hostile import Outside, cli, expected_failure, fsck, sealed, status, workspace

from gitspace.team import attach

EDGES = [
    "0001-01-01T00:00:00+14:00",  # year 0 in UTC
    "9999-12-31T23:59:59-14:00",  # year 10000 in UTC
    "0001-01-01T00:00:00Z",  # the first instant there is: fine
    "9999-12-31T23:59:59.999999Z",  # the last: fine
]


def _worklog() -> str:
    lines = [json.dumps({"ts": ts, "text": f"edge {i}", "tags": ["edge"]})
             for i, ts in enumerate(EDGES)]
    lines.append(json.dumps({"ts": "2024-03-05T09:00:00Z", "text": "an ordinary entry",
                             "tags": ["plain"]}))
    return "\n".join(lines) + "\n"


CALLS = [
    ("peek", {}),
    ("last_n", {"n": 10}),
    ("range", {"start": "0001-01-01", "end": "9999-12-31"}),
    ("range", {"start": "0001-01-01T00:00:00Z", "end": "9999-12-31T23:59:59Z"}),
    ("today", {"date": "0001-01-01"}),
    ("today", {"date": "9999-12-31"}),
    ("today", {"date": "2024-03-05"}),
    ("last_hours", {"hours": 24, "now": "0001-01-01T12:00:00Z"}),
    ("last_hours", {"hours": 24, "now": "9999-12-31T12:00:00Z"}),
]


@pytest.mark.parametrize("segmented", [False, True], ids=["file", "segmented"])
def test_a_worklog_timestamp_at_the_edge_of_time_is_no_crash(tmp_path: Path,
                                                             segmented: bool) -> None:
    rel = "journal/worklog/0000/000001.jsonl" if segmented else "journal/worklog.jsonl"
    with workspace(tmp_path, {rel: _worklog()}) as (ws, outside), sealed(ws.root, outside):
        path = "journal/worklog" if segmented else "journal/worklog.jsonl"
        for tool, args in CALLS:
            result = ws.call(tool, {"path": path, **args})
            assert "Traceback" not in result.text and "Error" not in result.text, \
                (tool, args, result.text)
            assert result.ok, (tool, args, result.text)
        peeked = ws.call("peek", {"path": path}).text
        assert "2 malformed" in peeked, peeked
        assert "an ordinary entry" in ws.call("last_n", {"path": path, "n": 10}).text


@pytest.mark.parametrize("which", ["²", "1²", "٣", "³⁴", "Ⅻ"])
def test_rewind_to_a_number_that_is_no_ascii_number(tmp_path: Path, which: str) -> None:
    with workspace(tmp_path, {"a.txt": "a\n"}) as (ws, outside):
        # A turn recorded, as the Stop hook names it: the number is then looked for.
        assert ws.call("checkpoint", {"name": "claude-code-5c0e4b1a-turn-1"}).ok
        with sealed(ws.root, outside):
            proc = cli(ws.root, "rewind", which)
            expected_failure(proc)


def test_detach_force_with_a_linked_gitspace_folder(tmp_path: Path) -> None:
    user = tmp_path / "user"
    user.mkdir()
    git(user, "init", "-q", "-b", "main")
    (user / "a.txt").write_text("a\n")
    git(user, "add", "a.txt")
    git(user, "commit", "-q", "-m", "start")
    outside = Outside(tmp_path / "outside", {"session.json": '{"kept": true}\n'})
    found = attach.attach(user, "bob")
    local = found.path / ".gitspace"
    if local.exists():
        import shutil
        shutil.rmtree(local)
    os.symlink(outside.path, local)
    before = status(user)
    proc = cli(user, "detach", "bob", "--force")
    assert proc.returncode in (0, 1), proc.stderr
    assert "Traceback" not in proc.stderr and "bug" not in proc.stderr, proc.stderr
    fsck(user)
    assert status(user) == before
    outside.unchanged()
    if proc.returncode == 0:
        assert not found.path.exists()


ROUTES = ["/files/HEAD/{x}", "/files/{x}", "/files/HEAD/{x}?blame=1", "/op/{x}", "/session/{x}",
          "/compare?a={x}&b=HEAD", "/compare?a=HEAD&b={x}", "/compare?a=HEAD&b=HEAD&path={x}",
          "/?path={x}", "/?q={x}", "/?agent={x}", "/?tool={x}", "/?session={x}", "/?rev={x}",
          "/graph?path={x}", "/graph?offset={x}", "/files/HEAD?path={x}", "/static/{x}",
          "/sessions?{x}={x}"]


@pytest.mark.parametrize("x", ["a%00b", "%00", "a.txt%00", "%C0%80", "%ED%A0%80", "%FF"])
def test_the_web_view_answers_a_nul_or_a_bad_byte_in_any_path_with_a_page(
        tmp_path: Path, x: str) -> None:
    from ui_server import fetch, serving

    with workspace(tmp_path, {"a.txt": "a\n"}) as (ws, outside), sealed(ws.root, outside):
        with serving(ws.root) as base:
            for route in ROUTES:
                code, body = fetch(base + route.format(x=x))
                assert code != 500 and code < 500, (route.format(x=x), code, body[:300])
