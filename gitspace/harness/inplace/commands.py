"""What a person runs in their own checkout that in-place recording carries out: turning it on
and off (``gitspace hooks install``/``uninstall``), ``undo --op`` and ``rewind``.

Each goes through the one recorder (``harness/recorder.py``) as an event of its own, so that
every change there (the line's start, an undo's files) has the same lock, journal and catch-up
as a harness's call. Which harnesses record here is a file under the checkout's git dir
(``route.RECORDING``), written without following a link.
"""

from __future__ import annotations

import json

from ...storage.gitrepo import GitRepo
from ..events import Event, Options, Recorded
from ..route import IN_PLACE, RECORDING, record_in, recording
from . import line
from .takeback import Taken, take_back


def set_recording(repo: GitRepo, harness: str, on: bool) -> None:
    names = [h for h in recording(repo.gitdir) if h != harness] + ([harness] if on else [])
    if not names:
        (line.folder(repo.gitdir) / RECORDING.rsplit("/", 1)[-1]).unlink(missing_ok=True)
        return
    line.write_state(repo.gitdir, RECORDING.rsplit("/", 1)[-1],
                     json.dumps({"harnesses": sorted(set(names))}).encode())


def begin(repo: GitRepo, agent: str, options: Options) -> Recorded:
    """Start (or catch up) the line now, as a turn's start would: what ``hooks install`` does,
    so the first call of the harness finds the line ready."""
    return record_in(IN_PLACE, repo, Event("scan", agent, cwd=str(repo.root)), options)


def undo_op(repo: GitRepo, op_id: str, options: Options) -> Taken:
    """``gitspace undo --op`` in the person's checkout: work-tree files only (takeback.py)."""
    return _take_back(repo, Event("undo", "gitspace", cwd=str(repo.root), extra={"op": op_id}),
                      options)


def rewind(repo: GitRepo, target: str, every_file: bool, options: Options,
           session: str | None = None) -> Taken:
    """``gitspace rewind TURN|OP [--all] [--session S]`` in the person's checkout."""
    return _take_back(repo, Event("rewind", "gitspace", cwd=str(repo.root), extra={
        "target": target, "all": every_file, "session": session}), options)


def _take_back(repo: GitRepo, event: Event, options: Options) -> Taken:
    taken = record_in(IN_PLACE, repo, event, options, act=take_back).taken
    assert isinstance(taken, Taken)
    return taken
