"""A fleet on one branch: four clones, 25 ops each, running at once, each with the rounds of
``sync --watch`` after every op (tests/fleet_agent.py), against one real git server
(tests/gitserver.py): ``git daemon`` up throughout, and each of ``git daemon`` and the smart-HTTP
host (basic auth, a protected branch) stopped and restarted in the middle.

What must hold at the end: every op is on the remote branch exactly once (counted by op id), the
remote branch replays clean, every clone has the remote's tree after a final sync, ``git fsck
--strict`` passes on the server, and the server's reflog shows no forced update.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from conftest import assert_clean, git
from fleet import assert_never_forced, machine, ops_of, seed
from fleet_agent import op_for
from gitserver import GitServer

import gitspace
from gitspace.replay.engine import replay
from gitspace.team.sync import SyncBusy, sync

AGENT = Path(__file__).resolve().parents[1] / "fleet_agent.py"  # a helper in tests/
CLONES = 4
OPS = 25
TIMEOUT = 300


def run_fleet(tmp_path: Path, server: GitServer, outage: bool) -> dict[str, list[dict[str, object]]]:
    """Start the fleet, optionally take the server down mid-run, and return each member's lines."""
    seed(tmp_path, server).close()
    roots = []
    for n in range(1, CLONES + 1):
        ws = machine(tmp_path, server, n)
        roots.append(ws.root)
        ws.close()
    go = tmp_path / "go"
    members = [subprocess.Popen([sys.executable, str(AGENT), str(root), f"agent-{n}", str(n),
                                 str(OPS), str(go)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
               for n, root in enumerate(roots, 1)]
    go.touch()
    try:
        if outage:
            _outage_midway(server, members)
        outputs = {}
        for n, member in enumerate(members, 1):
            out, err = member.communicate(timeout=TIMEOUT)
            assert member.returncode == 0, f"member {n} failed:\n{err.decode()}"
            outputs[f"agent-{n}"] = [json.loads(line) for line in out.decode().splitlines()]
    finally:
        for member in members:
            if member.poll() is None:
                member.kill()
                member.wait()
    return outputs


def _outage_midway(server: GitServer, members: list[subprocess.Popen[bytes]]) -> None:
    """Stop the server once a tenth of the ops reached it, for a second, then start it again
    (the members keep making ops meanwhile: their syncs find it down)."""
    deadline = time.monotonic() + TIMEOUT
    while len(ops_of(server.path("fleet"))) < CLONES * OPS // 10:
        assert time.monotonic() < deadline, "the fleet made no progress"
        time.sleep(0.05)
    assert any(m.poll() is None for m in members), "the fleet ended before the outage"
    server.stop()
    time.sleep(1.0)
    server.start()


def check_fleet(tmp_path: Path, server: GitServer,
                outputs: dict[str, list[dict[str, object]]]) -> Counter[str]:
    made = [line["op"] for lines in outputs.values() for line in lines if "op" in line]
    assert len(made) == CLONES * OPS and len(set(made)) == CLONES * OPS
    clones = [gitspace.open(tmp_path / f"m{n}", agent=f"agent-{n}")
              for n in range(1, CLONES + 1)]
    try:
        for ws in clones:  # the final sync: whatever is still queued goes out
            for _ in range(5):
                try:
                    sync(ws)
                    break
                except SyncBusy:
                    continue
        for ws in clones:  # and every clone catches up with the last one's ops
            sync(ws)
        on_remote = Counter(op.op_id for op in ops_of(server.path("fleet")))
        assert all(on_remote[op] == 1 for op in made), \
            [op for op in made if on_remote[op] != 1]
        assert sum(on_remote.values()) == CLONES * OPS + 3  # + init and the two seed ops
        tree = server.git("fleet", "rev-parse", "refs/heads/main^{tree}")
        for ws in clones:
            assert git(ws.root, "rev-parse", "HEAD^{tree}") == tree
            assert_clean(ws.root)
        report = replay(clones[0], clones[0].tip())
        assert report.ok, report.divergence
        assert report.reexecuted == CLONES * OPS + 2
        # What the ops mean survived their rebases: each member's last board value, every line.
        board = (clones[0].root / "shared/board.md").read_text()
        log = (clones[0].root / "shared/log.md").read_text().splitlines()
        for n in range(1, CLONES + 1):
            last = max(k for k in range(OPS) if op_for(n, k)[0] == "str_replace")
            assert f"slot-{n}: v{last}\n" in board
            appended = [op_for(n, k)[1]["text"] for k in range(OPS) if op_for(n, k)[0] == "append"]
            assert [line + "\n" for line in log if line.startswith(f"clone {n} ")] == appended
    finally:
        for ws in clones:
            ws.close()
    # (Pushes that lost a race leave dangling objects on the server: git keeps them until gc.)
    assert server.git("fleet", "fsck", "--strict", "--no-progress", "--no-dangling") == ""
    assert_never_forced(server)
    return Counter(str(line["round"]) for lines in outputs.values() for line in lines
                   if "round" in line)


def test_four_clones_share_one_branch(tmp_path: Path, git_server: GitServer) -> None:
    outcomes = check_fleet(tmp_path, git_server, run_fleet(tmp_path, git_server, outage=False))
    assert outcomes["synced"] > 0 and outcomes["offline"] == 0


def test_the_server_stops_and_restarts_in_the_middle(tmp_path: Path,
                                                     any_server: GitServer) -> None:
    outcomes = check_fleet(tmp_path, any_server, run_fleet(tmp_path, any_server, outage=True))
    assert outcomes["offline"] > 0, "no sync ran while the server was down"
