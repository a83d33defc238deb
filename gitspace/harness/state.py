"""What the hook remembers between calls, in ``<git dir>/gitspace/harness/`` of the worktree.

Invariants:
- Nothing here is a record of truth: ops live in commits. These files only help the next hook
  call: which calls are running now (``inflight/``), that an earlier hook call failed and left
  changes unrecorded (``missed``), and each session's turn count (``sessions/``).
- Every file is replaced by rename, so a reader sees an old or a new version, never a torn one;
  a file that does not parse is treated as absent, and so is one that is no regular file (a
  link, a fifo: ``storage/statefiles.py`` reads and writes here without following a link).
- An in-flight call is announced before it runs (its ``before`` hook) and retired when it is
  recorded. Announcements older than ``STALE`` seconds are ignored: their call died unreported.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from ..storage import statefiles
from ..storage.loose import sha1_hex
from ..storage.records import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from .events import Event

STALE = 6 * 3600.0  # a tool call still "running" after this long was never reported as done


@record(frozen=True)
class Running:
    """A call announced by its before hook: what its files held then, and whether it is a shell."""

    key: str
    agent: str
    session: str | None
    tool: str
    use_id: str | None
    shell: bool
    before: dict[str, list[Any]]  # rel path -> [blob sha or None (absent), git mode]
    started: float
    # The call's input, long strings elided (``naming.announced_args``): what its op records
    # when the harness never sends its after hook.
    args: dict[str, Any] | None = None


FOLDER = "gitspace/harness"  # below the worktree's git dir


def folder(gitdir: Path, *below: str) -> Path:
    """The hook's folder (or one below it), made if missing, never a link (statefiles)."""
    return statefiles.folder(gitdir, *FOLDER.split("/"), *below)


def call_key(agent: str, session: str | None, use_id: str | None, tool: str,
             args: dict[str, Any]) -> str:
    """A file-name-safe key for one call: its tool-use id, or (without one) its tool and input."""
    basis = use_id if use_id else tool + "\0" + json.dumps(args, sort_keys=True, default=str)
    return sha1_hex(f"{agent}\0{session or ''}\0{basis}".encode("utf-8", "replace"))


def _write(gitdir: Path, rel: str, data: Any) -> None:
    statefiles.write(gitdir, f"{FOLDER}/{rel}", json.dumps(data).encode())


def _read(gitdir: Path, rel: str) -> Any:
    """What state file ``rel`` holds; None when it is absent or not one this module writes (a
    link, a fifo, JSON deeper or numbers larger than it keeps: ``bounds.load_state``)."""
    from ..storage import bounds

    try:
        raw = statefiles.read(gitdir, f"{FOLDER}/{rel}")
        return None if raw is None else bounds.load_state(raw)
    except (statefiles.StateRefused, ValueError, RecursionError, bounds.OutOfBounds):
        return None


# -- calls running now -----------------------------------------------------------------------


def announce(gitdir: Path, call: Running) -> None:
    _write(gitdir, f"inflight/{call.key}.json", call.__dict__)


def started_ns(gitdir: Path, key: str) -> int | None:
    """When the before hook announced call ``key``, on the file system's own clock (the clock a
    file's ctime is on)."""
    try:
        return os.lstat(gitdir / FOLDER / "inflight" / f"{key}.json").st_mtime_ns
    except OSError:
        return None


def retire(gitdir: Path, key: str) -> Running | None:
    """Forget a call; what its before hook recorded about it, if anything."""
    found = _load_running(gitdir, f"inflight/{key}.json")
    statefiles.remove(gitdir, f"{FOLDER}/inflight/{key}.json")
    return found


def running(gitdir: Path, now: float | None = None) -> list[Running]:
    """Every call announced and not yet retired (stale ones are dropped)."""
    now = time.time() if now is None else now
    try:
        names = statefiles.names(gitdir, f"{FOLDER}/inflight")
    except statefiles.StateRefused:
        return []
    found = []
    for name in names:
        if name.endswith(".json") and not name.startswith("."):
            call = _load_running(gitdir, f"inflight/{name}")
            if call is not None and now - call.started < STALE:
                found.append(call)
            elif call is not None:
                statefiles.remove(gitdir, f"{FOLDER}/inflight/{name}")
    return found


def _load_running(gitdir: Path, rel: str) -> Running | None:
    data = _read(gitdir, rel)
    try:
        return Running(**data) if isinstance(data, dict) else None
    except TypeError:
        return None


# -- a failed hook call ----------------------------------------------------------------------


def mark_missed(gitdir: Path, reason: str) -> None:
    """Say that changes may be unrecorded: the next hook call records them as outside edits.
    (Something other than a regular file planted at the mark's name is left alone: it is not
    gitspace's to replace, and the next call scans anyway when it cannot read the mark.)"""
    if _ours(gitdir, "missed"):
        _write(gitdir, "missed", {"reason": reason[:500], "time": time.time()})


def missed(gitdir: Path) -> str | None:
    data = _read(gitdir, "missed")
    return str(data.get("reason", "")) if isinstance(data, dict) else None


def clear_missed(gitdir: Path) -> None:
    if _ours(gitdir, "missed"):
        statefiles.remove(gitdir, f"{FOLDER}/missed")


def _ours(gitdir: Path, rel: str) -> bool:
    """Is the state file ``rel`` absent or a regular file (one gitspace may replace)?"""
    import stat

    try:
        return stat.S_ISREG(os.lstat(gitdir / FOLDER / rel).st_mode)
    except OSError:
        return True


# -- turns -----------------------------------------------------------------------------------


@record(frozen=True)
class Turn:
    number: int
    prompt_id: str | None
    transcript: str | None


def _session_file(agent: str, session: str) -> str:
    name = sha1_hex(f"{agent}\0{session}".encode("utf-8", "surrogatepass"))
    return f"sessions/{name}.json"


def turn(gitdir: Path, agent: str, session: str | None) -> Turn | None:
    if not session:
        return None
    data = _read(gitdir, _session_file(agent, session))
    if not isinstance(data, dict) or not isinstance(data.get("turn"), int):
        return None
    return Turn(data["turn"], data.get("prompt_id"), data.get("transcript"))


def begin_turn(gitdir: Path, agent: str, session: str, prompt_id: str | None,
               transcript: str | None, first: int = 1) -> Turn:
    """Count a new turn of ``session`` (numbered from ``first`` when none is known yet)."""
    known = turn(gitdir, agent, session)
    number = known.number + 1 if known else first
    kept = _read(gitdir, _session_file(agent, session))
    ids = kept.get("ids") if isinstance(kept, dict) else None
    _write(gitdir, _session_file(agent, session),
           {"turn": number, "prompt_id": prompt_id, "transcript": transcript or (
               known.transcript if known else None), "agent": agent, "session": session,
            **({"ids": ids} if isinstance(ids, list) else {})})
    return Turn(number, prompt_id, transcript)


def turn_at(gitdir: Path, event: Event, marks: Callable[[], int]) -> Turn | None:
    """The turn a prompt begins (counted now) or a turn's end closes (the one its prompt began;
    when none is known, one counted now): numbered after the session's ``marks()`` turn marks
    when it is the session's first here. None without a session."""
    if not event.session:
        return None
    known = turn(gitdir, event.agent, event.session)
    if known is not None and event.kind != "prompt":
        return known
    return begin_turn(gitdir, event.agent, event.session, event.prompt_id, event.transcript,
                      1 if known is not None else 1 + marks())


@record(frozen=True)
class Known:
    """A session the hook has seen begin a turn here: what the web view lists."""

    agent: str
    session: str
    turns: int
    transcript: str | None
    when: float


def sessions(gitdir: Path) -> list[Known]:
    """Every harness session whose turns the hook counted in this checkout, newest first."""
    try:
        names = statefiles.names(gitdir, f"{FOLDER}/sessions")
    except statefiles.StateRefused:
        return []
    found = []
    for name in names:
        path = gitdir / FOLDER / "sessions" / name
        data = _read(gitdir, f"sessions/{name}") if name.endswith(".json") else None
        if not isinstance(data, dict) or not isinstance(data.get("session"), str) \
                or not isinstance(data.get("agent"), str) or not isinstance(data.get("turn"), int):
            continue
        transcript = data.get("transcript")
        try:
            when = path.lstat().st_mtime
        except OSError:
            continue
        found.append(Known(data["agent"], data["session"], data["turn"],
                           transcript if isinstance(transcript, str) else None, when))
    return sorted(found, key=lambda k: k.when, reverse=True)


# -- events delivered twice ------------------------------------------------------------------

DONE_KEPT = 256  # calls remembered as recorded (a harness delivers a duplicate at once)
PROMPT_TWICE = 2.0  # seconds within which a prompt with no id of its own is the same prompt


def seen_before(gitdir: Path, event: Event, tip: str) -> bool:
    """Was this very event recorded already? (Both of two installs of a harness's hooks deliver
    it: the person's own settings and a project's.) A call's after hook is known by its tool-use
    id (calls without one cannot be told from a new call with the same input: their second
    delivery finds nothing left to record anyway). A turn's start or end comes again with
    nothing recorded since (the place's ``tip`` as it was then): a start by its prompt id, or,
    for a harness that gives none, by coming again at once; an end by its turn being marked."""
    call = event.call
    if event.kind in ("after", "failed") and call is not None and call.use_id:
        done = _read(gitdir, "done")
        return isinstance(done, list) and _done_key(event) in done
    if event.kind not in ("prompt", "stop") or not event.session:
        return False
    data = _read(gitdir, _session_file(event.agent, event.session))
    if not isinstance(data, dict):
        return False
    last = data.get("marked" if event.kind == "stop" else "prompted")
    if not isinstance(last, dict) or last.get("tip") != tip:
        return False
    if event.kind == "stop":
        return last.get("turn") == data.get("turn") and data.get("turn") is not None
    if event.prompt_id:
        return last.get("id") == event.prompt_id
    when = last.get("at")
    return last.get("id") is None and isinstance(when, (int, float)) \
        and 0 <= time.time() - when < PROMPT_TWICE


def saw(gitdir: Path, event: Event, tip: str) -> None:
    """Remember ``event`` as recorded, the place's ref at ``tip`` after it (``seen_before``)."""
    call = event.call
    if event.kind in ("after", "failed") and call is not None and call.use_id:
        done = _read(gitdir, "done")
        kept = [k for k in done if isinstance(k, str)][-DONE_KEPT + 1:] \
            if isinstance(done, list) else []
        _write(gitdir, "done", [*kept, _done_key(event)])
        return
    if event.kind not in ("prompt", "stop") or not event.session:
        return
    name = _session_file(event.agent, event.session)
    data = _read(gitdir, name)
    if not isinstance(data, dict):
        return
    if event.kind == "stop":
        data["marked"] = {"turn": data.get("turn"), "tip": tip}
    else:
        data["prompted"] = {"id": event.prompt_id, "at": time.time(), "tip": tip}
    _write(gitdir, name, data)


def _done_key(event: Event) -> str:
    call = event.call
    assert call is not None
    return sha1_hex(f"{event.agent}\0{event.session or ''}\0{call.use_id}".encode(
        "utf-8", "replace"))


# -- calls whose op waits for their id ------------------------------------------------------

HOLD_MAX = 120.0  # seconds a held op waits for another session's event before it goes without


@record(frozen=True)
class Held:
    """A call's op kept back until its harness names the call's id (``HookSpec.late_ids``): the
    entries it changed (blobs written already), its input, and why it failed, if it did."""

    key: str
    agent: str
    session: str | None
    tool: str
    args: dict[str, Any]
    paths: list[str] | None  # the files a file tool names (None: a shell command)
    changes: dict[str, list[Any]]  # rel path -> [blob sha or None (deleted), git mode]
    error: str | None
    note: str
    transcript: str | None
    when: float


def hold(gitdir: Path, held: Held) -> None:
    _write(gitdir, f"held/{held.key}.json", held.__dict__)


def held(gitdir: Path) -> list[Held]:
    """Every op held back, oldest first."""
    try:
        names = statefiles.names(gitdir, f"{FOLDER}/held")
    except statefiles.StateRefused:
        return []
    found = []
    for name in names:
        data = _read(gitdir, f"held/{name}") if name.endswith(".json") else None
        try:
            one = Held(**data) if isinstance(data, dict) else None
        except TypeError:
            one = None
        if one is not None and _well_formed(one):
            found.append(one)
        elif name.endswith(".json"):  # not one this module wrote: it holds nothing back
            statefiles.remove(gitdir, f"{FOLDER}/held/{name}")
    return sorted(found, key=lambda h: h.when)


def _well_formed(h: Held) -> bool:
    """Is ``h`` what ``hold`` writes? (State files are read back as untrusted input.)"""
    from ..storage.files import is_plain

    texts = (h.key, h.agent, h.tool, h.note)
    return (all(isinstance(t, str) for t in texts) and isinstance(h.args, dict)
            and isinstance(h.changes, dict) and isinstance(h.when, (int, float))
            and (h.paths is None or isinstance(h.paths, list)
                 and all(isinstance(p, str) for p in h.paths))
            and all(isinstance(rel, str) and is_plain(rel) and isinstance(v, list) and len(v) == 2
                    and (v[0] is None or isinstance(v[0], str) and len(v[0]) == 40)
                    and isinstance(v[1], int) for rel, v in h.changes.items()))


def release(gitdir: Path, key: str) -> None:
    statefiles.remove(gitdir, f"{FOLDER}/held/{key}.json")


def ids_taken(gitdir: Path, agent: str, session: str | None) -> set[str]:
    """The call ids a session's held ops were given already."""
    data = _read(gitdir, _session_file(agent, session)) if session else None
    taken = data.get("ids") if isinstance(data, dict) else None
    return {i for i in taken if isinstance(i, str)} if isinstance(taken, list) else set()


def took_id(gitdir: Path, agent: str, session: str | None, use_id: str) -> None:
    if not session:
        return
    name = _session_file(agent, session)
    data = _read(gitdir, name)
    data = data if isinstance(data, dict) else {"agent": agent, "session": session}
    ids = [i for i in data.get("ids") or [] if isinstance(i, str)][-DONE_KEPT + 1:]
    data["ids"] = [*ids, use_id]
    _write(gitdir, name, data)
