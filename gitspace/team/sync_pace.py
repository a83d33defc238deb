"""Whose turn it is to push: fairness for a fleet on one branch with nothing but pushes and
fetches (a git host offers no lock and no queue). docs/fleet.md has the argument in full.

A round is one clone's try: read the remote's refs, bring its new ops here and re-run this
clone's unpushed ops on them, push. The host lets a push land only if the branch is still at
the tip that round read, so of the rounds that overlap, one lands and the others lose. Left
alone, the clone that just won wins again (its next push is a fast forward, while the losers
still fetch and re-run), and one clone can lose round after round. The rules, each applied by a
clone to what it has seen itself:

- **A loser is owed a turn.** A clone whose last push lost (or that has not pushed yet) tries
  again at once, after a jitter of at most ``JITTER`` of its round: never a backoff that grows
  with the rounds lost, which is what starves a loser.
- **A winner yields, the clone that waited longest first.** A clone whose last push landed
  starts its next full round only once the remote's tip has stayed unchanged for ``quiet()`` of
  its rounds, never less than ``QUIET_MIN``: that round of quiet is what lets a clone owed a
  turn land first. Which waiting clone goes first comes from its ``cycle``: the other clones'
  landings it saw between its last two wins (the clones that take a turn between two of its
  own). Once it has seen that many landings since its win, each of them has gone again and its
  quiet is ``QUIET_MIN``; for each landing it still waits for, ``QUIET_STEP`` more. So a busy
  fleet goes round robin, each landing the signal for the next clone in line, a round of quiet
  apart. A cycle grows at once and shrinks by one a turn, and the landings a clone loses to
  after its turn's first loss are not counted (they are that race's owed clones): a miscount
  errs on the side of waiting. Without a cycle (alone, just joined): ``QUIET`` after its own
  landing (its landing counts as first seeing its tip), ``QUIET_STEP`` less for each other
  clone's landing it has seen since (and ``QUIET_MIN`` when it won without losing, or seeing
  another clone land, since its last win: alone).
- **A waiting clone only looks**: it reads the remote's tip every ``PEEK`` of its rounds, and
  every ``PEEK_NEXT`` when it is next in line, so that it sees each landing soon; nothing is
  fetched or re-run while it waits.
- **Yielding is capped** at ``cap()`` rounds after the win (``CAP``, or two cycles when that is
  longer), so pushes that follow no such rules (a person's plain ``git push``) cannot hold a
  clone back for ever.

The bound, in short: let a clone Z be owed when another clone's push L lands at time t. Z's
next round reads L's tip and lands by t + 2 of Z's rounds (t + 1.5 on average: its refused
push came between t and a round later), unless another push lands first. A waiting clone W
sees L's tip no earlier than t, waits at least ``QUIET_MIN`` of its rounds of quiet and then
runs a full round, so it lands no earlier than t + 2 of W's rounds: after Z, for rounds of about
the same length. So every landing while Z is owed is by a clone that was itself owed, each
lands once (then it waits too), and Z loses at most N-1 rounds in a row in a fleet of N, while
those landings fit in the cap. (A quiet of no rounds for the clone whose cycle has come round
would make the fleet faster and break this: measured, an owed clone left out of the others'
cycles lost 19 rounds in a row.)

``round_s`` is this clone's own measure of a full round, one that re-runs ops as a loser's
does (a moving average from reading the remote's refs to its push answered; a fast forward,
which a winner's next push often is, does not count): the rules scale with the host, tens of
milliseconds to a local ``git daemon``, a second or more to a busy one. Times are wall-clock
seconds, so separate ``gitspace sync`` processes of one checkout share them (``sync_state``
keeps a ``Pace`` per remote branch).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Protocol

ROUND = 0.25  # seconds: the first guess at a round, before one is measured
ROUND_MIN, ROUND_MAX = 0.01, 10.0
CYCLE_MAX = 64  # landings: a cycle read back from a file is held to this (a bigger fleet splits)
NUMBER_MAX = 2 ** 53  # any number read back from a file (seconds since 1970, counts): far more
WEIGHT = 0.25  # of a new round in the moving average
PEEK_NEXT = 0.2  # rounds between looks of the clone next in line (``next_up``)
QUIET = 2.5  # rounds of quiet a clone waits after its own landing before its turn round
QUIET_STEP = 0.5  # rounds less for each other clone's landing it has seen since
QUIET_MIN = 1.0  # rounds of quiet it waits at least (or when it was alone last time)
PEEK = 0.5  # rounds between the other waiting clones' looks at the remote's tip
JITTER = 0.05  # at most this share of a round before a loser tries again
CAP = 10.0  # rounds after its win that a clone yields at most (or two cycles)
FULL_PER_FAST = 2.5  # a full round (fetch, re-run, push) against a fast forward (read, push)
SOON = 0.001  # seconds: a turn this close is now


class Random(Protocol):
    """Where jitter comes from: the ``random`` module, or a seeded ``random.Random``."""

    def uniform(self, a: float, b: float) -> float: ...


@dataclass
class Pace:
    """What one clone knows about its turns on one remote branch."""

    round_s: float = ROUND  # full rounds, as measured
    fast_s: float = ROUND / FULL_PER_FAST  # fast-forward rounds, as measured
    owed: bool = True  # its last push lost, or it has not pushed: it may push at once
    lost: int = 0  # rounds lost in a row
    won_at: float | None = None  # when its last push landed
    won_tip: str | None = None  # the tip that push made
    seen_tip: str | None = None  # the remote's tip at its last read...
    seen_since: float | None = None  # ...and the first time it saw that tip (or won_at)
    landings: int = 0  # other clones' pushes seen landing since its last win
    alone: bool = False  # no other clone's push landed, nor did it lose, since its last win
    cycle: int = 0  # other clones' landings it saw between its last two wins (see ``won``)
    counted: int | None = None  # the landings it had seen when its turn first lost since a win,
    # with the one it lost to

    def observe(self, tip: str | None, now: float) -> None:
        """Note the remote's tip as read at ``now``."""
        if tip == self.seen_tip and self.seen_since is not None:
            return
        if tip == self.won_tip and self.won_at is not None:
            self.seen_since = self.won_at
        else:
            self.seen_since = now
            if self.seen_tip is not None or self.won_at is not None:
                self.landings += 1  # someone else's push landed
        self.seen_tip = tip

    def turn(self, now: float) -> float:
        """Seconds until this clone may push (0: now), given the remote as last observed."""
        if self.owed or self.won_at is None:
            return 0.0
        since_win, round_s = now - self.won_at, self.round()
        cap = self.cap() * round_s
        if not 0 <= since_win < cap:  # (a clock set back counts as long ago)
            return 0.0
        quiet = max(0.0, now - (self.seen_since if self.seen_since is not None else now))
        wait = min(self.quiet() * round_s - quiet, cap - since_win)
        return wait if wait >= SOON else 0.0  # a float's dust is not worth a pause

    def quiet(self) -> float:
        """Rounds the remote's tip must stay unchanged before this clone's turn: with a cycle,
        ``QUIET_MIN`` once it has come round and ``QUIET_STEP`` more for each landing it still
        waits for (the next in line first); without one, the more other clones' landings it has
        seen since its own, the fewer."""
        if self.cycle:
            return QUIET_MIN + QUIET_STEP * max(0, self.cycle - self.landings)
        if self.alone:
            return QUIET_MIN
        return max(QUIET_MIN, QUIET - QUIET_STEP * self.landings)

    def cap(self) -> float:
        """Rounds after its win that this clone yields at most."""
        return max(CAP, 2.0 * self.cycle)

    def next_up(self) -> bool:
        """Whether it is next in line: its cycle has come round, or will with the next landing."""
        return self.cycle > 0 and self.landings >= self.cycle - 1

    def rivals(self) -> bool:
        """Whether other clones push here lately (it lost, or saw one land, since its win): a
        round then reads the tip again just before pushing, and leaves out a push that would
        lose."""
        return self.lost > 0 or self.landings > 0

    def next_look(self, now: float) -> float:
        """Seconds until this clone should read the remote's tip again while it waits for its
        turn (0: its turn is now): the turn, or sooner, so that it sees each landing (next in
        line, soon after it lands)."""
        return min(self.turn(now), (PEEK_NEXT if self.next_up() else PEEK) * self.round())

    def round(self) -> float:
        """What a full round costs now: as measured, or as the fast forwards measured lately
        imply (a clone that only wins measures those alone, and they follow the host's load)."""
        return max(self.round_s, FULL_PER_FAST * self.fast_s)

    def won(self, tip: str, now: float, took: float, full: bool) -> None:
        """This clone's push landed at ``now`` after a round of ``took`` seconds (``full``: it
        re-ran ops, as a loser's round does; a fast forward is no measure of that)."""
        if full:
            self.measure(took)
        else:
            self.fast_s = _average(self.fast_s, took)
        self.alone = not self.landings and not self.lost
        # The landings before its turn and the one it first lost to: those it loses to after are
        # the owed clones of that race, which it would otherwise count again and again (the cycle
        # grows at once, shrinks a turn at a time).
        seen = self.landings if self.counted is None else self.counted
        self.cycle, self.counted = min(CYCLE_MAX, max(0, seen, self.cycle - 1)), None
        self.landings = 0
        self.owed, self.lost = False, 0
        self.won_at, self.won_tip = now, tip
        self.seen_tip, self.seen_since = tip, now

    def lost_round(self, now: float, took: float) -> None:
        """This clone's push lost its race (another clone's landed first)."""
        self.measure(took)
        if self.counted is None:
            self.counted = self.landings + 1
        self.owed = True
        self.lost += 1

    def retry_pause(self, rng: Random) -> float:
        """The jitter before a loser tries again."""
        return rng.uniform(0.0, JITTER * self.round())

    def measure(self, took: float) -> None:
        """A full round took ``took`` seconds."""
        self.round_s = _average(self.round_s, took)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: object) -> Pace:
        """A ``Pace`` from what ``as_json`` wrote; anything malformed starts afresh."""
        if not isinstance(data, dict):
            return cls()
        pace = cls()
        for name, kinds in _KINDS.items():
            value = data.get(name, getattr(pace, name))
            if isinstance(value, bool) != (bool in kinds) or not isinstance(value, kinds) or (
                    isinstance(value, int | float) and not abs(value) <= NUMBER_MAX):
                return cls()  # (NaN fails the bound too; a huge integer would overflow a float)
            setattr(pace, name, value)
        pace.round_s = min(ROUND_MAX, max(ROUND_MIN, float(pace.round_s)))
        pace.fast_s = min(ROUND_MAX, max(ROUND_MIN, float(pace.fast_s)))
        pace.cycle = min(CYCLE_MAX, max(0, pace.cycle))
        if pace.counted is not None:
            pace.counted = min(CYCLE_MAX, max(0, pace.counted))
        pace.lost, pace.landings = (min(NUMBER_MAX, max(0, n)) for n in (pace.lost, pace.landings))
        return pace


def _average(mean: float, took: float) -> float:
    return (1 - WEIGHT) * mean + WEIGHT * min(ROUND_MAX, max(ROUND_MIN, took))


_TIME = (int, float, type(None))
_KINDS: dict[str, tuple[type, ...]] = {
    "round_s": (int, float), "fast_s": (int, float), "owed": (bool,), "lost": (int,), "won_at": _TIME,
    "won_tip": (str, type(None)), "seen_tip": (str, type(None)), "seen_since": _TIME,
    "landings": (int,), "alone": (bool,), "cycle": (int,), "counted": (int, type(None))}
