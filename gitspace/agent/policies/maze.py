"""The maze policy: depth-first search through ``look`` and ``move``, checkpointing junctions.

It tries north, east, south, west in that order; on arriving at a cell with two or more
unexplored openings it checkpoints (in the same reply as the move that leaves it: two parallel
tool calls); at a dead end it restores the newest junction checkpoint and looks again; a junction
whose last opening is being taken is dropped from its stack. It knows only what the tools said.
When the run asks for a value, it returns ``{escaped, row, col, checkpoints, dead_ends}`` where
it would have answered in words.
"""

from __future__ import annotations

import re

from .base import GiveUp, Policy, PolicyCall, Return, Seen

ORDER = ("north", "east", "south", "west")
STEP = {"north": (-1, 0), "east": (0, 1), "south": (1, 0), "west": (0, -1)}
WHERE = re.compile(r"Position: row (\d+), col (\d+)")
OPEN = re.compile(r"^Open: (.*)\.$", re.M)


class MazePolicy(Policy):
    name = "maze"
    tools = ("look", "move", "checkpoint", "restore")

    def initial(self) -> dict[str, object]:
        return {"visited": [], "junctions": [], "checkpoints": 0, "dead_ends": 0}

    def decide(self, task: str, seen: list[Seen]) -> list[PolicyCall] | str | Return:
        failed = [s for s in seen if s.is_error]
        if failed:
            return GiveUp(f"I stopped: {failed[0].name} failed with: "
                          f"{failed[0].text.splitlines()[0]} The workspace keeps every move so "
                          "far; restore a checkpoint to retry.")
        cell_seen = next((s for s in reversed(seen) if WHERE.search(s.text)), None)
        if cell_seen is None:
            return [PolicyCall("look", {})]
        return self._from(cell_seen.text)

    def _from(self, text: str) -> list[PolicyCall] | str | Return:
        notes = self.notes
        found = WHERE.search(text)
        doors_line = OPEN.search(text)
        assert found and doors_line
        cell = [int(found.group(1)), int(found.group(2))]
        doors = [d.strip() for d in doors_line.group(1).split(",")]
        if cell not in notes["visited"]:
            notes["visited"].append(cell)
        if "This is the exit" in text:
            return self.finish(
                f"I escaped the maze at row {cell[0]}, col {cell[1]}, after "
                f"{notes['checkpoints']} checkpoints and {notes['dead_ends']} dead ends.",
                {"escaped": True, "row": cell[0], "col": cell[1],
                 "checkpoints": notes["checkpoints"], "dead_ends": notes["dead_ends"]})
        fresh = [d for d in ORDER if d in doors
                 and [cell[0] + STEP[d][0], cell[1] + STEP[d][1]] not in notes["visited"]]
        junctions = notes["junctions"]
        here = bool(junctions) and junctions[-1]["cell"] == cell
        calls = []
        if len(fresh) >= 2 and not here:
            notes["checkpoints"] += 1
            name = f"junction-{notes['checkpoints']}" + (f"-{self.tag}" if self.tag else "")
            junctions.append({"cell": cell, "name": name})
            calls.append(PolicyCall("checkpoint", {"name": name,
                                             "message": f"junction at row {cell[0]}, col {cell[1]}"}))
        elif len(fresh) == 1 and here:
            junctions.pop()  # its last unexplored opening: nothing left to come back for
        if fresh:
            return [*calls, PolicyCall("move", {"direction": fresh[0]})]
        if not junctions:
            return GiveUp("I explored every opening without finding the exit.")
        notes["dead_ends"] += 1
        return [PolicyCall("restore", {"name": junctions[-1]["name"]}), PolicyCall("look", {})]
