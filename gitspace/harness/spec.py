"""How a harness is wired: where its hook settings live and which of its events gitspace hears.

Invariant: this is data only. ``settings`` writes it into the harness's own configuration file;
each adapter module turns the payloads those events deliver into ``events.Event``s.
"""

from __future__ import annotations

from ..storage.records import record


@record(frozen=True)
class HookSpec:
    name: str  # what ``gitspace hooks install NAME`` and ``gitspace hook NAME`` take
    title: str  # how people call the harness
    style: str  # "matchers": {"hooks": {EVENT: [{"matcher", "hooks": [{type, command}]}]}}
    #             (Claude Code, Codex, Gemini CLI); "flat": {"version": 1, "hooks": {EVENT:
    #             [{"command"}]}} (Cursor)
    events: tuple[tuple[str, str | None], ...]  # (event, tool matcher or None)
    files: tuple[tuple[str, str], ...]  # (scope, settings path: relative to the project, or ~/...)
    stdout: str = ""  # what the hook prints on success (some harnesses parse stdout as JSON)
    project_dir: str | None = None  # the variable it sets to its project folder for its hooks
    timeout_unit: int = 1  # how many of the harness's ``timeout`` units make a second (ms: 1000)
    timeouts: tuple[tuple[str, int], ...] = ()  # (event, seconds): where the harness allows less
    # The harness names a call's id only after the call's last hook (Gemini CLI, in its
    # transcript): its op is held until the session's next event, and gets the id then.
    late_ids: bool = False
    # Forking one of its sessions (``gitspace fork``): the module of this package that writes a
    # forked transcript the harness resumes, or None and why not (said, rather than a guess).
    forker: str | None = None
    no_fork: str = ""
    http: bool = False  # it can post an event to a URL (the resident recorder's, in place)

    def path_for(self, scope: str) -> str:
        for known, path in self.files:
            if known == scope:
                return path
        scopes = ", ".join(s for s, _ in self.files)
        from ..errors import BadArguments

        raise BadArguments(f"{self.title} has no {scope!r} settings scope.",
                           hint=f"Use --scope with one of: {scopes}.")

    @property
    def scopes(self) -> tuple[str, ...]:
        return tuple(scope for scope, _ in self.files)
