"""Writing gitspace's hook into a harness's own settings file, next to whatever else is there.

Invariants:
- Merge, never clobber: only hook entries whose command runs ``gitspace hook NAME``, or that post
  to a resident recorder (``hookentries.is_gitspace_hook``), are ever added, changed or removed;
  every other key, event, matcher and hook of the user's stays as it was, in its place.
  Installing twice changes nothing the second time.
- A settings file that is not valid JSON, or whose ``hooks`` is not shaped as the harness
  documents, is refused with the file named and nothing written.
- The file is replaced atomically (tmp file + rename), so a crash leaves the old settings or the
  new ones, never half of either.
- A settings file inside a work tree (``root`` given) is history's to name: it is read by the
  bounded reader and written by the work-tree writer, never through a link at it or at a folder
  on the way (a link there is refused, nothing written). One in the user's home is read through
  a link the user made (dotfile managers do), but only a regular file under the cap.
"""

from __future__ import annotations

import json
import os
import shlex
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import GitspaceError
from ..storage import bounded
from ..storage.files import FILE_MODE, Files
from .hookentries import is_gitspace_hook, runs_gitspace_hook
from .spec import HookSpec

PORTABLE = "gitspace"  # the program a committed settings file names: whatever PATH finds there
TIMEOUT = 30  # seconds the harness waits for the hook; it gives up on the lock well before


def timeout(spec: HookSpec, event: str) -> int:
    """How long ``spec``'s harness should wait for the hook of ``event``, in the unit it reads
    (Gemini CLI: milliseconds): ``TIMEOUT``, or less where the harness allows no more."""
    return dict(spec.timeouts).get(event, TIMEOUT) * spec.timeout_unit


@dataclass(frozen=True)
class Installed:
    path: Path
    events: dict[str, bool]  # each event gitspace wants: is its hook there?
    command: str | None  # the command found (None: not installed)
    short: tuple[str, ...] = ()  # events whose hook the harness kills before it can record

    @property
    def complete(self) -> bool:
        return all(self.events.values()) and not self.short


def hook_command(program: str, name: str, *, quiet_outside: bool = False,
                 commit_transcript: bool = False) -> str:
    """The shell command a harness runs: ``PROGRAM hook NAME [flags]``."""
    flags = (["--quiet-outside"] if quiet_outside else []) + (
        ["--commit-transcript"] if commit_transcript else [])
    return " ".join([program, "hook", shlex.quote(name), *flags])


def is_ours(command: object, name: str) -> bool:
    """Does this hook command run ``gitspace hook NAME``?"""
    return runs_gitspace_hook(command, name)


def load(path: Path, root: Path | None = None) -> dict[str, Any]:
    what = "The settings file"
    try:
        data = (bounded.read_named(path, bounded.JSON_CAP, what=what, follow=True) if root is None
                else bounded.read_inside(root, path.relative_to(root).as_posix(),
                                         bounded.JSON_CAP, what=what))
        if data is None:
            return {}
        raw = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise GitspaceError(f"{path} cannot be read: {e}.", hint="Fix or move the file, then "
                            "run the command again. Nothing was changed.") from None
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except ValueError as e:
        raise GitspaceError(f"{path} is not valid JSON ({e}), so gitspace will not edit it.",
                            hint="Fix the file (or move it away), then run the command again. "
                                 "Nothing was changed.") from None
    if not isinstance(data, dict):
        raise GitspaceError(f"{path} does not hold a JSON object, so gitspace will not edit it.",
                            hint="Fix the file, then run the command again. Nothing was changed.")
    return data


def _hooks(data: dict[str, Any], path: Path, spec: HookSpec) -> dict[str, Any]:
    hooks = data.get("hooks", {})
    bad = not isinstance(hooks, dict) or any(not isinstance(v, list) for v in hooks.values())
    if not bad and spec.style == "matchers":
        bad = any(not isinstance(group, dict) or not isinstance(group.get("hooks", []), list)
                  for groups in hooks.values() for group in groups)
    if bad:
        raise GitspaceError(f"The 'hooks' in {path} are not shaped as {spec.title} documents "
                            "them, so gitspace will not edit them.",
                            hint="Fix that part of the file, then run the command again. "
                                 "Nothing was changed.")
    return hooks


def _entries(groups: list[Any], spec: HookSpec) -> list[dict[str, Any]]:
    """The hook entries (objects with a command) of one event's list."""
    if spec.style == "flat":
        return [g for g in groups if isinstance(g, dict)]
    return [h for g in groups for h in g.get("hooks", []) if isinstance(h, dict)]


def status(path: Path, spec: HookSpec, root: Path | None = None) -> Installed:
    hooks = _hooks(load(path, root), path, spec)
    found: str | None = None
    events, short = {}, []
    for event, _ in spec.events:
        ours = [h for h in _entries(hooks.get(event, []), spec)
                if is_gitspace_hook(h, spec.name)]
        events[event] = bool(ours)
        found = found or (ours[0].get("command") or ours[0].get("url") if ours else None)
        if spec.style == "matchers" and any(_too_short(h.get("timeout"), spec, event)
                                            for h in ours):
            short.append(event)
    return Installed(path, events, found, tuple(short))


def _too_short(value: object, spec: HookSpec, event: str) -> bool:
    """Would the harness kill a hook given ``value`` as its timeout before it could record?
    (An earlier gitspace wrote Gemini CLI 30, which it reads as 30 ms.)"""
    return isinstance(value, (int, float)) and value < timeout(spec, event)


def install(path: Path, spec: HookSpec, command: str, root: Path | None = None,
            http: Resident | None = None) -> bool:
    """Add (or update) gitspace's hook for every event of ``spec``. True if the file changed.
    ``http``: each event a harness may post goes to the resident recorder, with the command
    beside it that records when none runs (``Resident``)."""
    data = load(path, root)
    hooks = _hooks(data, path, spec)
    before = json.dumps(data, sort_keys=True)
    for event, matcher in spec.events:
        groups = hooks.setdefault(event, [])
        if spec.style == "flat":
            mine = [h for h in _entries(groups, spec) if is_ours(h.get("command"), spec.name)]
            for entry in mine:
                entry["command"] = command
            if not mine:
                groups.append({"command": command})
            continue
        wait = timeout(spec, event)
        entries = [{"type": "command", "command": command, "timeout": wait}]
        if http is not None and event not in NO_HTTP:
            entries = [{"type": "http", "url": http.url, "headers": {
                "Authorization": f"Bearer {http.secret}"}, "timeout": wait},
                {"type": "command", "command": http.otherwise, "timeout": wait}]
        _place(groups, entries, matcher, spec.name)
    if spec.style == "flat":
        data.setdefault("version", 1)
    data["hooks"] = hooks
    if json.dumps(data, sort_keys=True) == before:
        return False
    _write(path, data, root)
    return True


NO_HTTP = ("SessionStart", "Setup")  # events Claude Code sends to command hooks only


@dataclass(frozen=True)
class Resident:
    """How a harness's hooks reach the checkout's resident recorder (harness/resident/)."""

    url: str
    secret: str
    otherwise: str  # the command that records in its own process when no resident runs


def _place(groups: list[Any], entries: list[dict[str, Any]], matcher: str | None,
           name: str) -> None:
    """Put ``entries`` where gitspace's entries of this event are (the first group that holds
    one), in their place, and drop any others; a new group at the end when there is none."""
    placed = False
    for group in list(groups):
        inner = group.get("hooks", [])
        if not any(is_gitspace_hook(h, name) for h in inner):
            continue
        at = next(i for i, h in enumerate(inner) if is_gitspace_hook(h, name))
        rest = [h for h in inner if not is_gitspace_hook(h, name)]
        if not placed:
            group["hooks"] = rest[:at] + entries + rest[at:]
            placed = True
        elif rest:
            group["hooks"] = rest
        else:
            groups.remove(group)
    if not placed:
        groups.append({**({"matcher": matcher} if matcher else {}), "hooks": entries})


def uninstall(path: Path, spec: HookSpec, root: Path | None = None) -> int:
    """Remove every gitspace hook entry of ``spec``'s harness; the number removed."""
    data = load(path, root)
    if not data:
        return 0
    hooks = _hooks(data, path, spec)
    removed = 0
    for event in list(hooks):
        groups = hooks[event]
        if spec.style == "flat":
            kept = [g for g in groups if not is_gitspace_hook(g, spec.name)]
        else:
            kept = []
            for group in groups:
                inner = group.get("hooks", [])
                rest = [h for h in inner if not is_gitspace_hook(h, spec.name)]
                if len(rest) == len(inner):
                    kept.append(group)
                elif rest:
                    kept.append({**group, "hooks": rest})
        removed += len(_entries(groups, spec)) - len(_entries(kept, spec))
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]
    if removed:
        if hooks:
            data["hooks"] = hooks
        else:
            data.pop("hooks", None)
        _write(path, data, root)
    return removed


def _write(path: Path, data: dict[str, Any], root: Path | None) -> None:
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    if root is not None:
        Files(root).put(path.relative_to(root).as_posix(), (text.encode(), FILE_MODE))
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o777
    except FileNotFoundError:
        mode = 0o644
    fd, tmp = tempfile.mkstemp(prefix=".gitspace-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
