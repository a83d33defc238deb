"""Shared by look and move: reading the hidden maze and the walker's position.

Invariant: nothing here ever prints or returns the map; callers get only the current cell's open
directions. The map is maze/maze.bin (zlib-compressed JSON: a bitmask of open sides per cell,
north=1 east=2 south=4 west=8); the position is maze/position.json, {"row", "col", "moves"}.
"""

from __future__ import annotations

import json
import os
import sys
import zlib
from typing import NoReturn

MAP_FILE = os.path.join("maze", "maze.bin")
POSITION_FILE = os.path.join("maze", "position.json")
DIRECTIONS = {"north": (1, -1, 0), "east": (2, 0, 1), "south": (4, 1, 0), "west": (8, 0, -1)}


def fail(code: int, message: str) -> NoReturn:
    sys.stderr.write(message + "\n")
    sys.exit(code)


def load_maze() -> dict:
    try:
        with open(MAP_FILE, "rb") as f:
            return json.loads(zlib.decompress(f.read()))
    except (OSError, zlib.error, ValueError):
        fail(1, f"{MAP_FILE} is missing or damaged; restore it from a checkpoint or from git.")


def load_position(maze: dict) -> dict:
    try:
        with open(POSITION_FILE, encoding="utf-8") as f:
            pos = json.load(f)
        r, c, n = pos["row"], pos["col"], pos["moves"]
        if not (0 <= r < maze["rows"] and 0 <= c < maze["cols"] and isinstance(n, int)):
            raise ValueError
    except (OSError, ValueError, KeyError, TypeError):
        fail(1, f"{POSITION_FILE} is missing or damaged; restore a checkpoint to get it back.")
    return pos


def save_position(pos: dict) -> None:
    tmp = POSITION_FILE + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(json.dumps({"row": pos["row"], "col": pos["col"], "moves": pos["moves"]}) + "\n")
    os.replace(tmp, POSITION_FILE)  # a crash leaves the old position or the new, never half


def open_directions(maze: dict, pos: dict) -> list[str]:
    cell = maze["open"][pos["row"]][pos["col"]]
    return [name for name, (bit, _, _) in DIRECTIONS.items() if cell & bit]


def at_exit(maze: dict, pos: dict) -> bool:
    return [pos["row"], pos["col"]] == maze["exit"]


def describe(maze: dict, pos: dict) -> str:
    n = pos["moves"]
    moves = f"{n} move{'' if n == 1 else 's'} so far"
    where = f"Position: row {pos['row']}, col {pos['col']} ({moves})."
    doors = f"Open: {', '.join(open_directions(maze, pos)) or 'none'}."
    if at_exit(maze, pos):
        return f"{where}\n{doors}\nThis is the exit: you have escaped the maze."
    return f"{where}\n{doors}\nNot the exit."


def read_args() -> dict:
    raw = sys.stdin.read() if not sys.stdin.isatty() else ""
    try:
        args = json.loads(raw) if raw.strip() else {}
    except ValueError:
        fail(2, "Arguments must be one JSON object on stdin, e.g. {\"direction\": \"north\"}.")
    if not isinstance(args, dict):
        fail(2, "Arguments must be a JSON object, e.g. {\"direction\": \"north\"}.")
    return args
