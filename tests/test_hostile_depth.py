"""Depth and size bounds at every parser of untrusted structure, checked before any recursion.

Each of these crashed a command with a RecursionError or an OverflowError (exit 3): trailer args
nested 100,000 deep (``verify``, ``replay``, ``log``, ``show``); a tree 3,000 folders deep
(``replay`` and ``switch``, before the path policy looked); a ``$ref`` chain and a value each
within the documented limits (``run --returns``); a pace file holding a huge integer (every
``sync``); and state files nested deep or holding such numbers. The bounds are
``storage/bounds.py``'s, stated in docs/trust.md. Every scenario ends sealed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git, head
from fake_anthropic import FakeAnthropic, tool_use
from hostile import cli, commit, drop, expected_failure, fsck, sealed, status, workspace

DEEP = 100_000
OP_ID = "01ARZ3NDEKTSV4RRFFQ69G5FAV"


def _op_message(args: str, *, harness_paths: str | None = None) -> str:
    lines = ["Gitspace-Format: 2" if harness_paths else "Gitspace-Format: 1",
             f"Gitspace-Op: {OP_ID}", "Gitspace-Tool: " + ("Write" if harness_paths else "create"),
             "Gitspace-Source: " + ("harness" if harness_paths else "tool"),
             f"Gitspace-Args: {args}"]
    if harness_paths:
        lines += ["Gitspace-Agent: claude-code", f"Gitspace-Paths: {harness_paths}"]
    return "a forged op\n\n" + "\n".join(lines) + "\n"


@pytest.mark.parametrize("where", ["args", "paths"])
def test_trailer_json_nested_deep_is_malformed_in_verify_replay_log_and_show(
        tmp_path: Path, where: str) -> None:
    deep = "[" * DEEP + "]" * DEEP
    with workspace(tmp_path, {"a.txt": "a\n"}) as (ws, outside):
        assert ws.call("create", {"path": "b.txt", "file_text": "b\n"}).ok
        message = _op_message(f'{{"a":{deep}}}') if where == "args" else _op_message(
            '{"file_path":"c.txt"}', harness_paths=f'{{"count":1,"paths":{deep}}}')
        forged = commit(ws.root, head(ws.root), {"c.txt": "c\n"}, message)
        git(ws.root, "update-ref", "refs/heads/forged", forged)
        says = "nests more than 100 levels deep" if where == "args" else \
            "Gitspace-Paths is not a canonical"
        with sealed(ws.root, outside):
            verify = cli(ws.root, "verify", "forged")
            assert verify.returncode == 1 and "Traceback" not in verify.stderr, verify.stderr
            assert says in verify.stdout, verify.stdout
            replay = cli(ws.root, "replay", "forged", "--json")
            assert replay.returncode == 1, replay.stderr
            divergence = json.loads(replay.stdout)["divergence"]
            assert divergence["commit"] == forged and says in divergence["reason"]
            for command in (["log", "forged"], ["log", "forged", "--json"]):
                shown = cli(ws.root, *command)
                assert shown.returncode == 0, (command, shown.stderr)
                assert says in shown.stdout, (command, shown.stdout)
            shown = cli(ws.root, "show", "forged")
            assert shown.returncode == 0 and "a forged op" in shown.stdout, shown.stderr
        drop(ws.root, "refs/heads/forged")


def _deep_tree(root: Path, folders: int) -> str:
    """A commit on HEAD adding ``deep/d/d/.../f``, ``folders`` folders below ``deep``."""
    def mktree(entry: str) -> str:
        return subprocess.run(["git", "mktree"], cwd=root, input=entry.encode(), check=True,
                              capture_output=True).stdout.decode().strip()

    blob = git(root, "hash-object", "-w", "--stdin", input=b"deep down\n").strip()
    sha = mktree(f"100644 blob {blob}\tf\n")
    for _ in range(folders):
        sha = mktree(f"040000 tree {sha}\td\n")
    top = git(root, "ls-tree", "HEAD").strip() + f"\n040000 tree {sha}\tdeep\n"
    tree = mktree(top)
    return commit(root, head(root), {}, "a tree thousands of folders deep\n", tree_sha=tree)


def test_a_tree_thousands_of_folders_deep_is_refused_before_any_walk_recurses(
        tmp_path: Path) -> None:
    with workspace(tmp_path, {"a.txt": "a\n"}) as (ws, outside):
        deep = _deep_tree(ws.root, 3000)
        git(ws.root, "update-ref", "refs/heads/deep", deep)
        ws.close()
        before = head(ws.root)
        with sealed(ws.root, outside):
            replay = cli(ws.root, "replay", "deep", "--json")
            assert replay.returncode == 1, replay.stderr
            reason = json.loads(replay.stdout)["divergence"]["reason"]
            assert "more than 64 folders deep" in reason, reason
            switch = cli(ws.root, "switch", "deep")
            expected_failure(switch)
            assert "more than 64 folders deep" in switch.stderr, switch.stderr
            restore = cli(ws.root, "restore", deep)
            expected_failure(restore)
            assert head(ws.root) == before and git(ws.root, "symbolic-ref", "HEAD").strip() \
                == "refs/heads/main"
        drop(ws.root, "refs/heads/deep")


def test_a_tree_at_the_policys_depth_still_checks_out(tmp_path: Path) -> None:
    with workspace(tmp_path, {"a.txt": "a\n"}) as (ws, outside):
        ok = _deep_tree(ws.root, 62)  # deep/ + 62 folders + f: 64 parts, the policy's limit
        git(ws.root, "update-ref", "refs/heads/ok", ok)
        ws.close()
        with sealed(ws.root, outside):
            assert cli(ws.root, "replay", "ok").returncode == 0
        assert cli(ws.root, "switch", "ok").returncode == 0
        assert (ws.root / "deep" / "/".join(["d"] * 62) / "f").read_text() == "deep down\n"
        fsck(ws.root)
        assert status(ws.root) == ""


def _chained_schema(hops: int) -> dict[str, object]:
    """A value schema reached through ``hops`` $refs, recursive through its items."""
    defs: dict[str, object] = {f"d{i}": {"$ref": f"#/$defs/d{i + 1}"} for i in range(hops)}
    defs[f"d{hops}"] = {"type": ["array", "integer"], "items": {"$ref": "#"}}
    return {"$ref": "#/$defs/d0", "$defs": defs}


def _nested(levels: int, leaf: object = 1) -> object:
    value = leaf
    for _ in range(levels):
        value = [value]
    return value


def test_run_returns_with_a_ref_chain_and_a_value_at_their_limits(
        tmp_path: Path, fake_api: FakeAnthropic) -> None:
    with workspace(tmp_path, {"a.txt": "a\n"}) as (ws, outside):
        ws.close()
        schema = tmp_path / "returns.json"
        schema.write_text(json.dumps(_chained_schema(31)))
        value = _nested(31)
        fake_api.reply(tool_use("toolu_1", "return", {"value": value}), stop_reason="tool_use")
        env = {**os.environ, "ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL":
               fake_api.base_url}
        env.pop("GITSPACE_AGENT", None)
        with sealed(ws.root, outside):
            run = subprocess.run([sys.executable, "-m", "gitspace", "-C", str(ws.root), "run",
                                  "nest it", "--returns", str(schema), "--model", "fake-model"],
                                 capture_output=True, text=True, env=env, timeout=120)
            fake_api.done()
            assert run.returncode == 0, run.stderr
            assert json.loads(run.stdout) == value


def _synced(tmp_path: Path) -> Path:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "--initial-branch=main", str(remote))
    return remote


@pytest.mark.parametrize("value", ["1" + "0" * 400, "9" * 4000, "1e999", "-1" + "0" * 30])
def test_a_pace_file_with_a_huge_number_never_stops_sync(tmp_path: Path, value: str) -> None:
    with workspace(tmp_path, {"a.txt": "a\n"}) as (ws, outside):
        remote = _synced(tmp_path)
        git(ws.root, "remote", "add", "origin", str(remote))
        ws.close()
        assert cli(ws.root, "sync").returncode == 0
        pace = ws.root / ".git" / "gitspace" / "sync-pace.json"
        for field in ("won_at", "round_s", "lost", "seen_since", "cycle"):
            pace.write_text(f'{{"origin/main": {{"owed": false, "won_at": 1.0, "{field}": '
                            f"{value}}}}}")
            with sealed(ws.root, outside):
                (ws.root / "a.txt").write_text(f"a, then {field}\n")
                assert cli(ws.root, "snapshot").returncode == 0
                synced = cli(ws.root, "sync")
                assert synced.returncode == 0, (field, synced.stderr)
                assert git(ws.root, "rev-parse", "HEAD").strip() == \
                    git(ws.root, "--git-dir", str(remote), "rev-parse", "main").strip()


DEEP_JSON = "[" * DEEP + "]" * DEEP
HUGE = '{"since": ' + "9" * 4000 + "}"


@pytest.mark.parametrize("text", [DEEP_JSON, HUGE], ids=["deep", "huge"])
@pytest.mark.parametrize("rel,command", [
    ("journal.json", ["snapshot"]),
    ("merge.json", ["merge", "side"]),
])
def test_a_state_file_nested_deep_or_holding_a_huge_number_never_crashes_a_command(
        tmp_path: Path, rel: str, command: list[str], text: str) -> None:
    with workspace(tmp_path, {"a.txt": "a\n"}) as (ws, outside):
        assert ws.call("branch", {"name": "side", "switch": False}).ok
        ws.close()
        path = ws.root / ".git" / "gitspace" / rel
        path.write_text(text)
        with sealed(ws.root, outside):
            proc = cli(ws.root, *command)
            assert proc.returncode in (0, 1), (proc.returncode, proc.stderr)
            assert "Traceback" not in proc.stderr and "hit a bug" not in proc.stderr, proc.stderr
            if proc.returncode == 1:
                assert "hint" in proc.stderr.lower(), proc.stderr
            if path.exists():
                path.unlink()  # (the scenario's own plant: what the closing checks look for)


@pytest.mark.parametrize("text", [DEEP_JSON, HUGE], ids=["deep", "huge"])
def test_a_session_file_nested_deep_is_damaged_not_a_crash(tmp_path: Path, text: str) -> None:
    with workspace(tmp_path, {"a.txt": "a\n"}) as (ws, outside):
        ws.close()
        folder = ws.root / ".gitspace" / "sessions"
        folder.mkdir(parents=True, exist_ok=True)
        sid = "01ARZ3NDEKTSV4RRFFQ69G5FAV"
        (folder / f"{sid}.jsonl").write_text(text + "\n")
        with sealed(ws.root, outside):
            listed = cli(ws.root, "sessions")
            assert listed.returncode == 0, listed.stderr
            shown = cli(ws.root, "sessions", "show", sid)
            assert shown.returncode in (0, 1) and "hit a bug" not in shown.stderr, shown.stderr
