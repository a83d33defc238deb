"""What a harness hook reports, in one shape for every harness: an ``Event`` about one ``Call``.

Invariant: adapters (one module per harness) only translate a payload into an Event; they never
touch the workspace. Anything an adapter cannot read is an ``ignored`` Event with a reason, never
an exception: a hook must not break the harness that runs it.

Kinds:
- ``before``: a tool call is about to run (PreToolUse / BeforeTool / beforeShellExecution);
- ``after``: it finished (PostToolUse / AfterTool / afterFileEdit / afterShellExecution);
- ``failed``: it failed (PostToolUseFailure, an AfterTool carrying an error): a failed call is
  recorded only when it still changed files;
- ``prompt``: a person's message starts a turn; ``stop``: the turn ended;
- ``ignored``: nothing to do (a read-only tool, an event gitspace does not use, a bad payload);
- ``scan``, ``undo``, ``rewind``, ``fork``: no harness sends these; in a person's own checkout
  ``gitspace hooks install`` starts the line with a scan, and ``gitspace undo``, ``rewind`` and
  ``fork`` run as events too, so that every change there goes through one recorder.

A ``Call`` names the files it writes (``paths``, absolute as the harness gives them) when its input
says so (Write, Edit, ...); ``paths is None`` means the call may change anything (a shell command),
so its effect is whatever changed while it ran.
"""

from __future__ import annotations

from ..errors import GitspaceError
from ..storage.records import field, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

KINDS = ("before", "after", "failed", "prompt", "stop", "ignored", "scan", "undo", "rewind",
         "fork")


@record(frozen=True)
class Call:
    tool: str
    args: dict[str, Any]
    paths: tuple[str, ...] | None
    use_id: str | None = None
    error: str | None = None  # why a failed call failed, as the harness says it


@record(frozen=True)
class Event:
    kind: str
    agent: str
    cwd: str | None = None
    session: str | None = None
    call: Call | None = None
    prompt_id: str | None = None
    transcript: str | None = None
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def ignored(agent: str, note: str, payload: Mapping[str, Any] | None = None) -> Event:
    cwd = text(payload, "cwd") if payload is not None else None
    return Event("ignored", agent, cwd=cwd, note=note)


def text(payload: Mapping[str, Any] | None, key: str) -> str | None:
    """``payload[key]`` when it is a non-empty string, else None."""
    value = payload.get(key) if payload is not None else None
    return value if isinstance(value, str) and value else None


def mapping(payload: Mapping[str, Any], key: str) -> dict[str, Any] | None:
    value = payload.get(key)
    return value if isinstance(value, dict) else None


def tool_call(agent: str, payload: Mapping[str, Any], path_tools: Mapping[str, str],
              shell_tools: tuple[str, ...]) -> Call | Event:
    """The Call a tool event's ``tool_name``/``tool_input`` describe, for a tool that names its
    file in ``path_tools[tool]`` or is a shell (``shell_tools``); an ignored Event otherwise."""
    tool, tool_input = text(payload, "tool_name"), mapping(payload, "tool_input")
    if tool is None or (tool not in path_tools and tool not in shell_tools):
        return ignored(agent, f"{tool} does not change files.", payload)
    if tool_input is None:
        return ignored(agent, f"The payload for {tool} has no tool_input object.", payload)
    paths = file_paths(tool_input, path_tools[tool]) if tool in path_tools else None
    if tool in path_tools and paths is None:
        return ignored(agent, f"The {tool} call names no file ({path_tools[tool]}).", payload)
    return Call(tool, tool_input, paths, text(payload, "tool_use_id"))


def file_paths(tool_input: Mapping[str, Any], *keys: str) -> tuple[str, ...] | None:
    """The file paths a tool's input names under ``keys`` (the first present), or None."""
    for key in keys:
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            return (value,)
    return None


class NothingRecorded(GitspaceError):
    """A hook ran where it records nothing (no repository, or recording is not turned on in a
    person's checkout): said once, never as a failure the next call catches up on."""


class PayloadRefused(GitspaceError):
    """A hook payload that gitspace will not act on (another folder, bad fields)."""


@record()
class Options:
    quiet_outside: bool = False  # installed for every project (user scope): say nothing elsewhere
    commit_transcript: bool = False
    lock_timeout: float = 10.0
    max_file_bytes: int = 1 << 20
    author: str | None = None  # who outside edits are by, when someone said (GITSPACE_AUTHOR)
    # The work-tree paths that may have changed since the last scan, as a watcher saw them (the
    # resident recorder's: harness/resident/watch.py); a scan then looks at these instead of
    # asking git for every pending path. None: not known, the scan asks git.
    changed: frozenset[str] | None = None


@record()
class Recorded:
    """What one hook call recorded: its ops, notes for the person, the turn's checkpoint."""

    ops: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    checkpoint: str | None = None
    taken: Any = None  # in place: what an undo or rewind did (inplace/takeback.py Taken)


class RecordingOnly:
    """The tools of a workspace opened by a hook: none. It records what the harness's own tools
    did; it never runs a gitspace tool (which would also mean importing them all)."""

    def run(self, ws: Any, who: Any, args: dict[str, Any]) -> Any:
        from ..errors import UnknownTool

        raise UnknownTool(f"A hook's workspace runs no tools (asked for {who.tool!r}).")
