"""The sample maze, driven only through its workspace scripts (look, move) as an agent would.

The depth-first explorer below is the one the sample README describes: try north, east, south,
west in that order; checkpoint on arriving at a cell with two or more unexplored openings; at a
dead end restore the latest checkpoint (modelled by writing back the position.json it saved);
drop a checkpoint once its last unexplored opening is taken. The counts it reports are the
maze's designed difficulty, so a change to the map or to the scripts shows up here as a number.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, SAMPLE

sys.path.insert(0, str(REPO / "benchmarks"))
import make_maze  # noqa: E402

STEP = {"north": (-1, 0), "east": (0, 1), "south": (1, 0), "west": (0, -1)}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    shutil.copytree(SAMPLE, root)
    return root


def run(ws: Path, script: str, args: dict) -> subprocess.CompletedProcess:
    env = {"PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"]),
           "LANG": "C.UTF-8", "GITSPACE_WORKSPACE": str(ws)}
    return subprocess.run([str(ws / "constraints" / script)], input=json.dumps(args), text=True,
                          capture_output=True, cwd=ws, env=env, timeout=30)


def look(ws: Path) -> tuple[tuple[int, int], list[str], bool]:
    r = run(ws, "look", {})
    assert r.returncode == 0, r.stderr
    row, col = map(int, re.search(r"row (\d+), col (\d+)", r.stdout).groups())
    doors = re.search(r"^Open: (.*)\.$", r.stdout, re.M).group(1).split(", ")
    return (row, col), doors, "This is the exit" in r.stdout


def explore(ws: Path) -> dict[str, int]:
    position = ws / "maze" / "position.json"
    visited: set[tuple[int, int]] = set()
    checkpoints: list[tuple[tuple[int, int], bytes]] = []
    counts = {"moves": 0, "checkpoints": 0, "restores": 0, "dead_ends": 0}
    while True:
        cell, doors, done = look(ws)
        visited.add(cell)
        if done:
            break
        fresh = [d for d in STEP if d in doors
                 and (cell[0] + STEP[d][0], cell[1] + STEP[d][1]) not in visited]
        here = bool(checkpoints) and checkpoints[-1][0] == cell
        if len(fresh) >= 2 and not here:
            checkpoints.append((cell, position.read_bytes()))
            counts["checkpoints"] += 1
        elif len(fresh) == 1 and here:
            checkpoints.pop()  # the last way out of this junction: nothing left to come back for
        if fresh:
            assert run(ws, "move", {"direction": fresh[0]}).returncode == 0
            counts["moves"] += 1
        else:
            counts["dead_ends"] += 1
            position.write_bytes(checkpoints[-1][1])
            counts["restores"] += 1
        assert counts["moves"] < 100, "the explorer is going round in circles"
    counts["final_path"] = json.loads(position.read_text())["moves"]
    return counts


def test_depth_first_explorer_needs_the_designed_checkpoints_and_restores(ws: Path) -> None:
    assert explore(ws) == {"final_path": 12, "moves": 20, "checkpoints": 6, "restores": 4,
                           "dead_ends": 4}
    r = run(ws, "move", {"direction": "south"})
    assert r.returncode == 1 and "already at the exit" in r.stderr


def test_the_maze_has_several_junctions_and_dead_ends() -> None:
    maze = make_maze.parse()
    sides = [bin(cell).count("1") for row in maze["open"] for cell in row]
    assert sides.count(1) == 7 and sum(1 for s in sides if s >= 3) == 5


def test_walking_into_a_wall_changes_nothing(ws: Path) -> None:
    before = (ws / "maze" / "position.json").read_bytes()
    r = run(ws, "move", {"direction": "east"})
    assert r.returncode == 1 and r.stdout == ""
    assert "wall to the east of row 4, col 3" in r.stderr
    assert "Open from here: north, west" in r.stderr
    assert (ws / "maze" / "position.json").read_bytes() == before


@pytest.mark.parametrize("args", [{}, {"direction": "up"}, {"direction": "north", "x": 1}])
def test_bad_move_arguments_exit_2(ws: Path, args: dict) -> None:
    assert run(ws, "move", args).returncode == 2


def test_look_shows_one_cell_and_never_the_map(ws: Path) -> None:
    r = run(ws, "look", {})
    assert r.stdout.splitlines() == [
        "Position: row 4, col 3 (0 moves so far).", "Open: north, west.", "Not the exit."]
    assert run(ws, "look", {"peek": True}).returncode == 2
    assert not list(ws.rglob("__pycache__")), "a read-only script left files in the work tree"


def test_map_is_binary_and_regenerates_byte_for_byte(tmp_path: Path) -> None:
    data = (SAMPLE / "maze" / "maze.bin").read_bytes()
    with pytest.raises(UnicodeDecodeError):
        data.decode("utf-8")
    make_maze.write(tmp_path)
    assert (tmp_path / "maze.bin").read_bytes() == data
    start = (SAMPLE / "maze" / "position.json").read_bytes()
    assert (tmp_path / "position.json").read_bytes() == start
    assert not [p for p in SAMPLE.rglob("*") if p.is_file() and b"#####" in p.read_bytes()]
