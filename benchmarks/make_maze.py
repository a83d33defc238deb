"""The sample workspace's maze: its readable source, and the writer of the unreadable copy.

Invariant: the readable map lives only here. The workspace gets ``maze/maze.bin`` (zlib-compressed
JSON, which a text viewer refuses as binary) and ``maze/position.json`` (where the walker stands),
so an agent in the workspace can learn the maze only through the ``look`` and ``move`` scripts.

Map legend: ``#`` wall, space open, ``S`` start, ``E`` exit. Cells sit at odd (row, column)
character positions; the character between two cells is the wall or the passage between them.

A depth-first explorer trying north, east, south, west in that order, checkpointing at every cell
with two or more unexplored openings and restoring the latest checkpoint at every dead end, escapes
with 12 moves on its final path after 6 checkpoints, 4 dead ends and 4 restores (20 moves in all).
tests/tools/test_maze.py replays exactly that search through the scripts.

    python benchmarks/make_maze.py sample_workspace/maze
"""

from __future__ import annotations

import json
import sys
import zlib
from pathlib import Path

MAP = """\
#############
#   #     #E#
### # ### # #
# #   # #   #
# ##### ### #
#           #
# ###########
#   #       #
### ### ### #
#      S#   #
#############
"""

# Bit per open side: the encoding _maze.py in the workspace decodes.
SIDES = {"north": (1, -1, 0), "east": (2, 0, 1), "south": (4, 1, 0), "west": (8, 0, -1)}


def parse(text: str = MAP) -> dict:
    """Rows, columns, start, exit and a bitmask of open sides per cell."""
    grid = text.splitlines()
    rows, cols = (len(grid) - 1) // 2, (len(grid[0]) - 1) // 2
    cells = [[0] * cols for _ in range(rows)]
    marks: dict[str, list[int]] = {}
    for r in range(rows):
        for c in range(cols):
            y, x = 2 * r + 1, 2 * c + 1
            if grid[y][x] in "SE":
                marks[grid[y][x]] = [r, c]
            for bit, dy, dx in SIDES.values():
                if grid[y + dy][x + dx] != "#":
                    cells[r][c] |= bit
    return {"format": 1, "rows": rows, "cols": cols, "start": marks["S"], "exit": marks["E"],
            "open": cells}


def write(folder: Path) -> None:
    maze = parse()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "maze.bin").write_bytes(zlib.compress(json.dumps(maze).encode(), 9))
    row, col = maze["start"]
    (folder / "position.json").write_text(json.dumps({"row": row, "col": col, "moves": 0}) + "\n")


if __name__ == "__main__":
    write(Path(sys.argv[1] if len(sys.argv) > 1 else "sample_workspace/maze"))
