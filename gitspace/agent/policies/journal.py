"""The journal policy: summarise a worklog of any size chunk by chunk, into a tree of summaries.

It knows only what the tools said. The worklog is the one the task names (a ``.jsonl`` file, or a
folder written with or without its final slash); when the task names none, ``peek`` without a
path lists the workspace's worklogs and the largest is read. ``peek`` on it gives the entry
count, the first and last entry and "about N days (hours, minutes) hold 100 entries"; the policy
then reads ``range`` windows [start, end) from midnight of the first day until past the last
entry, each starting where the one before ended, so every entry is in exactly one window. Each
window read writes one chunk summary, sent in the same reply as the next ``range``; chunk
summaries roll up into period summaries as they fill (``journal_tree``), and at the end
``summaries/index.md`` lists the top of the tree. Then it marks its two plan steps done and
leaves a note in ``/memories/journal.md`` (replacing an earlier run's note: delete, then create).

Windows: the first is peek's width. Each asks range for at most LIMIT entries, twice what it
aims at, so a busier stretch than the last is read rather than refused (range keeps any answer
within its output budget). After a window is read, the next aims at AIM entries at the
density just seen, rounded down to whole days, hours or minutes, at most twice as wide as the
last (an empty window makes the next twice as wide) and never wider than WIDEST times peek's. A
refused window is narrowed to the one the refusal suggests ("e.g. start X end Y"), or from the
count it gives; a window that no narrower window of whole minutes fits is read by entry count
(range's ``skip``), one chunk per page. A tool still indexing a first read ("call this tool
again") is called again.

State: the notes hold scalars, the current window and the tree's open levels (``journal_tree``:
bounded), never a list that grows with the log, so a step costs the same at the millionth entry
as at the first. Any failure other than a refused ``range`` ends the run with an answer that
names it.
"""

from __future__ import annotations

import re
from typing import Any

from ... import progress
from ...errors import BadArguments, GitspaceError
from . import journal_calls as calls
from . import journal_tree as tree
from .base import GiveUp, Policy, PolicyCall, Return, Seen
from .journal_tree import DAY_US, HOUR_US, INDEX, MINUTE_US, NOTABLE, bound, span

MEMORY = "/memories/journal.md"
STEPS = ("Summarise the journal chunk by chunk, one file per chunk",
         "Write the synthesis that indexes the chunk summaries")
AIM = 90  # entries per window, on average
LIMIT = 200  # range's largest limit: a busier window than aimed at is read, not refused
WIDEST = 8  # no window wider than this many times peek's width
RETRIES = 1_000  # calls again while a first read is indexed (each call reads on)
NOTABLE_KEPT = 20  # notable lines a child keeps over the pages of its window

# A worklog in the task: a .jsonl file, or a folder path (with a slash inside or at its end).
LOG_PATH = re.compile(r"(?<![\w./-])(?:[\w.-]+/)*[\w.-]+\.jsonl\b|(?<![\w./-])[\w.-]+(?:/[\w.-]+)+/?"
                      r"|(?<![\w./-])[\w.-]+/(?![\w.-])")
COUNT = re.compile(r"([\d,]+) entr(?:y|ies)\b")
EARLIEST = re.compile(r"^earliest:\s+(\S+)", re.M)
LATEST = re.compile(r"^latest:\s+(\S+)", re.M)
WIDTH = re.compile(r"about ([\d,]+) (day|hour|minute)s? hold")
LISTED = re.compile(r"^- (\S+): (?:segmented log folder|JSON Lines file)", re.M)
HEADER = re.compile(r"^([\d,]+) entr(?:y|ies) in the slice", re.M)
PAGE = re.compile(r"^Entries (\d+) to (\d+) of (\d+) in the slice", re.M)
ENTRY = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d) \[([^\]]*)\](?: \(([^)]*)\))? (.*)$", re.M)
SUGGESTED = re.compile(r"e\.g\. start (\S+) end (\S+?),")
HOLDS = re.compile(r"holds ([\d,]+) entries")
ADDED = re.compile(r"Added step (\d+)")
UNITS = {"day": DAY_US, "hour": HOUR_US, "minute": MINUTE_US}


class JournalPolicy(Policy):
    name = "journal"
    tools = ("peek", "range", "create", "plan_add", "plan_done", "memory")

    def __init__(self, fanout: int = tree.FANOUT, *, nested: bool = False) -> None:
        if fanout < 2:
            raise BadArguments(f"fanout {fanout} is too small: a summary lists at least two parts.",
                               hint=f"Use the default, {tree.FANOUT}, or any number from 2.")
        self.fanout, self.nested = fanout, nested
        self.name = "journal-nested" if nested else "journal"
        super().__init__()

    def child(self) -> JournalPolicy:
        """A fresh player for a delegated child (``delegate`` asks for one)."""
        return JournalPolicy(self.fanout, nested=self.nested)

    def initial(self) -> dict[str, Any]:
        return {"fanout": self.fanout, "nested": self.nested, "leaf": None, "phase": "start",
                "path": "", "count": 0, "first": 0, "last": 0, "peek_width": DAY_US,
                "width": DAY_US, "start": 0, "end": 0, "skip": None, "page": 0, "steps": [],
                "levels": [], "depth": 0, "entries": 0, "chunks": 0, "nodes": 0, "refused": 0,
                "reads": 0, "retries": 0, "narrowest": 0, "widest": 0, "busiest": None,
                "top": []}

    def load_state(self, state: dict[str, Any]) -> None:
        if "notes" in state and set(self.initial()) - set(state["notes"]):
            raise GitspaceError("This session was started by an older journal policy, whose notes "
                                "this one cannot carry on.",
                                hint="Start a new run; the summaries it wrote are in the git log.")
        super().load_state(state)

    def decide(self, task: str, seen: list[Seen]) -> list[PolicyCall] | str | Return:
        n = self.notes
        again = [PolicyCall(s.name, s.input) for s in seen if _indexing(s)]
        if again and n["retries"] < RETRIES:
            n["retries"] += 1
            return again
        failed = next((s for s in seen if s.is_error and not _refused(s)), None)
        if failed is not None and n["phase"] == "memory" and "already exists" in failed.text:
            n["phase"] = "rewrite"  # an earlier run's note: this run's replaces it
            return [PolicyCall("memory", {"command": "delete", "path": MEMORY}),
                    PolicyCall("memory", {"command": "create", "path": MEMORY,
                                    "file_text": self._memory()})]
        if failed is not None:
            return self._failure(failed)
        if n["leaf"] is not None:
            return self._leaf(seen)
        for s in seen:
            if s.name == "plan_add":
                added = ADDED.search(s.text)
                if added is None:
                    return GiveUp(f"I stopped: plan_add answered without a step number: "
                                  f"{_first_line(s.text)}")
                n["steps"].append(int(added.group(1)))
        return self._next(task, seen)

    def _next(self, task: str, seen: list[Seen]) -> list[PolicyCall] | str:
        n = self.notes
        phase = n["phase"]
        if phase == "start" and calls.window(task):
            path, start, end = calls.window(task) or ("", 0, 0)
            n.update(path=path, last=end - 1, leaf={"count": 0, "tags": {}, "projects": {},
                                                    "from": "", "to": "", "notable": []})
            n.update(start=start, end=end, skip=None, page=0)
            return [PolicyCall("range", {"path": path, "start": bound(start), "end": bound(end),
                                   "limit": LIMIT})]
        if phase == "start" and n["nested"] and calls.DELEGATE not in self.offered:
            return GiveUp("I cannot do this task here: the nested journal needs the delegate "
                          "tool, and this run offers none.")
        if phase == "start":
            named = _named_log(task)
            n.update(path=named, phase="peek" if named else "find")
            return [PolicyCall("peek", {"path": named} if named else {})]
        if phase == "find":
            return self._found(_text_of(seen, "peek"))
        if phase == "peek":
            return self._plan(_text_of(seen, "peek"))
        if phase == "read":
            asked = calls.DELEGATE if n["nested"] else "range"
            result = next((s for s in seen if s.name == asked), None)
            if result is None:
                return GiveUp(f"I stopped: I asked for a {asked} call and got no result for it.")
            return self._delegated(result) if n["nested"] else self._read(result)
        if phase == "last":
            n["phase"] = "index"
            return [PolicyCall("plan_done", {"step": n["steps"][0]}),
                    PolicyCall("create", {"path": INDEX, "file_text": self._synthesis()})]
        if phase == "index":
            n["phase"] = "memory"
            return [PolicyCall("plan_done", {"step": n["steps"][1]}),
                    PolicyCall("memory", {"command": "create", "path": MEMORY,
                                    "file_text": self._memory()})]
        n["phase"] = "done"
        return self._answer_text()

    # -- finding and planning -----------------------------------------------------------------

    def _found(self, view: str) -> list[PolicyCall] | str:
        listed = LISTED.findall(view)
        if not listed:
            return GiveUp("I stopped: the task names no worklog and peek found none in the "
                          f"workspace: {_first_line(view)}")
        self.notes.update(path=listed[0], phase="peek")  # peek lists the largest first
        return [PolicyCall("peek", {"path": listed[0]})]

    def _plan(self, peek: str) -> list[PolicyCall] | str:
        n = self.notes
        count, first, last = COUNT.search(peek), EARLIEST.search(peek), LATEST.search(peek)
        if not (count and first and last):
            return f"peek on {n['path']} shows no entries, so there is nothing to summarise."
        width = WIDTH.search(peek)
        peek_width = _int(width.group(1)) * UNITS[width.group(2)] if width else DAY_US
        start = tree.parse_bound(first.group(1)[:10])  # midnight of the first day
        n.update(count=_int(count.group(1)), first=tree.parse_bound(first.group(1)),
                 last=tree.parse_bound(last.group(1)), peek_width=peek_width,
                 width=_rounded(peek_width), phase="read")
        plan = [PolicyCall("plan_add", {"step": step}) for step in STEPS]
        return [*plan, self._range(start, n["width"])]

    # -- reading -------------------------------------------------------------------------------

    def _range(self, start: int, width: int) -> PolicyCall:
        n = self.notes
        end = start + width
        if end > n["last"]:  # the last window: end it on its own grid, just past the last entry
            unit = DAY_US if width % DAY_US == 0 else HOUR_US if width % HOUR_US == 0 else MINUTE_US
            end = start + ((n["last"] - start) // unit + 1) * unit
        n.update(start=start, end=end, skip=None, page=0)
        if n["nested"] and n["leaf"] is None:
            return PolicyCall(calls.DELEGATE, {"task": calls.task(n["path"], start, end),
                                         "returns": calls.VALUE})
        return PolicyCall("range", {"path": n["path"], "start": bound(start), "end": bound(end),
                              "limit": LIMIT})

    def _page(self, skip: int) -> PolicyCall:
        n = self.notes
        n.update(skip=skip, page=n["page"] + 1)
        return PolicyCall("range", {"path": n["path"], "start": bound(n["start"]),
                              "end": bound(n["end"]), "skip": skip, "limit": LIMIT})

    def _read(self, result: Seen) -> list[PolicyCall] | str:
        n = self.notes
        if _refused(result):
            n["refused"] += 1
            return self._narrowed(result.text)
        n["reads"] += 1
        page = PAGE.search(result.text) if n["skip"] is not None else None
        chunk, notable = _chunk(result.text, page)
        label = f", page {n['page']}" if n["page"] else ""
        text = tree.leaf_text(n["path"], n["start"], n["end"], chunk, notable, label)
        writes = self._write_chunk(chunk, text) if chunk["count"] else []
        if page and int(page.group(2)) < int(page.group(3)):
            return [*writes, self._page(int(page.group(2)))]
        return self._after(writes, int(page.group(3)) if page else chunk["count"])

    def _delegated(self, result: Seen) -> list[PolicyCall] | str:
        """A child's value: its window written as the chunk's summary."""
        n = self.notes
        got = calls.value(result.text, n["start"], n["end"])
        if isinstance(got, str):
            return GiveUp(f"I stopped: the child summarising {bound(n['start'])} to "
                          f"{bound(n['end'])} returned {got}")
        n["reads"] += 1
        n["end"] = got["end"]
        chunk = {"count": got["entries"], "tags": calls.counts(got["summary"], "Tags"),
                 "projects": calls.counts(got["summary"], "Projects")}
        writes = self._write_chunk(chunk, got["summary"]) if got["entries"] else []
        return self._after(writes, got["entries"])

    def _after(self, writes: list[PolicyCall], in_window: int) -> list[PolicyCall] | str:
        """The next window after one read, or the end of the tree when that was the last."""
        n = self.notes
        window = n["end"] - n["start"]
        # At the density just seen, but at most twice as wide: a quiet stretch (a night, a
        # weekend) says little about the busy one after it.
        aimed = window * AIM // in_window if in_window else window * 2
        n["width"] = _rounded(min(aimed, window * 2, n["peek_width"] * WIDEST))
        if n["end"] <= n["last"]:
            return [*writes, self._range(n["end"], n["width"])]
        if not n["chunks"]:
            return (f"peek counted {n['count']:,} entries in {n['path']}, but every range window "
                    f"from {bound(n['first'])} to {bound(n['last'])} was empty, so I wrote no "
                    "summary.")
        rolled, top, depth = tree.finish(n["levels"], n["path"], n["fanout"])
        n.update(phase="last", depth=depth, top=top, nodes=n["nodes"] + len(rolled))
        writes += [PolicyCall("create", {"path": f, "file_text": t}) for f, t in rolled]
        return writes or self._next("", [])

    def _narrowed(self, text: str) -> list[PolicyCall] | str:
        """The same start, a narrower window; by entry count when minutes are too wide."""
        n = self.notes
        window = n["end"] - n["start"]
        if "skip 0" in text:
            return [self._page(0)]
        suggested, holds = SUGGESTED.search(text), HOLDS.search(text)
        widths = [tree.parse_bound(suggested.group(2)) - n["start"]] if suggested else []
        widths += [_rounded(window * AIM // max(_int(holds.group(1)), 1))] if holds else []
        narrower = next((w for w in widths if 0 < w < window), 0)
        if not narrower:
            return GiveUp(f"I stopped: range refused the window {bound(n['start'])} to "
                          f"{bound(n['end'])} and suggested no narrower window: "
                          f"{_first_line(text)}")
        n["width"] = narrower
        return [self._range(n["start"], narrower)]

    def _write_chunk(self, chunk: dict[str, Any], text: str) -> list[PolicyCall]:
        n = self.notes
        start, end, page = n["start"], n["end"], n["page"]
        file = tree.leaf_file(start, end, page)
        width = end - start
        n.update(entries=n["entries"] + chunk["count"], chunks=n["chunks"] + 1,
                 narrowest=min(n["narrowest"] or width, width), widest=max(n["widest"], width))
        progress.report(n["entries"], n["count"] or None, "log entries summarised")
        busiest = n["busiest"]
        if busiest is None or chunk["count"] * busiest[1] > busiest[2] * width:
            n["busiest"] = [start, width, chunk["count"]]
        item = tree.part(file, start, end, chunk["count"], chunk["tags"], chunk["projects"])
        writes = tree.add(n["levels"], item, n["path"], n["fanout"])
        n["nodes"] += len(writes)
        return [PolicyCall("create", {"path": file, "file_text": text}),
                *(PolicyCall("create", {"path": f, "file_text": t}) for f, t in writes)]

    # -- a delegated child: one window, one value ----------------------------------------------

    def _leaf(self, seen: list[Seen]) -> list[PolicyCall] | str | Return:
        """Read the task's window (narrowed or paged as range asks); return what it covered."""
        n, acc = self.notes, self.notes["leaf"]
        result = next((s for s in seen if s.name == "range"), None)
        if result is None:
            return GiveUp("I stopped: I asked for a range window and got no result for it.")
        if _refused(result):
            n["refused"] += 1
            return self._narrowed(result.text)  # from its start, ending sooner
        page = PAGE.search(result.text) if n["skip"] is not None else None
        chunk, notable = _chunk(result.text, page)
        acc["count"] += chunk["count"]
        tree.add_counts(acc["tags"], chunk["tags"])
        tree.add_counts(acc["projects"], chunk["projects"])
        acc["from"] = acc["from"] or chunk["from"]
        acc["to"] = chunk["to"] or acc["to"]
        acc["notable"] = (acc["notable"] + notable)[:NOTABLE_KEPT]
        if page and int(page.group(2)) < int(page.group(3)):
            return [self._page(int(page.group(2)))]
        summary = tree.leaf_text(n["path"], n["start"], n["end"], acc, acc["notable"])
        return self.finish(
            f"{acc['count']:,} entries from {bound(n['start'])} to {bound(n['end'])}:\n{summary}",
            {"start": bound(n["start"]), "end": bound(n["end"]), "entries": acc["count"],
             "summary": summary})

    # -- finishing -----------------------------------------------------------------------------

    def _synthesis(self) -> str:
        n = self.notes
        top = n["top"]
        tags: dict[str, int] = {}
        projects: dict[str, int] = {}
        for p in top:
            tree.add_counts(tags, p["tags"])
            tree.add_counts(projects, p["projects"])
        start, width, most = n["busiest"]
        shape = ("one file per chunk" if n["depth"] == 0 else
                 f"{n['chunks']:,} chunk summaries rolled up into {n['nodes']:,} period summaries "
                 f"over {n['depth']} level{'s' if n['depth'] != 1 else ''}, at most "
                 f"{n['fanout']} parts each")
        lines = [
            f"# Journal synthesis: {n['path']}",
            "",
            f"{n['entries']:,} entries in {n['chunks']:,} chunks, {bound(n['first'])} to "
            f"{bound(n['last'])} (peek counted {n['count']:,}).",
            f"Read with range windows of {span(n['narrowest'])} to {span(n['widest'])}; "
            f"{self._how_read()}.",
            f"Busiest chunk: {bound(start)} to {bound(start + width)} ({most} entries in "
            f"{span(width)}).",
            f"The summaries form a tree: {shape}.",
            "",
            f"Tags: {tree.ranked(tags, 12)}",
            f"Projects: {tree.ranked(projects, 12) or 'none'}",
            f"Incidents: {tags.get('incident', 0):,}; deploys: {tags.get('deploy', 0):,}.",
            "",
            "## Parts" if n["depth"] else "## Chunks",
            "",
            "Each window runs from its start up to, not including, its end.",
            "",
        ]
        return "\n".join(lines + tree.listing(INDEX, top)) + "\n"

    def _memory(self) -> str:
        n = self.notes
        return "\n".join([
            f"# {n['path']}",
            "",
            f"- peek: {n['count']:,} entries, {bound(n['first'])} to {bound(n['last'])}, about "
            f"{span(n['peek_width'])} per 100 entries.",
            f"- range windows of {span(n['narrowest'])} to {span(n['widest'])} worked (aiming at "
            f"{AIM} entries each, with limit {LIMIT}); {self._how_read()}.",
            f"- {n['chunks']:,} chunk summaries are in {tree.FOLDER}/, rolled up into "
            f"{INDEX}; read those before reading the journal again.",
        ]) + "\n"

    def _answer_text(self) -> str:
        n = self.notes
        check = ("all of them" if n["entries"] == n["count"]
                 else f"but peek counted {n['count']:,}, so some are missing")
        tree_text = (f", rolled up into {n['nodes']:,} period summaries {n['depth']} level"
                     f"{'s' if n['depth'] != 1 else ''} deep" if n["depth"] else "")
        return (f"I summarised {n['entries']:,} entries of {n['path']} ({check}) in "
                f"{n['chunks']:,} chunks, one file each in {tree.FOLDER}/{tree_text}; "
                f"{self._how_read()}. The synthesis is {INDEX}, and {MEMORY} records what "
                "worked.")

    def _how_read(self) -> str:
        n = self.notes
        if n["nested"]:
            return (f"each window was read by a delegated agent of its own ({n['reads']:,} in "
                    "all), whose value is the chunk's summary")
        return (f"{n['refused']:,} range window{'s' if n['refused'] != 1 else ''} refused as too "
                "big and narrowed")

    def _failure(self, failed: Seen) -> str:
        written = self.notes["chunks"]
        call = " ".join(filter(None, [failed.name, str(failed.input.get("path", ""))]))
        done = (f" {written} chunk summar{'y' if written == 1 else 'ies'} had been written to "
                f"{tree.FOLDER}/ before that." if written else "")
        reason = _first_line(failed.text).rstrip(".")
        return GiveUp(f"I stopped: {call} failed with: {reason}.{done}")


def _named_log(task: str) -> str:
    """The first path in the task that can be a worklog (what the policy writes cannot)."""
    for found in LOG_PATH.finditer(task):
        path = found.group(0).rstrip(".").rstrip("/")  # a sentence's full stop is not a name's
        if path.split("/")[0] != tree.FOLDER:
            return path
    return ""


def _text_of(seen: list[Seen], name: str) -> str:
    return next((s.text for s in seen if s.name == name), "")


def _rounded(width: int) -> int:
    """Whole days, else whole hours, else whole minutes (at least one)."""
    for unit in (DAY_US, HOUR_US):
        if width >= unit:
            return width - width % unit
    return max(MINUTE_US, width - width % MINUTE_US)


def _refused(seen: Seen) -> bool:
    return seen.name == "range" and seen.is_error and (
        "Refused" in seen.text or "more than the limit" in seen.text)


def _indexing(seen: Seen) -> bool:
    return seen.is_error and "PolicyCall this tool again" in seen.text


def _chunk(text: str, page: re.Match[str] | None) -> tuple[dict[str, Any], list[str]]:
    """What one range listing says: its count, tags and projects, and its notable lines."""
    header = HEADER.search(text)
    entries = ENTRY.findall(text)
    tags: dict[str, int] = {}
    projects: dict[str, int] = {}
    for _, tag_list, project, _ in entries:
        for tag in set(filter(None, tag_list.split(","))):
            tags[tag] = tags.get(tag, 0) + 1
        if project:
            projects[project] = projects.get(project, 0) + 1
    notable = list(dict.fromkeys(m.group(0) for tag in NOTABLE for m in ENTRY.finditer(text)
                                 if tag in m.group(2).split(",")))
    if page:
        count = int(page.group(2)) - int(page.group(1)) + 1
    else:
        count = _int(header.group(1)) if header else len(entries)
    chunk = {"count": count, "from": entries[0][0] if entries else "",
             "to": entries[-1][0] if entries else "", "tags": tags, "projects": projects}
    return chunk, notable


def _int(text: str) -> int:
    return int(text.replace(",", ""))


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or ["(no message)"])[0]
