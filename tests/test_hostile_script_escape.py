"""Nothing a constraint script starts outlives the call, however it detaches.

Real scripts leave real processes behind: a ``setsid`` loop, a double-forked daemon with its
pipes closed, a daemon that waits until the call has returned before it writes, a swarm of
children. After the call returns, each must be dead (its pid gone) and nothing may be written
any more, whether the script timed out or exited normally.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from conftest import head
from hostile import Outside, sealed

import gitspace

HEADER = """# ---gitspace---
# name: {name}
# description: A script that leaves processes behind; use it in tests.
# example: {{}}
# mutates: {mutates}
# args: {{"type": "object", "properties": {{}}, "additionalProperties": false}}
# timeout: 1
# ---
"""

def _daemon(work: str) -> str:
    """A Python script body that double-forks a daemon (a new session, its pipes closed), which
    records its pid and then does ``work`` (code indented for the daemon's block)."""
    return """
import os, sys, time
probe = os.environ["PROBE"]
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for fd in range(3):
            os.close(fd)
        with open(f"{probe}/pids", "a") as f:
            f.write(f"{os.getpid()}\\n")""" + work + """
        os._exit(0)
    os._exit(0)
time.sleep(0.3)
print("started")
"""


# Each body writes the pid of what it left behind to $PROBE/pids and makes it append to
# $PROBE/beat while alive (or write $PROBE/late once, after a delay).
DETACH = {
    "setsid_loop": ("sh", """
setsid sh -c 'echo $$ >> "$PROBE/pids"; while :; do echo x >> "$PROBE/beat"; sleep 0.05; done' \\
  > /dev/null 2>&1 < /dev/null &
sleep 0.3
echo started
"""),
    "double_fork": ("py", _daemon("""
        while True:
            with open(f"{probe}/beat", "a") as f:
                f.write("x\\n")
            time.sleep(0.05)""")),
    "late_daemon": ("py", _daemon("""
        time.sleep(0.6)  # long after the call returned
        with open(f"{probe}/late", "w") as f:
            f.write("written after the call\\n")""")),
    "swarm": ("sh", """
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
  ( setsid sh -c 'echo $$ >> "$PROBE/pids"; while :; do echo x >> "$PROBE/beat"; sleep 0.1; done' \\
    > /dev/null 2>&1 < /dev/null & ) &
done
sleep 0.3
echo started
"""),
}


def _write(folder: Path, name: str, kind: str, body: str, *, mutates: bool, wait: bool,
           probe: Path) -> None:
    header = HEADER.format(name=name, mutates="true" if mutates else "false")
    tail = "sleep 30\n" if wait and kind == "sh" else "time.sleep(30)\n" if wait else ""
    if kind == "sh":
        text = "#!/bin/sh\n" + header + f"PROBE={probe}\nexport PROBE\n" + body + tail
    else:
        text = ("#!/usr/bin/env python3\n" + header + "import os\n"
                f"os.environ['PROBE'] = {str(probe)!r}\n" + body + tail)
    path = folder / f"{name}.{kind}"
    path.write_text(text)
    path.chmod(0o755)


@pytest.fixture
def scene(tmp_path: Path) -> tuple[gitspace.Workspace, Path, Outside]:
    root = tmp_path / "ws"
    probe = tmp_path / "probe"
    probe.mkdir()
    folder = root / "constraints"
    folder.mkdir(parents=True)
    for name, (kind, body) in DETACH.items():
        _write(folder, f"{name}_timeout", kind, body, mutates=False, wait=True, probe=probe)
        _write(folder, f"{name}_exit", kind, body, mutates=False, wait=False, probe=probe)
        _write(folder, f"{name}_mutating", kind, body, mutates=True, wait=False, probe=probe)
    ws = gitspace.init(root, agent="tester")
    yield ws, probe, Outside(tmp_path / "outside")
    ws.close()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _left_nothing_running(probe: Path) -> None:
    pids = [int(p) for p in (probe / "pids").read_text().split()] if (probe / "pids").exists() else []
    assert pids, "the script started nothing: the test proves nothing"
    alive = [p for p in pids if _alive(p)]
    assert not alive, f"processes the script started are still running: {alive}"
    beat = (probe / "beat").stat().st_size if (probe / "beat").exists() else 0
    late = (probe / "late").exists()  # (a daemon may write during a call that then times out)
    time.sleep(0.9)  # longer than the late daemon waits, and many heartbeats
    assert (probe / "late").exists() == late, "a daemon wrote after the call returned"
    after = (probe / "beat").stat().st_size if (probe / "beat").exists() else 0
    assert after == beat, "something the script left kept writing after the call returned"


@pytest.mark.parametrize("name", sorted(DETACH))
@pytest.mark.parametrize("ending", ["timeout", "exit", "mutating"])
def test_nothing_the_script_started_outlives_the_call(
        scene: tuple[gitspace.Workspace, Path, Outside], name: str, ending: str) -> None:
    ws, probe, outside = scene
    tip = head(ws.root)
    with sealed(ws.root, outside):
        started = time.monotonic()
        result = ws.call(f"{name}_{ending}", {})
        took = time.monotonic() - started
        if ending == "timeout":
            assert not result.ok and "timed out after 1 s" in result.text
        else:
            assert result.ok and (result.text.strip() == "started" or result.unchanged), result.text
        assert took < 20  # (a wedged supervisor would have shown here)
        _left_nothing_running(probe)
    assert head(ws.root) == tip


def test_a_daemon_cannot_change_the_workspace_after_a_read_only_call(
        scene: tuple[gitspace.Workspace, Path, Outside]) -> None:
    """The read-only check runs after the script exits; a daemon writing later would slip past
    it, so no daemon may be left to write."""
    ws, probe, outside = scene
    folder = ws.root / "constraints"
    body = DETACH["late_daemon"][1].replace('f"{probe}/late"', '"sneaked.txt"')
    _write(folder, "sneak", "py", body, mutates=False, wait=False, probe=probe)
    assert ws.snapshot().ok
    with sealed(ws.root, outside):
        assert ws.call("sneak", {}).ok
        time.sleep(0.9)
        assert not (ws.root / "sneaked.txt").exists()
    assert os.listdir(probe) == ["pids"]
