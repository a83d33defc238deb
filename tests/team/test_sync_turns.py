"""Sync's retry loop and turns, pinned down: races staged between real clones of a real git
server (tests/gitserver.py), at chosen steps of a sync, with a clock and a pause the test owns,
so every pause a sync takes, and why, is checked exactly.

The rules (gitspace/team/sync_pace.py): a loser tries again after a jitter of at most a twentieth
of its round, never a growing backoff; a winner's next full round starts only once the remote has
been quiet for at least ``QUIET_MIN`` of its rounds: ``QUIET_MIN`` once its cycle (the landings it
saw between its last two wins) has come round, half a round more for each landing it still waits
for; without a cycle ``QUIET``, half a round less for each landing seen (``QUIET_MIN`` alone);
while it waits it only reads the remote's tip, twice a round (five times when it is next in
line); with rivals about, a round reads the tip again before pushing and leaves out a push that
would lose; nothing waits more than ``CAP`` rounds (or two cycles) after its win.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import assert_clean, call_ok, git, state
from fleet import assert_never_forced, machine, remote_ops, seed
from gitserver import GitServer

import gitspace
from gitspace.errors import BadArguments
from gitspace.team import sync_pace, sync_state
from gitspace.team.sync import SyncBusy, Synced, sync
from gitspace.team.sync_pace import (
    CAP,
    JITTER,
    PEEK,
    PEEK_NEXT,
    QUIET,
    QUIET_MIN,
    QUIET_STEP,
    ROUND,
    Pace,
)
from gitspace.team.sync_watch import Watch

T0 = time.time() + 3600  # later than the real clock of the seed's sync: its win is long past


class Clock:
    """Wall time for a sync that only moves when the sync pauses (every pause recorded)."""

    def __init__(self) -> None:
        self.now = T0
        self.pauses: list[float] = []

    def __call__(self) -> float:
        return self.now

    def pause(self, seconds: float) -> None:
        assert seconds >= 0
        self.pauses.append(seconds)
        self.now += seconds


class Fixed:
    """Jitter that always draws the same fraction of its range."""

    def __init__(self, fraction: float) -> None:
        self.fraction = fraction

    def uniform(self, a: float, b: float) -> float:
        return a + (b - a) * self.fraction


def timed_sync(ws: gitspace.Workspace, clock: Clock, **kwargs: object) -> Synced:
    return sync(ws, clock=clock, pause=clock.pause, rng=Fixed(0.5), **kwargs)  # type: ignore[arg-type]


def land(rival: gitspace.Workspace) -> None:
    """Sync ``rival`` as a clone owed a turn: at once, whatever its own last push was (its turns
    run on the real clock, the test's clone on the test's)."""
    sync_state.save_pace(rival, "origin", "main", Pace())
    sync(rival)


def push_first(rival: gitspace.Workspace, at: str = "push") -> Callable[[str], None]:
    """An ``on_step`` that makes ``rival`` land an op of its own when the sync reaches ``at``
    (once): the sync's push then loses its race."""
    fired = []

    def step(name: str) -> None:
        if name == at and not fired:
            fired.append(name)
            call_ok(rival, "append", {"path": "shared/log.md", "text": f"rival {len(fired)}\n"})
            land(rival)

    return step


def pace_of(ws: gitspace.Workspace) -> Pace:
    return sync_state.load_pace(ws, "origin", "main")


def test_a_lost_race_is_tried_again_after_a_jitter_not_a_backoff(
        tmp_path: Path, git_server: GitServer) -> None:
    a = seed(tmp_path, git_server)
    b = machine(tmp_path, git_server, 1)
    mine = call_ok(a, "append", {"path": "shared/log.md", "text": "mine\n"})
    clock = Clock()
    before = pace_of(a)
    done = timed_sync(a, clock, on_step=push_first(b))
    assert (done.attempts, done.pushes, done.pushed, done.pulled) == (2, 2, 1, 1)
    assert done.waiting == 0 and not done.dropped
    before.measure(0.0)  # the losing round, measured by a clock that did not move
    assert clock.pauses == [pytest.approx(0.5 * JITTER * before.round())]
    pace = pace_of(a)
    assert (pace.owed, pace.lost, pace.won_tip, pace.won_at) == (False, 0, done.tip, clock.now)
    assert pace.landings == 0 and not pace.alone  # it lost before this win: not alone
    assert pace.cycle == 1 and pace.quiet() == QUIET_MIN + QUIET_STEP  # it waits for that clone
    assert [op.op_id for op in remote_ops(git_server)][-1] == mine.op
    assert_clean(a.root)


def test_every_round_lost_gives_up_with_the_ops_kept_and_no_pause_after_the_last(
        tmp_path: Path, git_server: GitServer) -> None:
    a = seed(tmp_path, git_server)
    b = machine(tmp_path, git_server, 1)
    mine = call_ok(a, "append", {"path": "shared/log.md", "text": "mine\n"})
    clock = Clock()

    def rival_always(name: str) -> None:
        if name == "push":
            call_ok(b, "append", {"path": "shared/log.md", "text": "rival\n"})
            land(b)

    with pytest.raises(SyncBusy) as busy:
        timed_sync(a, clock, attempts=3, on_step=rival_always)
    assert busy.value.pushes == 3
    assert "3 round(s)" in busy.value.message and "Your ops are safe here" in busy.value.message
    assert len(clock.pauses) == 2  # between the rounds, not after the last
    pace = pace_of(a)
    assert pace.owed and pace.lost == 3
    assert busy.value.retry_in == pytest.approx(0.5 * JITTER * pace.round())
    assert mine.op not in [op.op_id for op in remote_ops(git_server)]
    done = timed_sync(a, clock)  # owed a turn: it pushes at once
    assert done.pushed == 1 and clock.pauses[2:] == []
    assert mine.op in [op.op_id for op in remote_ops(git_server)]


def test_an_op_landing_here_meanwhile_is_a_round_again_without_a_pause(
        tmp_path: Path, git_server: GitServer) -> None:
    a = seed(tmp_path, git_server)
    b = machine(tmp_path, git_server, 1)
    call_ok(b, "append", {"path": "shared/log.md", "text": "theirs\n"})
    land(b)
    call_ok(a, "append", {"path": "shared/log.md", "text": "mine\n"})
    other = gitspace.open(a.root, agent="agent-0b")
    landed = []

    def op_here(name: str) -> None:
        if name == "move" and not landed:
            landed.append(call_ok(other, "append", {"path": "shared/log.md", "text": "late\n"}))

    clock = Clock()
    done = timed_sync(a, clock, on_step=op_here)
    assert clock.pauses == [] and (done.attempts, done.pushes) == (2, 1)
    assert done.pushed == 2  # the late op went in the same push
    assert [op.op_id for op in remote_ops(git_server)][-1] == landed[0].op
    call_ok(b, "append", {"path": "shared/log.md", "text": "theirs again\n"})
    land(b)
    call_ok(a, "append", {"path": "shared/log.md", "text": "mine again\n"})
    landed.clear()
    sync_state.save_pace(a, "origin", "main", Pace())  # owed a turn, so it does not wait
    with pytest.raises(SyncBusy) as busy:  # with one round allowed, the move is that round
        timed_sync(a, clock, attempts=1, on_step=op_here)
    assert busy.value.pushes == 0 and clock.pauses == []
    other.close()


def test_a_dropped_op_stays_dropped_when_the_push_that_left_it_out_lost(
        tmp_path: Path, git_server: GitServer) -> None:
    a = seed(tmp_path, git_server)
    b = machine(tmp_path, git_server, 1)
    call_ok(b, "append", {"path": "shared/log.md", "text": "theirs\n"})
    land(b)
    gone = call_ok(a, "append", {"path": "shared/log.md", "text": "dropped\n"})
    kept = call_ok(a, "append", {"path": "shared/log.md", "text": "kept\n"})
    clock = Clock()
    done = timed_sync(a, clock, drop=(gone.op,), on_step=push_first(b))
    assert done.attempts == 2 and done.dropped == [(gone.op, gone.commit)]
    on_remote = [op.op_id for op in remote_ops(git_server)]
    assert kept.op in on_remote and gone.op not in on_remote
    with pytest.raises(BadArguments):  # the first round still checks what it was given
        timed_sync(a, clock, drop=(gone.op,))


def test_a_drop_is_checked_and_made_at_once_even_when_it_is_not_the_turn(
        tmp_path: Path, git_server: GitServer) -> None:
    a = seed(tmp_path, git_server)
    clock = Clock()
    call_ok(a, "append", {"path": "shared/log.md", "text": "a1\n"})
    assert timed_sync(a, clock).pushed == 1  # a won just now: its next push waits
    gone = call_ok(a, "append", {"path": "shared/log.md", "text": "dropped\n"})
    kept = call_ok(a, "append", {"path": "shared/log.md", "text": "kept\n"})
    with pytest.raises(BadArguments):
        timed_sync(a, clock, wait=False, drop=("0" * 26,))
    tips = git_server.refs("fleet")
    waiting = timed_sync(a, clock, wait=False, drop=(gone.op,))
    assert waiting.waiting > 0 and waiting.pushes == 0
    assert waiting.dropped == [(gone.op, gone.commit)]
    assert git_server.refs("fleet") == tips
    assert "dropped" not in (a.root / "shared/log.md").read_text()
    assert "kept" in (a.root / "shared/log.md").read_text()
    clock.now += CAP * pace_of(a).round()
    done = timed_sync(a, clock, wait=False)
    assert done.pushed == 1
    on_remote = [op.op_id for op in remote_ops(git_server)]
    assert kept.op in on_remote and gone.op not in on_remote
    assert_clean(a.root)


def test_a_winner_waits_for_quiet_looking_at_the_tip_once_a_round(tmp_path: Path,
                                                                  git_server: GitServer) -> None:
    a = seed(tmp_path, git_server)
    b = machine(tmp_path, git_server, 1)
    clock = Clock()
    call_ok(a, "append", {"path": "shared/log.md", "text": "a1\n"})
    timed_sync(a, clock, on_step=push_first(b))  # lost once, then won
    won = pace_of(a)
    assert won.cycle == 1  # b's landing: b's next would make a's turn at once (tested below)
    won.cycle = 0  # here, the rule for a clone without a cycle (alone, or a fleet changing)
    sync_state.save_pace(a, "origin", "main", won)
    r = won.round()
    clock.now += 0.001
    call_ok(a, "append", {"path": "shared/log.md", "text": "a2\n"})
    tips = git_server.refs("fleet")
    before = state(a.root)
    waiting = timed_sync(a, clock, wait=False)  # QUIET rounds from its own landing: a look
    assert waiting.waiting == pytest.approx(PEEK * r) and PEEK * r < QUIET * r - 0.001
    assert (waiting.pushes, waiting.pushed, waiting.pulled, waiting.attempts) == (0, 0, 0, 0)
    assert git_server.refs("fleet") == tips and state(a.root) == before
    assert len(clock.pauses) == 1  # the jitter after the lost round, none since
    # Another clone lands meanwhile: the quiet starts again from when a sees it, and is half a
    # round shorter (a has waited one landing longer). A look fetches and re-runs nothing.
    clock.now += 0.002
    call_ok(b, "append", {"path": "shared/log.md", "text": "b2\n"})
    land(b)
    again = timed_sync(a, clock, wait=False)
    pace = pace_of(a)
    assert pace.landings == 1 and pace.quiet() == QUIET - QUIET_STEP and pace.rivals()
    assert again.waiting == pytest.approx(PEEK * r)
    assert (again.pulled, again.rebased, again.pushed, again.pushes) == (0, 0, 0, 0)
    assert state(a.root) == before
    pauses = len(clock.pauses)
    done = timed_sync(a, clock)  # wait=True: it looks once a round until the quiet, then goes
    looks = round((QUIET - QUIET_STEP) / PEEK)
    assert clock.pauses[pauses:] == [pytest.approx(PEEK * r, abs=1e-6)] * looks
    assert sum(clock.pauses[pauses:]) == pytest.approx((QUIET - QUIET_STEP) * r)
    assert (done.pushed, done.pulled, done.rebased, done.attempts, done.pushes) == (1, 1, 1, 1, 1)
    assert git_server.refs("fleet")["refs/heads/main"] == a.tip()
    assert_clean(a.root)


def test_a_winner_whose_cycle_came_round_goes_after_the_shortest_quiet(
        tmp_path: Path, git_server: GitServer) -> None:
    a = seed(tmp_path, git_server)
    b = machine(tmp_path, git_server, 1)
    clock = Clock()
    call_ok(a, "append", {"path": "shared/log.md", "text": "a1\n"})
    timed_sync(a, clock, on_step=push_first(b))  # lost to b once, then won: b went between
    won = pace_of(a)
    assert won.cycle == 1 and won.next_up()
    r = won.round()
    clock.now += 0.001
    call_ok(a, "append", {"path": "shared/log.md", "text": "a2\n"})
    tips, before = git_server.refs("fleet"), state(a.root)
    waiting = timed_sync(a, clock, wait=False)  # b's next landing makes its turn: it looks often
    assert waiting.waiting == pytest.approx(PEEK_NEXT * r) and PEEK_NEXT < PEEK
    assert (waiting.pushes, waiting.pushed, waiting.pulled) == (0, 0, 0)
    assert git_server.refs("fleet") == tips and state(a.root) == before
    call_ok(b, "append", {"path": "shared/log.md", "text": "b2\n"})
    land(b)
    pauses = list(clock.pauses)
    done = timed_sync(a, clock)  # b went again: a goes after a round of quiet, the least
    assert sum(clock.pauses[len(pauses):]) == pytest.approx(QUIET_MIN * r, abs=sync_pace.SOON)
    assert all(p <= PEEK_NEXT * r + 1e-9 for p in clock.pauses[len(pauses):])
    assert (done.pushed, done.pulled, done.rebased, done.attempts, done.pushes) == (1, 1, 1, 1, 1)
    assert git_server.refs("fleet")["refs/heads/main"] == a.tip()
    assert pace_of(a).cycle == 1  # one landing again between its wins
    assert_never_forced(git_server)
    assert_clean(a.root)


def test_a_clone_alone_yields_the_shortest_quiet(tmp_path: Path, git_server: GitServer) -> None:
    a = seed(tmp_path, git_server)
    b = machine(tmp_path, git_server, 1)
    clock = Clock()
    call_ok(a, "append", {"path": "shared/log.md", "text": "a1\n"})
    assert timed_sync(a, clock).pushed == 1 and clock.pauses == []  # its last win: long ago
    pace = pace_of(a)
    assert pace.alone and pace.quiet() == QUIET_MIN  # no one landed, it lost nothing, since
    r = pace.round()
    call_ok(a, "append", {"path": "shared/log.md", "text": "a2\n"})
    waiting = timed_sync(a, clock, wait=False)
    assert waiting.waiting == pytest.approx(min(PEEK, QUIET_MIN) * r)
    clock.now += QUIET_MIN * r
    assert timed_sync(a, clock, wait=False).pushed == 1
    # Once another clone lands between two of its wins, it waits for that clone's next landing,
    # or (that clone having nothing to push) for the quiet of the next in line.
    call_ok(b, "append", {"path": "shared/log.md", "text": "b1\n"})
    land(b)
    call_ok(a, "append", {"path": "shared/log.md", "text": "a3\n"})
    clock.now += CAP * r
    assert timed_sync(a, clock).pushed == 1
    pace = pace_of(a)
    assert not pace.alone and pace.cycle == 1 and pace.quiet() == QUIET_MIN + QUIET_STEP
    call_ok(a, "append", {"path": "shared/log.md", "text": "a4\n"})
    pauses = len(clock.pauses)
    assert timed_sync(a, clock).pushed == 1
    assert sum(clock.pauses[pauses:]) == pytest.approx((QUIET_MIN + QUIET_STEP) * pace.round(),
                                                       abs=sync_pace.SOON)
    assert all(p <= PEEK * pace.round() + 1e-9 for p in clock.pauses[pauses:])


def test_with_rivals_a_push_that_would_lose_is_left_out(tmp_path: Path,
                                                        git_server: GitServer) -> None:
    a = seed(tmp_path, git_server)
    b = machine(tmp_path, git_server, 1)
    clock = Clock()
    call_ok(b, "append", {"path": "shared/log.md", "text": "b1\n"})
    land(b)
    call_ok(a, "append", {"path": "shared/log.md", "text": "a1\n"})
    # No rival seen yet (a fresh pace: it never pushed nor lost): its push goes out, and loses.
    sync_state.save_pace(a, "origin", "main", Pace())
    alone = timed_sync(a, clock, on_step=push_first(b, at="move"))
    assert (alone.pushes, alone.attempts, alone.pushed) == (2, 2, 1)
    # Now a has lost once: a rival landing after its read is seen before the push.
    call_ok(b, "append", {"path": "shared/log.md", "text": "b2\n"})
    land(b)
    mine = call_ok(a, "append", {"path": "shared/log.md", "text": "a2\n"})
    sync_state.save_pace(a, "origin", "main", Pace(lost=1))  # owed, with a rival
    checked = timed_sync(a, clock, on_step=push_first(b, at="move"))
    assert (checked.pushes, checked.attempts, checked.pushed) == (1, 2, 1)
    assert [op.op_id for op in remote_ops(git_server)][-1] == mine.op
    # A clone that never pushed but saw another clone land (catching up) has a rival too.
    sync_state.save_pace(a, "origin", "main", Pace())
    call_ok(b, "append", {"path": "shared/log.md", "text": "b3\n"})
    land(b)
    assert timed_sync(a, clock).pulled == 1 and not pace_of(a).rivals()  # its first read
    call_ok(b, "append", {"path": "shared/log.md", "text": "b4\n"})
    land(b)
    call_ok(a, "append", {"path": "shared/log.md", "text": "a3\n"})
    seen = timed_sync(a, clock, on_step=push_first(b, at="move"))
    assert pace_of(a).won_tip == seen.tip
    assert (seen.pushes, seen.attempts, seen.pushed) == (1, 2, 1)
    assert_never_forced(git_server)
    assert_clean(a.root)


def test_nothing_to_push_never_waits_for_a_turn(tmp_path: Path, git_server: GitServer) -> None:
    a = seed(tmp_path, git_server)
    b = machine(tmp_path, git_server, 1)
    clock = Clock()
    call_ok(a, "append", {"path": "shared/log.md", "text": "a1\n"})
    timed_sync(a, clock, on_step=push_first(b))
    call_ok(b, "append", {"path": "shared/log.md", "text": "b1\n"})
    land(b)
    pauses = list(clock.pauses)
    done = timed_sync(a, clock, wait=False)  # a catches up; it has nothing of its own to push
    assert (done.waiting, done.pulled, done.pushes) == (0, 1, 0) and clock.pauses == pauses


# -- the rules themselves, with times chosen by the test -------------------------------------


def test_pace_rules_at_their_edges() -> None:
    pace = Pace()
    assert pace.turn(T0) == 0 and pace.next_look(T0) == 0  # never pushed: owed
    assert pace.round() == pytest.approx(ROUND)
    pace.observe("t1", T0)
    assert pace.landings == 0 and pace.seen_since == T0 and not pace.rivals()
    pace.won("t2", T0 + 1, 0.2, full=True)
    assert pace.round_s == pytest.approx(0.75 * ROUND + 0.25 * 0.2)
    r = pace.round()
    assert r == max(pace.round_s, sync_pace.FULL_PER_FAST * pace.fast_s) and not pace.owed
    assert pace.alone and pace.quiet() == QUIET_MIN  # it won with no one else seen landing
    pace.alone = False  # (as after a win that saw others land)
    assert pace.quiet() == QUIET
    assert pace.turn(T0 + 1) == pytest.approx(QUIET * r)
    assert pace.next_look(T0 + 1) == pytest.approx(PEEK * r)  # a look once a round meanwhile
    assert pace.next_look(T0 + 1 + (QUIET - 0.5) * r) == pytest.approx(0.5 * r)  # or the turn
    assert pace.turn(T0 + 1 + QUIET * r) == 0 and pace.next_look(T0 + 1 + QUIET * r) == 0
    # A fast forward is no measure of a full round, but a slow one raises the estimate.
    full = pace.round_s
    pace.won("t2b", T0 + 2, 0.5, full=False)
    assert pace.round_s == full
    assert pace.fast_s == pytest.approx(0.75 * ROUND / sync_pace.FULL_PER_FAST + 0.25 * 0.5)
    r = pace.round()
    assert r == pytest.approx(sync_pace.FULL_PER_FAST * pace.fast_s) and r > pace.round_s
    assert pace.alone and pace.quiet() == QUIET_MIN
    pace.observe("t2b", T0 + 2.01)  # its own push: quiet since the win
    assert pace.seen_since == T0 + 2 and pace.landings == 0
    pace.observe("t3", T0 + 2.02)  # another clone's push landed
    assert pace.landings == 1 and pace.seen_since == T0 + 2.02 and pace.rivals()
    assert pace.turn(T0 + 2.02) == pytest.approx(QUIET_MIN * r)
    pace.observe("t3", T0 + 2.5)  # the same tip again: still quiet since it was first seen
    assert pace.seen_since == T0 + 2.02 and pace.landings == 1
    # Each landing seen takes QUIET_STEP off the quiet, down to QUIET_MIN; alone only when no
    # one landed between two wins, and not after a lost race.
    pace.won("t4", T0 + 3, 0.0, full=False)
    assert not pace.alone and pace.landings == 0 and pace.cycle == 1
    assert pace.quiet() == QUIET_MIN + QUIET_STEP  # one landing to wait for: next in line
    pace.cycle = 0  # (the quiet rule without a cycle, as for a fleet changing)
    assert pace.quiet() == QUIET
    for n in range(1, 6):
        pace.observe(f"t4-{n}", T0 + 3 + n * 0.001)
        assert pace.landings == n
        assert pace.quiet() == pytest.approx(max(QUIET_MIN, QUIET - QUIET_STEP * n))
    assert pace.quiet() == QUIET_MIN
    r = pace.round()
    seen = T0 + 3.005
    assert pace.turn(seen) == pytest.approx(QUIET_MIN * r)
    assert pace.turn(seen + QUIET_MIN * r - 0.01) == pytest.approx(0.01, abs=1e-6)
    assert pace.turn(seen + QUIET_MIN * r - sync_pace.SOON / 2) == 0  # a float's dust: now
    # Yielding ends CAP rounds after the win, whatever the remote does.
    end = T0 + 3 + CAP * r
    pace.observe("t5", end - 0.02)
    assert pace.turn(end - 0.01) == pytest.approx(0.01, abs=1e-6)
    assert pace.turn(end) == 0
    assert pace.turn(T0 + 0.5) == 0  # a clock set back: the win counts as long ago
    pace.lost_round(T0 + 4, 0.3)
    assert pace.owed and pace.lost == 1 and pace.turn(T0 + 4) == 0 and pace.rivals()
    assert pace.retry_pause(Fixed(1.0)) == pytest.approx(JITTER * pace.round())
    assert pace.retry_pause(Fixed(0.0)) == 0
    pace.lost_round(T0 + 5, 100.0)
    assert pace.lost == 2 and pace.round_s <= sync_pace.ROUND_MAX
    pace.won("t6", T0 + 5.1, 0.1, full=True)
    assert not pace.alone  # it lost since its last win: someone else is pushing
    pace.won("t7", T0 + 5.2, 0.1, full=False)
    assert pace.alone
    pace.measure(0.0)
    assert pace.round_s >= sync_pace.ROUND_MIN


def test_the_cycle_rule_at_its_edges() -> None:
    pace = Pace()
    pace.won("w1", T0, 0.2, full=True)
    assert pace.cycle == 0 and not pace.next_up()  # no landing seen between wins: no cycle
    for n in range(1, 4):
        pace.observe(f"x{n}", T0 + n * 0.01)
    pace.won("w2", T0 + 1, 0.2, full=True)
    assert pace.cycle == 3 and pace.landings == 0 and pace.cap() == CAP
    r = pace.round()
    # The quiet still ends a wait (a clone waited for may have nothing to push): half a round
    # more than QUIET_MIN for each landing its cycle still waits for, the next in line first.
    assert pace.quiet() == QUIET_MIN + 3 * QUIET_STEP
    assert pace.turn(T0 + 1) == pytest.approx((QUIET_MIN + 3 * QUIET_STEP) * r)
    assert not pace.next_up() and pace.next_look(T0 + 1) == pytest.approx(PEEK * r)
    pace.observe("y1", T0 + 1.01)
    assert not pace.next_up() and pace.next_look(T0 + 1.01) == pytest.approx(PEEK * r)
    pace.observe("y2", T0 + 1.02)
    assert pace.next_up() and pace.next_look(T0 + 1.02) == pytest.approx(PEEK_NEXT * r)
    assert pace.quiet() == QUIET_MIN + QUIET_STEP and pace.turn(T0 + 1.02) == pytest.approx(
        (QUIET_MIN + QUIET_STEP) * r)
    assert pace.rivals()  # others land here: the tip is read again before a push
    pace.observe("y3", T0 + 1.03)  # the third: every clone before it went again
    assert pace.quiet() == QUIET_MIN and pace.next_up()  # a round of quiet, for owed clones
    assert pace.turn(T0 + 1.03) == pytest.approx(QUIET_MIN * r)
    assert pace.next_look(T0 + 1.03) == pytest.approx(PEEK_NEXT * r)
    assert pace.turn(T0 + 1.03 + QUIET_MIN * r) == 0
    pace.observe("y4", T0 + 1.04)
    assert pace.quiet() == QUIET_MIN  # more than its cycle: still first in line
    # A cycle grows at once and shrinks by one a turn: a miscount errs on the side of waiting.
    pace.won("w3", T0 + 2, 0.2, full=True)
    assert pace.cycle == 4
    pace.observe("z1", T0 + 2.01)
    pace.won("w4", T0 + 3, 0.2, full=True)
    assert pace.cycle == 3
    pace.won("w5", T0 + 4, 0.2, full=True)
    assert pace.cycle == 2 and pace.alone  # no one between: alone, the cycle shrinking
    for n in range(1, 8):
        pace.observe(f"v{n}", T0 + 4 + n * 0.01)
    pace.won("w6", T0 + 5, 0.2, full=True)
    assert pace.cycle == 7 and pace.cap() == 2 * 7 > CAP  # yields up to two cycles
    r = pace.round()
    for n in range(1, 7):  # six landings: one short of its cycle, the remote never quiet
        pace.observe(f"u{n}", T0 + 5 + 2.3 * n * r)
    assert pace.turn(T0 + 5 + 13.9 * r) > 0 and pace.turn(T0 + 5 + 14 * r) == 0
    # An owed clone goes at once whatever its cycle.
    pace.lost_round(T0 + 6, 0.2)
    pace.observe("u7", T0 + 6.01)  # its cycle has come round too, but it lost: a race is on
    assert pace.landings >= pace.cycle and pace.turn(T0 + 6.01) == 0 and pace.rivals()
    # Landings it loses to after its turn's first loss are owed clones of that race, not more
    # of the cycle: counted once, with the landing that beat it.
    fresh = Pace()
    fresh.won("s1", T0, 0.2, full=True)
    fresh.observe("s2", T0 + 0.1)
    fresh.observe("s3", T0 + 0.2)
    fresh.lost_round(T0 + 0.3, 0.2)
    for n in range(4, 8):
        fresh.observe(f"s{n}", T0 + n * 0.1)
        fresh.lost_round(T0 + n * 0.1 + 0.05, 0.2)
    assert fresh.landings == 6 and fresh.counted == 3
    fresh.won("s8", T0 + 1, 0.2, full=True)
    assert fresh.cycle == 3 and fresh.counted is None
    # A cycle read back from a file is held to what a fleet on one branch can be.
    assert Pace.from_json({**pace.as_json(), "cycle": -3}).cycle == 0
    assert Pace.from_json({**pace.as_json(), "cycle": 10**9}).cycle == sync_pace.CYCLE_MAX
    assert Pace.from_json({**pace.as_json(), "cycle": "3"}) == Pace()
    assert Pace.from_json({**pace.as_json(), "counted": -7}).counted == 0
    assert Pace.from_json({**pace.as_json(), "counted": 10**9}).counted == sync_pace.CYCLE_MAX
    assert Pace.from_json({**pace.as_json(), "counted": 1.5}) == Pace()
    assert Pace.from_json(pace.as_json()) == pace


def test_a_malformed_pace_file_starts_afresh(tmp_path: Path, git_server: GitServer) -> None:
    a = seed(tmp_path, git_server)
    path = a.writer.state_dir / sync_state.PACE
    good = Pace(owed=False, lost=2, won_at=T0, won_tip="x" * 40)
    assert Pace.from_json(good.as_json()) == good
    for bad in ([], {"origin/main": {"won_at": "soon"}}, {"origin/main": {"owed": 1}},
                {"origin/main": {"alone": 0}}, {"origin/main": {"landings": 1.5}},
                {"origin/main": {"lost": True}}, {"origin/main": {"round_s": float("nan")}},
                {"origin/main": []}):
        path.write_text(json.dumps(bad))
        assert pace_of(a) == Pace()
    path.write_text("{not json")
    assert pace_of(a) == Pace()
    call_ok(a, "append", {"path": "shared/log.md", "text": "still syncs\n"})
    assert sync(a).pushed == 1
    assert pace_of(a).won_tip == a.tip()


# -- the watch's rounds ----------------------------------------------------------------------


def test_the_watch_runs_one_round_at_a_time_and_knows_when_the_next_is_due(
        tmp_path: Path, git_server: GitServer) -> None:
    a = seed(tmp_path, git_server)
    b = machine(tmp_path, git_server, 1)
    now = [0.0]
    watch = Watch(a, "origin", every=5.0, clock=lambda: now[0], wall=lambda: T0 + now[0])
    assert watch.due()  # nothing run yet
    assert watch.step().kind == "current" and not watch.due()
    call_ok(a, "append", {"path": "shared/log.md", "text": "a1\n"})
    assert watch.due()  # an op landed here
    first = watch.step()
    assert first.kind == "synced" and first.pushes == 1 and first.synced is not None
    call_ok(b, "append", {"path": "shared/log.md", "text": "b1\n"})
    land(b)
    call_ok(a, "append", {"path": "shared/log.md", "text": "a2\n"})
    waiting = watch.step()  # a won last and has now seen b land: not its turn, a look
    assert pace_of(a).landings == 1
    assert pace_of(a).alone  # its win came with no one else landing: the shortest quiet
    assert waiting.kind == "waiting" and waiting.queued == 1 and waiting.pushes == 0
    assert waiting.synced is not None and waiting.synced.pulled == 0 and not watch.due()
    assert "looks again in" in waiting.text
    call_ok(a, "append", {"path": "shared/log.md", "text": "a3\n"})
    assert not watch.due()  # ops made while waiting queue up for the turn
    looks = 0
    while True:  # a look once a round until the quiet has lasted
        now[0] += waiting.synced.waiting
        assert watch.due()
        turn = watch.step()
        if turn.kind != "waiting":
            break
        assert turn.synced is not None and turn.pushes == 0
        waiting, looks = turn, looks + 1
    assert looks == round(QUIET_MIN / PEEK) - 1
    # the remote stayed quiet: one push carries both ops
    assert turn.kind == "synced" and turn.synced is not None and turn.synced.pushed == 2
    assert turn.pushes == 1 and watch.queued("main") == 0
    now[0] += 5.0
    assert watch.due()  # every `every` seconds, to bring other clones' ops


def rival_lands_inside_the_next_push(tmp_path: Path, server: GitServer,
                                     rival: gitspace.Workspace) -> None:
    """Another clone's op lands on the server's branch while the next push to it is being
    received (after that push read the branch, before it moves it): that push loses its race.
    The rival's op waits on a branch of its own; the server's hook moves the branch to it."""
    call_ok(rival, "append", {"path": "shared/log.md", "text": "rival\n"})
    git(rival.root, "push", "-q", "origin", "HEAD:refs/heads/rival")
    bare = server.path("fleet")
    hook = bare / "hooks" / "pre-receive"
    mark = tmp_path / "rival-pending"
    mark.touch()
    hook.write_text(
        "#!/bin/sh\ncat >/dev/null\n"
        f"if [ -e '{mark}' ]; then rm '{mark}'\n"
        "  env -u GIT_QUARANTINE_PATH -u GIT_OBJECT_DIRECTORY -u GIT_ALTERNATE_OBJECT_DIRECTORIES "
        "git update-ref refs/heads/main refs/heads/rival\nfi\n")
    hook.chmod(0o755)


def test_the_watch_tries_a_lost_round_again_after_its_jitter(
        tmp_path: Path, git_server: GitServer) -> None:
    a = seed(tmp_path, git_server)
    b = machine(tmp_path, git_server, 1)
    now = [0.0]
    watch = Watch(a, "origin", every=5.0, clock=lambda: now[0], wall=lambda: T0 + now[0])
    call_ok(a, "append", {"path": "shared/log.md", "text": "a1\n"})
    rival_lands_inside_the_next_push(tmp_path, git_server, b)
    lost = watch.step()
    assert lost.kind == "lost" and lost.pushes == 1 and lost.queued == 1
    assert "lost their race" in lost.text
    assert not watch.due()
    pace = pace_of(a)
    assert pace.owed and pace.lost == 1
    now[0] += JITTER * pace.round()
    assert watch.due()
    turn = watch.step()
    assert turn.kind == "synced" and turn.synced is not None
    assert (turn.synced.pulled, turn.synced.pushed) == (1, 1) and watch.queued("main") == 0
    assert_never_forced(git_server)
