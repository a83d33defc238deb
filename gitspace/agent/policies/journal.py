"""The journal policy: summarise a big worklog chunk by chunk, then index the chunk summaries.

It knows only what the tools said. ``peek`` gives the entry count, the first and last day and
"about N days hold 100 entries"; the policy then reads ``range`` windows [start, end) of whole
days, from the first day until past the last, and writes one ``summaries/<start>_<end>.md`` per
window it read, sending that ``create`` in the same reply as the next ``range``. At the end it
writes ``summaries/index.md`` (totals, tags and projects added up from the chunk reads, one line
per chunk file), marks its two plan steps done and leaves a note in ``/memories/journal.md``
(replacing an earlier run's note: delete, then create).

Chunk width: the first window is peek's N days. After a window is read, the next one aims at 90
entries at the density just seen (width x 90 / entries), never wider than N days nor narrower than
one. A refused window is narrowed to the one the refusal suggests ("e.g. start X end Y") and the
read continues from its end. An empty window writes no file: nothing would be in it.

Any failure other than a refused ``range`` ends the run with an answer that names it.
"""

from __future__ import annotations

import re
from datetime import date, timedelta
from typing import Any

from .base import Call, GiveUp, Policy, Seen

DEFAULT_PATH = "journal/worklog.jsonl"
FOLDER = "summaries"
INDEX = f"{FOLDER}/index.md"
MEMORY = "/memories/journal.md"
STEPS = ("Summarise the journal chunk by chunk, one file per chunk",
         "Write the synthesis that indexes the chunk summaries")
AIM = 90  # entries per window: under range's limit of 100 with room for a busier stretch
SUMMARY_CAP = 1_200
NOTABLE = ("incident", "security", "deploy")  # the tags a reader of a summary looks for first

# A worklog in the task: a .jsonl file, or a segmented log folder written with a final slash.
LOG_PATH = re.compile(r"[\w./-]+\.jsonl\b|[\w.-]+(?:/[\w.-]+)*/(?=[\s,;:]|$)")
COUNT = re.compile(r"([\d,]+) entr(?:y|ies)\b")
EARLIEST = re.compile(r"^earliest:\s+(\d{4}-\d\d-\d\d)", re.M)
LATEST = re.compile(r"^latest:\s+(\d{4}-\d\d-\d\d)", re.M)
WIDTH = re.compile(r"about (\d+) (day|hour|minute)s? hold")
HEADER = re.compile(r"^([\d,]+) entr(?:y|ies) in the slice", re.M)
ENTRY = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d) \[([^\]]*)\](?: \(([^)]*)\))? (.*)$", re.M)
SUGGESTED = re.compile(r"e\.g\. start (\S+) end (\d{4}-\d\d-\d\d)\b")
ADDED = re.compile(r"Added step (\d+)")


class JournalPolicy(Policy):
    name = "journal"
    tools = ("peek", "range", "create", "plan_add", "plan_done", "memory")

    def initial(self) -> dict[str, Any]:
        return {"phase": "start", "path": DEFAULT_PATH, "count": 0, "first": "", "last": "",
                "peek_width": 1, "width": 1, "start": "", "end": "", "steps": [],
                "pending": None, "chunks": [], "refused": 0, "reads": 0}

    def decide(self, task: str, seen: list[Seen]) -> list[Call] | str:
        n = self.notes
        failed = next((s for s in seen if s.is_error and not _refused(s)), None)
        if failed is not None and n["phase"] == "memory" and "already exists" in failed.text:
            n["phase"] = "rewrite"  # an earlier run's note: this run's replaces it
            return [Call("memory", {"command": "delete", "path": MEMORY}),
                    Call("memory", {"command": "create", "path": MEMORY,
                                    "file_text": self._memory()})]
        if failed is not None:
            return self._failure(failed)
        for s in seen:
            if s.name == "plan_add":
                added = ADDED.search(s.text)
                if added is None:
                    return GiveUp(f"I stopped: plan_add answered without a step number: "
                                  f"{_first_line(s.text)}")
                n["steps"].append(int(added.group(1)))
            elif s.name == "create" and n["pending"] and s.input["path"] == n["pending"]["file"]:
                n["chunks"].append(n["pending"])
                n["pending"] = None
        phase = n["phase"]
        if phase == "start":
            found = LOG_PATH.search(task)
            n["path"] = found.group(0).rstrip("/") if found else DEFAULT_PATH
            n["phase"] = "peek"
            return [Call("peek", {"path": n["path"]})]
        if phase == "peek":
            return self._plan(next((s.text for s in seen if s.name == "peek"), ""))
        if phase == "read":
            result = next((s for s in seen if s.name == "range"), None)
            if result is None:
                return GiveUp("I stopped: I asked for a range window and got no result for it.")
            return self._read(result)
        if phase == "last":
            return self._index()
        if phase == "index":
            n["phase"] = "memory"
            return [Call("plan_done", {"step": n["steps"][1]}),
                    Call("memory", {"command": "create", "path": MEMORY,
                                    "file_text": self._memory()})]
        n["phase"] = "done"
        return self._answer_text()

    # -- reading -------------------------------------------------------------------------------

    def _plan(self, peek: str) -> list[Call] | str:
        n = self.notes
        count, first, last = COUNT.search(peek), EARLIEST.search(peek), LATEST.search(peek)
        if not (count and first and last):
            return f"peek on {n['path']} shows no entries, so there is nothing to summarise."
        width = WIDTH.search(peek)
        days = int(width.group(1)) if width and width.group(2) == "day" else 1
        n.update(count=_int(count.group(1)), first=first.group(1), last=last.group(1),
                 peek_width=days, width=days, phase="read")
        plan = [Call("plan_add", {"step": step}) for step in STEPS]
        return [*plan, self._range(first.group(1), days)]

    def _range(self, start: str, days: int) -> Call:
        n = self.notes
        end = min(date.fromisoformat(start) + timedelta(days=days),
                  date.fromisoformat(n["last"]) + timedelta(days=1))
        n["start"], n["end"] = start, end.isoformat()
        return Call("range", {"path": n["path"], "start": start, "end": n["end"]})

    def _read(self, result: Seen) -> list[Call] | str:
        n = self.notes
        if _refused(result):
            n["refused"] += 1
            suggested = SUGGESTED.search(result.text)
            narrower = _days(n["start"], suggested.group(2)) if suggested else 0
            if not 0 < narrower < _days(n["start"], n["end"]):
                return GiveUp(f"I stopped: range refused the window {n['start']} to {n['end']} "
                              "and suggested no narrower window of whole days: "
                              f"{_first_line(result.text)}")
            n["width"] = narrower
            return [self._range(n["start"], narrower)]
        n["reads"] += 1
        chunk, notable = _chunk(result.text, n["start"], n["end"])
        calls = []
        if chunk["count"]:
            n["pending"] = chunk
            calls.append(Call("create", {"path": chunk["file"],
                                         "file_text": _summary(n["path"], chunk, notable)}))
        width = _days(n["start"], n["end"]) * AIM // max(chunk["count"], 1)
        n["width"] = max(1, min(n["peek_width"], width))
        if date.fromisoformat(n["end"]) <= date.fromisoformat(n["last"]):
            return [*calls, self._range(n["end"], n["width"])]
        n["phase"] = "last"
        if not calls and not n["chunks"]:
            return (f"peek counted {n['count']:,} entries in {n['path']}, but every range window "
                    f"from {n['first']} to {n['last']} was empty, so I wrote no summary.")
        return calls or self._index()

    # -- finishing -----------------------------------------------------------------------------

    def _index(self) -> list[Call]:
        n = self.notes
        n["phase"] = "index"
        return [Call("plan_done", {"step": n["steps"][0]}),
                Call("create", {"path": INDEX, "file_text": self._synthesis()})]

    def _synthesis(self) -> str:
        n = self.notes
        chunks = n["chunks"]
        total = sum(c["count"] for c in chunks)
        tags, projects = _added(c["tags"] for c in chunks), _added(c["projects"] for c in chunks)
        widths = _widths(chunks)
        busiest = max(chunks, key=lambda c: c["count"] / _days(c["start"], c["end"]))
        lines = [
            f"# Journal synthesis: {n['path']}",
            "",
            f"{total:,} entries in {len(chunks)} chunks, {n['first']} to {n['last']} "
            f"(peek counted {n['count']:,}).",
            f"Read with range windows of {min(widths)} to {max(widths)} days; {n['refused']} "
            f"window{'s' if n['refused'] != 1 else ''} refused as too big and narrowed.",
            f"Busiest chunk: {busiest['start']} to {busiest['end']} ({busiest['count']} entries "
            f"in {_days(busiest['start'], busiest['end'])} days).",
            "",
            f"Tags: {_ranked(tags, 12)}",
            f"Projects: {_ranked(projects, 12) or 'none'}",
            f"Incidents: {tags.get('incident', 0)}; deploys: {tags.get('deploy', 0)}.",
            "",
            "## Chunks",
            "",
            "Each window runs from its start day up to, not including, its end day.",
            "",
        ]
        for c in chunks:
            name = c["file"].removeprefix(f"{FOLDER}/")
            lines.append(f"- [{c['start']} to {c['end']}]({name}): {c['count']} entries; "
                         f"top tags {_ranked(c['tags'], 3, more=False)}")
        return "\n".join(lines) + "\n"

    def _memory(self) -> str:
        n = self.notes
        widths = _widths(n["chunks"])
        return "\n".join([
            f"# {n['path']}",
            "",
            f"- peek: {n['count']:,} entries, {n['first']} to {n['last']}, about "
            f"{n['peek_width']} days per 100 entries.",
            f"- range windows of {widths[0]} to {widths[-1]} days worked (aiming at {AIM} "
            f"entries each); {n['refused']} of {n['reads'] + n['refused']} windows were refused "
            f"at the limit of 100 and narrowed.",
            f"- {len(n['chunks'])} chunk summaries are in {FOLDER}/, indexed by {INDEX}; read "
            "those before reading the journal again.",
        ]) + "\n"

    def _answer_text(self) -> str:
        n = self.notes
        total = sum(c["count"] for c in n["chunks"])
        check = ("all of them" if total == n["count"]
                 else f"but peek counted {n['count']:,}, so some are missing")
        return (f"I summarised {total:,} entries of {n['path']} ({check}) in "
                f"{len(n['chunks'])} chunks, one file each in {FOLDER}/; {n['refused']} range "
                f"windows were refused as too big and narrowed. The synthesis is {INDEX}, and "
                f"{MEMORY} records what worked.")

    def _failure(self, failed: Seen) -> str:
        written = len(self.notes["chunks"])
        call = " ".join(filter(None, [failed.name, str(failed.input.get("path", ""))]))
        done = (f" {written} chunk summar{'y' if written == 1 else 'ies'} had been written to "
                f"{FOLDER}/ before that." if written else "")
        reason = _first_line(failed.text).rstrip(".")
        return GiveUp(f"I stopped: {call} failed with: {reason}.{done}")


def _refused(seen: Seen) -> bool:
    return seen.name == "range" and seen.is_error and (
        "Refused" in seen.text or "more than the limit" in seen.text)


def _chunk(text: str, start: str, end: str) -> tuple[dict[str, Any], list[str]]:
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
    chunk = {"file": f"{FOLDER}/{start}_{end}.md", "start": start, "end": end,
             "count": _int(header.group(1)) if header else len(entries),
             "from": entries[0][0] if entries else "", "to": entries[-1][0] if entries else "",
             "tags": tags, "projects": projects}
    return chunk, notable


def _summary(path: str, chunk: dict[str, Any], notable: list[str]) -> str:
    lines = [
        f"# {path}: {chunk['start']} to {chunk['end']}",
        "",
        f"Entries: {chunk['count']} ({chunk['start']} <= ts < {chunk['end']}; first "
        f"{chunk['from']}, last {chunk['to']} UTC)",
        f"Tags: {_ranked(chunk['tags'], 8)}",
        f"Projects: {_ranked(chunk['projects'], 8) or 'none'}",
        "",
        "Notable:",
    ]
    size = sum(len(line) + 1 for line in lines)
    rows = []
    for line in notable or ["(no incidents, security work or deploys)"]:
        row = f"- {_clip(line, 110)}"
        if size + len(row) + 1 > SUMMARY_CAP:
            break
        rows.append(row)
        size += len(row) + 1
    return "\n".join(lines + sorted(rows)) + "\n"  # picked by tag, shown in time order


def _ranked(counts: dict[str, int], top: int, more: bool = True) -> str:
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    text = ", ".join(f"{name} {count:,}" for name, count in ranked[:top])
    return text + (f", and {len(ranked) - top} more" if more and len(ranked) > top else "")


def _widths(chunks: list[dict[str, Any]]) -> list[int]:
    """The window widths in days, leaving out the last window (cut short at the journal's end)."""
    days = [_days(c["start"], c["end"]) for c in chunks]
    return sorted(days[:-1] or days)


def _added(counts: Any) -> dict[str, int]:
    total: dict[str, int] = {}
    for one in counts:
        for name, count in one.items():
            total[name] = total.get(name, 0) + count
    return total


def _days(start: str, end: str) -> int:
    return (date.fromisoformat(end) - date.fromisoformat(start)).days


def _int(text: str) -> int:
    return int(text.replace(",", ""))


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or ["(no message)"])[0]
