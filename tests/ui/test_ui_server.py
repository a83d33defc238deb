"""The web view over plain HTTP: its front door, hostile history, and that it only ever reads.

Each test runs the real ``gitspace ui`` in a child process against a real repository.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

from conftest import call_ok, git, ops
from ui_server import fetch, serving

import gitspace

PAGES = ("/", "/?branch=*", "/graph", "/sessions", "/files", "/compare?a=start&b=main",
         "/?q=notes", "/?agent=tester&tool=create", "/op/main", "/op/main?view=split",
         "/files/main/notes", "/files/main/notes/a.md", "/files/main/notes/a.md?blame=1",
         "/static/style.css", "/static/live.js", "/static/code.css")


def _busy_workspace(ws: gitspace.Workspace) -> None:
    call_ok(ws, "create", {"path": "notes/a.md", "file_text": "alpha\nbeta\n"})
    call_ok(ws, "checkpoint", {"name": "start"})
    call_ok(ws, "str_replace", {"path": "notes/a.md", "old_str": "beta", "new_str": "gamma"})
    call_ok(ws, "restore", {"name": "start"})
    call_ok(ws, "undo", {})


def _fingerprint(root: Path) -> dict[str, str]:
    """Every file under ``root`` (with .git) by content and metadata, but the op index: a cache
    beside the repository that every reader brings up to date before it answers
    (``storage/opindex.py``), as naming a checkpoint does (the resolver asks whether an op's id
    reads as the name too)."""
    found = {}
    for folder, _, names in os.walk(root):
        for name in names:
            if name.startswith("opindex.sqlite") and Path(folder).name == "gitspace":
                continue
            path = Path(folder, name)
            st = path.lstat()
            found[str(path.relative_to(root))] = (
                f"{st.st_mode}:{st.st_size}:{st.st_mtime_ns}:"
                + hashlib.sha1(path.read_bytes() if path.is_file() else b"").hexdigest())
    return found


def test_every_page_answers_and_the_view_writes_nothing(ws: gitspace.Workspace) -> None:
    _busy_workspace(ws)
    ws.close()
    before = _fingerprint(ws.root)
    with serving(ws.root) as base:
        for page in PAGES:
            status, body = fetch(base + page)
            assert status == 200, f"{page}: {status} {body[:300]}"
        status, body = fetch(base + "/")
        assert 'id="total"' in body and "restore" in body and "reverts" in body
    assert _fingerprint(ws.root) == before, "the view changed a file in the repository"


def test_only_loopback_hosts_same_origin_and_reads_are_served(ws: gitspace.Workspace) -> None:
    port_of = None
    with serving(ws.root) as base:
        port_of = base.rsplit(":", 1)[1]
        assert fetch(base + "/")[0] == 200
        assert fetch(base + "/", headers={"Host": f"localhost:{port_of}"})[0] == 200
        status, body = fetch(base + "/", headers={"Host": f"evil.example:{port_of}"})
        assert status == 421 and "Host" in body
        assert fetch(base + "/", headers={"Host": "127.0.0.1:1"})[0] == 421
        status, body = fetch(base + "/", headers={"Origin": "http://evil.example"})
        assert status == 403
        assert fetch(base + "/", headers={"Origin": base})[0] == 200
        for method in ("POST", "PUT", "DELETE"):
            assert fetch(base + "/", method=method)[0] == 405
        status, _ = fetch(base + "/")
        csp = _headers(base + "/")["content-security-policy"]
        assert "default-src 'none'" in csp and "script-src 'self'" in csp


def _headers(url: str) -> dict[str, str]:
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=30) as response:
        return {k.lower(): v for k, v in response.headers.items()}


def test_a_non_loopback_address_is_refused_before_listening(ws: gitspace.Workspace) -> None:
    for host in ("0.0.0.0", "192.0.2.1", "::", "example.com"):
        proc = subprocess.run([sys.executable, "-m", "gitspace", "ui", str(ws.root), "--host", host,
                               "--port", "0"], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert "only listens on loopback" in proc.stderr and "Traceback" not in proc.stderr


def test_a_folder_that_is_no_repository_is_an_expected_error(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "gitspace", "ui", str(tmp_path / "missing"),
                           "--port", "0"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr


def test_malformed_history_renders_placeholders_never_a_500(ws: gitspace.Workspace) -> None:
    call_ok(ws, "create", {"path": "notes/a.md", "file_text": "<script>alert(1)</script>\n"})
    # A corrupt session file, and one that is valid JSON of the wrong shape.
    sessions = ws.root / ".gitspace" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / "BROKEN.json").write_text("{not json")
    (sessions / "LISTY.json").write_text('["a", 1]')
    (sessions / "ODD.json").write_text(json.dumps({
        "format": 1, "id": "ODD", "task": "t", "agent": None, "client": "c", "scripted": True,
        "messages": [{"role": "user", "content": 5}, "nonsense", {"role": "assistant", "content":
                     [{"type": "tool_use", "id": "x<y", "name": "<b>", "input": None},
                      {"type": "mystery"}, 7]}]}))
    # A plain commit without trailers, a commit with a malformed trailer block, a binary file.
    (ws.root / "plain.txt").write_text("by hand\n")
    git(ws.root, "add", "plain.txt")
    git(ws.root, "commit", "-q", "-m", "a commit by hand")
    plain = git(ws.root, "rev-parse", "HEAD").strip()
    git(ws.root, "commit", "-q", "--allow-empty", "-m",
        "bad trailers\n\nGitspace-Format: 1\nGitspace-Nonsense: <i>x</i>")
    bad = git(ws.root, "rev-parse", "HEAD").strip()
    (ws.root / "blob.bin").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary")
    snap = ws.snapshot()
    assert snap.ok and snap.commit
    weird = 'odd <name> & "quotes" #1?.txt'
    call_ok(ws, "create", {"path": weird, "file_text": "x\n"})
    ws.close()
    with serving(ws.root) as base:
        checks = {
            "/": ["Not an op", "Malformed", "&lt;script&gt;"],
            "/sessions": ["damaged", "BROKEN", "LISTY"],
            "/session/BROKEN": ["cannot be shown", "damaged"],
            "/session/LISTY": ["cannot be shown"],
            "/session/ODD": ["is malformed", "Unreadable content", "mystery"],
            f"/op/{plain}": ["Not an op.", "plain.txt"],
            f"/op/{bad}": ["Malformed trailers", "&lt;i&gt;x&lt;/i&gt;"],
            f"/op/{snap.commit}": ["Binary file:", "blob.bin"],
            f"/files/{snap.commit}/blob.bin": ["Binary file:"],
            "/files/main/" + quote(weird): ["odd &lt;name&gt; &amp; &quot;quotes&quot; #1?.txt"],
            "/files/main": [f'/{quote(weird)}"'],  # a link that opens it
            "/graph": ["commit graph"],
        }
        for page, expected in checks.items():
            status, body = fetch(base + page)
            assert status == 200, f"{page}: {status} {body[:400]}"
            for text in expected:
                assert text in body, f"{page} does not say {text!r}"
            assert "<script>alert" not in body and "<b>" not in body and "<i>x" not in body
        for page, code in (("/op/nope", 404), ("/op/" + "0" * 40, 404),
                           ("/files/main/../../etc/passwd", 404), ("/files/main/missing.txt", 404),
                           ("/?branch=-x", 404), ("/?branch=nope", 404), ("/?source=bogus", 400),
                           ("/session/..%2F..%2Fetc", 404), ("/compare?a=main&b=nope", 404),
                           ("/static/..%2Fapp.py", 404), ("/nowhere", 404)):
            status, body = fetch(base + page)
            assert status == code, f"{page}: {status} {body[:300]}"
            assert "Traceback" not in body


def test_one_short_id_names_an_op_on_every_page_and_every_form_opens_it(
        ws: gitspace.Workspace) -> None:
    """The op id as the CLI shows it (its last 8 characters) is the one the pages show, and the
    op page opens from it, from the whole op id, from a start of it and from the commit."""
    _busy_workspace(ws)
    undo = [o for o in ops(ws.root) if o.tool == "undo"][-1]
    reverted = undo.undo_of[0]
    commit = git(ws.root, "rev-parse", "HEAD").strip()
    shown = subprocess.run([sys.executable, "-m", "gitspace", "-C", str(ws.root), "log", "-n",
                            "1", "--format", "{op_short}"], capture_output=True, text=True,
                           check=True).stdout.strip()
    assert shown == undo.op_id[-8:]
    ws.close()
    with serving(ws.root) as base:
        pages = {form: fetch(base + f"/op/{form}")
                 for form in (shown, undo.op_id, undo.op_id[:12], commit)}
        assert {status for status, _ in pages.values()} == {200}
        assert len({body for _, body in pages.values()}) == 1  # one page, whatever named it
        page = pages[commit][1]
        assert f'class="op-short">{shown}<' in page and f">{reverted[-8:]}</a>" in page
        _, listing = fetch(base + "/")
        assert f">{shown}</a>" in listing and f"reverts {reverted[-8:]}" in listing
        assert f"reverts {reverted[:10]}" not in listing  # never the other end of the id
        _, graph = fetch(base + "/graph")
        assert f">{shown}</tspan>" in graph and f">{commit[:7]}</tspan>" not in graph
        _, files = fetch(base + "/files")
        assert f">{shown}</a>" in files
        status, compared = fetch(base + f"/compare?a=start&b={shown}")
        assert status == 200 and 'id="compare-summary"' in compared
