"""The turns a harness's hooks marked, as people name them: a session and its turn number.

A turn's mark is named ``<agent>-<8 of its session>-turn-<n>`` (``naming.turn_name``): a
checkpoint in a workspace gitspace owns, a ref under ``refs/gitspace/turns/`` in a person's own
checkout. Its number counts the turns of that one session, so a turn is always named with its
session (``s-84836b81 turn 2``, ``storage/ids.py``), and a bare number means the latest
session's turn, said as such.

Invariant: reads only (refs, tags and commit times); what a person types is checked here and
handed to the rewind of the place (``rewind.py`` in a workspace, ``inplace/commands.rewind`` in place)
as the one mark it names.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core import linerefs
from ..core.workspace import Workspace
from ..errors import BadArguments, NotFound
from ..storage import ids
from ..storage.gitrepo import GitRepo
from . import naming, rewind, state
from .naming import TURN


@dataclass(frozen=True)
class Turn:
    mark: str  # the checkpoint, or the ref's name under refs/gitspace/turns/
    prefix: str  # <agent>-<8 of the session>: one session
    number: int
    commit: str
    time: int
    message: str = ""

    @property
    def session(self) -> str:
        """The session's short form, as every listing shows it (``s-84836b81``)."""
        return ids.SESSION_PREFIX + self.prefix.rsplit("-", 1)[-1]

    @property
    def name(self) -> str:
        """How the turn is named to people: ``s-84836b81 turn 2``."""
        return f"{self.session} turn {self.number}"


def listed(ws: Workspace, in_place: bool) -> list[Turn]:
    """Every turn marked here, grouped by session (the session whose first turn came first
    leads), each session's in its order."""
    found = in_place_marks(ws.repo) if in_place else [
        Turn(t.name, t.prefix, t.number, t.commit, t.time, t.message) for t in rewind.turns(ws)]
    first: dict[str, int] = {}
    for t in sorted(found, key=lambda t: t.time):
        first.setdefault(t.prefix, t.time)
    return sorted(found, key=lambda t: (first[t.prefix], t.prefix, t.number, t.time))


def in_place_marks(repo: GitRepo) -> list[Turn]:
    """The turns marked in a person's own checkout (refs under ``refs/gitspace/turns/``)."""
    found = []
    for ref, tip, _ in repo.refs(linerefs.TURNS.rstrip("/")):
        name = ref[len(linerefs.TURNS):]
        m = TURN.fullmatch(name)
        if m is not None:
            when = int(repo.commit(tip).committer.rsplit(" ", 2)[1])
            found.append(Turn(name, m.group("prefix"), int(m.group("number")), tip, when))
    return found


def latest(repo: GitRepo, turns: list[Turn]) -> str:
    """The prefix of the session that marked a turn last: by the hook's own note of each
    session (to the nanosecond the system keeps), else by the marks' times (seconds)."""
    seen = {f"{naming.plain_name(k.agent)}-{naming.plain_name(ids.session_body(k.session))}":
            k.when for k in state.sessions(repo.gitdir)}
    return max(turns, key=lambda t: (seen.get(t.prefix, 0.0), t.time)).prefix


def pick(turns: list[Turn], number: int, session: str | None, newest: str | None = None) -> Turn:
    """Turn ``number`` of ``session`` (any form of its id), or of the latest session
    (``newest``: its prefix, as ``latest`` finds it)."""
    if not turns:
        raise NotFound("No turns are recorded here.",
                       hint="The hooks mark each turn's end: 'gitspace hooks install "
                            "claude-code'. 'gitspace rewind' lists the turns there are.")
    current = newest or max(turns, key=lambda t: t.time).prefix
    prefix = _session(turns, session) if session else current
    mine = [t for t in turns if t.prefix == prefix]
    chosen = [t for t in mine if t.number == number]
    if chosen:
        return chosen[-1]
    label = mine[0].session
    have = ", ".join(str(n) for n in sorted({t.number for t in mine}))
    others = sorted({t.session for t in turns if t.number == number and t.prefix != prefix})
    which = "" if session else " (the latest session)"
    hint = (f"Session {others[0]} has a turn {number}: gitspace rewind {number} --session "
            f"{others[0]}" if others else "'gitspace rewind' lists every session's turns.")
    raise NotFound(f"Session {label}{which} has no turn {number}; its turns are {have}. Turns "
                   "are counted in each session.", hint=hint)


def _session(turns: list[Turn], text: str) -> str:
    """The one session among ``turns`` that ``text`` names (its prefix)."""
    part = ids.session_part(text)
    sessions = {t.prefix: t.session for t in turns}
    hits = [p for p, short in sessions.items() if part in (p, short) or _names(part, p)]
    if len(hits) == 1:
        return hits[0]
    listed_ = ", ".join(sorted(sessions.values()))
    if hits:
        raise BadArguments(f"{text!r} could name {len(hits)} sessions: "
                           f"{', '.join(sorted(sessions[h] for h in hits))}.",
                           hint="Give more of the session id.")
    raise NotFound(f"No turns are recorded here for session {text}.",
                   hint=f"Sessions with turns here: {listed_}.")


def _names(part: str, prefix: str) -> bool:
    """Could ``part`` (a session as typed, without ``s-``) be the session of ``prefix``: the
    8 characters the mark carries, a start of them, or a whole id they are part of?"""
    body = prefix.rsplit("-", 1)[-1]
    return len(part) >= 4 and (body.startswith(part) or part.startswith(body)
                               or part.endswith(body))
