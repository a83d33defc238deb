"""provenance/purge.py: a secret an agent wrote and gitspace recorded in place is purged from all
gitspace keeps (the ops' trees, the Write's arguments, the objects); an ``undo`` alone leaves its
blob readable in the line's history, which is what ``gitspace purge`` is for."""

from __future__ import annotations

import json
from pathlib import Path

from authored import agent_writes, by_line, checkout, gs, person
from conftest import git_run

SECRET = "TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789"


def readable(root: Path, blob: str) -> bool:
    return git_run(root, "cat-file", "-e", blob).returncode == 0


def test_purge_takes_a_secret_out_of_everything_gitspace_recorded(tmp_path: Path) -> None:
    root = checkout(tmp_path)
    agent_writes(root, "src/kept.py", "k = 1\n", "toolu_k")
    agent_writes(root, ".env", SECRET + "\n", "toolu_env")
    blob = person(root, "rev-parse", "refs/gitspace/lines/main:.env").stdout.strip()
    ops = json.loads(gs(root, "log", "--json").stdout)
    write = next(e for e in ops if e["op"] and e["op"]["args"].get("file_path") == ".env")
    gs(root, "undo", "--op", write["op"]["id"])
    assert not (root / ".env").exists()
    assert readable(root, blob), "undo alone leaves the blob readable"
    person(root, "add", "src/kept.py")
    person(root, "commit", "-q", "-m", "the agent's code")
    done = gs(root, "purge", ".env")
    assert "Purged .env from 1 recorded line(s)" in done.stdout
    assert not readable(root, blob)
    every = person(root, "log", "--all", "-p", "--format=%B", "--", ".").stdout
    assert "ghp_" not in every
    assert "ghp_" not in person(root, "log", "--format=%B", "refs/gitspace/lines/main").stdout
    assert person(root, "fsck", "--strict", "--no-progress").returncode == 0
    # The record of the call stays, and so does what else the line proves.
    log = json.loads(gs(root, "log", "--json").stdout)
    purged = next(e for e in log if e["op"] and e["op"]["id"] == write["op"]["id"])
    assert purged["op"]["args"]["content"] == {"$purged": len(json.dumps(SECRET + "\n"))}
    assert by_line(root, "HEAD", "src/kept.py") == {"k = 1": "agent:Write"}
    # And recording never takes it again.
    (root / ".env").write_text(SECRET + "\n")
    agent_writes(root, "src/other.py", "o = 1\n", "toolu_o")
    assert ".env" not in person(root, "ls-tree", "-r", "--name-only",
                                "refs/gitspace/lines/main").stdout


def test_a_secret_the_person_committed_stays_theirs_and_purge_says_so(tmp_path: Path) -> None:
    root = checkout(tmp_path)
    agent_writes(root, ".env", SECRET + "\n", "toolu_env")
    person(root, "add", ".env")
    person(root, "commit", "-q", "-m", "oops")
    done = gs(root, "purge", ".env")
    assert "still in your own history" in done.stdout and "git filter-repo" in done.stdout
    assert person(root, "show", "HEAD:.env").stdout == SECRET + "\n"  # never theirs rewritten


def test_purge_refuses_what_is_no_path_of_the_work_tree(tmp_path: Path) -> None:
    root = checkout(tmp_path)
    for bad in ("../x", ".git/config", "/"):
        done = gs(root, "purge", bad, check=False)
        assert done.returncode == 1 and "Traceback" not in done.stderr, bad
