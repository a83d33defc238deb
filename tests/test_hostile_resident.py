"""The resident recorder's port, tried as any other process on the machine could try it: it
listens on 127.0.0.1, where every local program, and any web page a browser opens, can reach it.

What must hold: only a request with the checkout's secret, its own Host, no foreign Origin, a
known harness and flag, and a body within the payload cap is recorded; everything else is refused
before its body is read, records nothing, keeps nothing in the journal, and leaves the resident
serving the next honest call.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import git, git_run, ops
from hookcalls import payload
from user_repo import fsck, make_user_repo, users_own

from gitspace.harness.payload import MAX_PAYLOAD
from gitspace.harness.resident import client, home

LINE = "refs/gitspace/lines/main"


def gs(root: Path, *args: str) -> None:
    env = {**os.environ, "GITSPACE_RESIDENT": "on"}
    proc = subprocess.run([sys.executable, "-m", "gitspace", "-C", str(root), *args], env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, f"gitspace {args}:\n{proc.stdout}{proc.stderr}"


@pytest.fixture(scope="module")
def resident(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A person's checkout with the hooks installed and its resident listening; stopped and
    forgotten afterwards."""
    root = make_user_repo(tmp_path_factory.mktemp("hostile") / "repo")
    gs(root, "hooks", "install", "claude-code")
    assert client.start_resident(root, root / ".git")
    assert home.alive(root / ".git") is not None, "the resident did not start"
    try:
        yield root
    finally:
        gs(root, "hooks", "uninstall", "claude-code")
        assert home.alive(root / ".git") is None


def send(root: Path, raw: bytes) -> tuple[int, bytes]:
    """``raw`` sent to the resident's port as it is; (status, body) of the answer."""
    with socket.create_connection((home.HOST, home.port(root / ".git") or 0), timeout=30) as conn:
        conn.sendall(raw)
        conn.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


def request(root: Path, body: bytes, *, path: str = "/hook/claude-code", method: str = "POST",
            host: str | None = None, secret: str | None = None, extra: str = "",
            length: str | None = None) -> bytes:
    port = home.port(root / ".git")
    key = home.secret(root / ".git") if secret is None else secret
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host or f'127.0.0.1:{port}'}",
             "Content-Type: application/json", "Connection: close"]
    if key:
        lines.append(f"Authorization: Bearer {key}")
    if length != "":
        lines.append(f"Content-Length: {length if length is not None else len(body)}")
    return ("\r\n".join(lines) + "\r\n" + extra + "\r\n").encode() + body


def a_write(root: Path, rel: str, use_id: str) -> tuple[bytes, bytes]:
    tool_input = {"file_path": str(root / rel), "content": f"{use_id}\n"}
    pre = json.dumps(payload(root, "PreToolUse", "Write", tool_input, use_id)).encode()
    post = json.dumps(payload(root, "PostToolUse", "Write", tool_input, use_id)).encode()
    return pre, post


def recorded(root: Path) -> list[str | None]:
    if git_run(root, "rev-parse", "-q", "--verify", LINE).returncode:
        return []
    return [op.tool_use_id for op in ops(root, LINE) if op.source == "harness"]


def journal_empty(root: Path) -> bool:
    folder = root / ".git" / home.FOLDER / "journal"
    return not folder.exists() or not any(folder.iterdir())


REFUSED = {
    "no secret": (dict(secret=""), 401),
    "a wrong secret": (dict(secret="x" * 43), 401),
    "the secret with one letter changed": (dict(secret="?"), 401),
    "a foreign Host": (dict(host="evil.example"), 421),
    "the right port on a foreign name": (dict(host="evil.example:{port}"), 421),
    "a web page's Origin": (dict(extra="Origin: http://evil.example\r\n"), 403),
    "GET": (dict(method="GET"), 405),
    "DELETE": (dict(method="DELETE"), 405),
    "an unknown harness": (dict(path="/hook/sh"), 404),
    "a path that climbs": (dict(path="/hook/../../etc/passwd"), 404),
    "a flag no hook takes": (dict(path="/hook/claude-code?exec"), 404),
    "git's hook gitspace does not serve there": (dict(path="/git/pre-push"), 404),
    "git's hook with an argument git never gives": (dict(path="/git/post-merge?2"), 404),
    "a git hook's path that climbs": (dict(path="/git/../hook/claude-code"), 404),
    "git's hook with no secret": (dict(path="/git/post-commit", secret=""), 401),
    "no Content-Length": (dict(length=""), 411),
    "a Content-Length that is not a number": (dict(length="-1"), 411),
    "a body over the cap": (dict(length=str(MAX_PAYLOAD + 1)), 413),
}


def refused(root: Path, case: str, body: bytes) -> tuple[int, bytes]:
    """The answer to ``body`` sent as REFUSED's ``case`` says."""
    kwargs: dict[str, Any] = dict(REFUSED[case][0])
    key = home.secret(root / ".git") or ""
    if kwargs.get("secret") == "?":
        kwargs["secret"] = key[:-1] + ("A" if key[-1] != "A" else "B")
    if "host" in kwargs:
        kwargs["host"] = kwargs["host"].format(port=home.port(root / ".git"))
    got, said = send(root, request(root, body, **kwargs))
    assert key.encode() not in said
    return got, said


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_request_that_is_not_a_hook_of_this_checkout_is_refused(resident: Path,
                                                                   case: str) -> None:
    before, theirs = recorded(resident), users_own(resident)
    (resident / "hostile.txt").write_text("written by the agent\n")
    for body in a_write(resident, "hostile.txt", "toolu_hostile"):
        got, said = refused(resident, case, body)
        assert got == REFUSED[case][1], said
    (resident / "hostile.txt").unlink()
    assert recorded(resident) == before
    assert journal_empty(resident)
    assert users_own(resident) == theirs
    assert home.alive(resident / ".git") is not None
    fsck(resident)


def test_a_body_over_the_cap_is_not_read(resident: Path) -> None:
    # A terabyte announced and none of it sent: the refusal comes at once, from the headers
    # alone, so a local process cannot make the resident wait for a body or hold one in memory.
    head = request(resident, b"", length=str(1 << 40))
    with socket.create_connection((home.HOST, home.port(resident / ".git") or 0),
                                  timeout=30) as conn:
        conn.sendall(head)
        answer = conn.recv(4096)
    assert answer.startswith(b"HTTP/1.1 413 "), answer
    assert journal_empty(resident)
    fsck(resident)


@pytest.mark.parametrize("body", [b"", b"not json", b"[1, 2]", b"{" * 5000 + b"}" * 5000,
                                  json.dumps({"hook_event_name": "PostToolUse"}).encode(),
                                  b'{"hook_event_name": "PreToolUse", "tool_name": "Write", '
                                  b'"tool_input": {"file_path": "/etc/passwd", "content": "x"}}'])
def test_a_payload_that_is_not_a_call_records_nothing(resident: Path, body: bytes) -> None:
    before, theirs = recorded(resident), users_own(resident)
    got, _ = send(resident, request(resident, body))
    assert got == 200  # (the harness is answered: a hook never breaks it)
    assert recorded(resident) == before
    assert journal_empty(resident)
    assert users_own(resident) == theirs
    fsck(resident)


def test_a_payload_naming_another_repository_records_only_here(resident: Path,
                                                               tmp_path: Path) -> None:
    # A request with the secret may claim any cwd: the resident records in its own checkout,
    # and another repository on the machine is never written.
    other = make_user_repo(tmp_path / "other")
    refs = git(other, "for-each-ref")
    (other / "theirs.txt").write_text("theirs\n")
    pre, post = a_write(other, "theirs.txt", "toolu_elsewhere")
    for body in (pre, post):
        assert send(resident, request(resident, body))[0] == 200
    assert git(other, "for-each-ref") == refs
    assert not (other / ".git" / "gitspace").exists()
    assert "toolu_elsewhere" not in recorded(resident)
    fsck(other)
    fsck(resident)


def test_after_every_refusal_an_honest_call_is_recorded(resident: Path) -> None:
    for case in REFUSED:
        assert refused(resident, case, b"{}")[0] == REFUSED[case][1]
    pre, post = a_write(resident, "honest.txt", "toolu_honest")
    assert send(resident, request(resident, pre))[0] == 200
    (resident / "honest.txt").write_text("toolu_honest\n")
    assert send(resident, request(resident, post))[0] == 200
    assert recorded(resident)[-1] == "toolu_honest"
    assert journal_empty(resident)
    fsck(resident)
