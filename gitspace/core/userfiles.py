"""Files of the user's that no op overwrites or commits: untracked and ignored ones.

Invariants (docs/trust.md "What gitspace never touches"):
- A file the op's tree does not hold, at a path ``.gitignore`` excludes, is the user's: an op
  that would write, delete or commit it (committing what was there first, as an outside edit,
  would put a secret kept in an ignored ``.env`` on the branch) is refused, changing nothing.
- An op that moves the work tree to another tree (restore, rewind, undo, redo: ``Txn.moves``)
  is refused, as git refuses a checkout, when a path it writes or deletes holds an untracked
  file: the user did not name that file, so it is not theirs to lose into history.
- Files the tree holds are gitspace's to change (as are their outside edits, committed first);
  so are paths where nothing stands, and everything in a private repository (replay's scratch,
  where every file came from the history or its re-run). Only the paths an op touches are asked about, in one
  ``git check-ignore`` process, and only when one of them holds a file the tree lacks.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from ..errors import Conflict
from ..storage.gitrepo import GitRepo
from ..storage.objects import Entry

State = tuple[bytes, int] | None


def ignored(repo: GitRepo, paths: Iterable[str], *, untracked: bool = False) -> set[str]:
    """Which of ``paths`` git ignores (tracked files never are), in one git process.
    ``untracked``: the caller knows none of them is tracked, so git need not read the index
    (100,000 entries of it, in a person's large checkout)."""
    wanted = sorted(set(paths))
    if not wanted:
        return set()
    data = b"".join(os.fsencode(p) + b"\0" for p in wanted)
    proc = repo.run_git("--no-optional-locks", "check-ignore", *(["--no-index"] if untracked
                                                                 else []), "--stdin", "-z",
                        input=data)
    if proc.returncode not in (0, 1):  # 1: none ignored; anything else: we could not tell
        return set()
    return {os.fsdecode(p) for p in proc.stdout.split(b"\0") if p}


def refuse_over(repo: GitRepo, disk: Mapping[str, State], recorded: Mapping[str, Entry | None],
                writes: Mapping[str, State], *, moves: bool, doing: str) -> None:
    """Refuse (Conflict) an op whose paths hold a file of the user's: ``disk`` is what each
    path it read holds, ``recorded`` what the op's tree holds there, ``writes`` what it stages."""
    if repo.private:
        return  # replay's scratch: every file in it came from the history or its re-run
    theirs = [rel for rel, state in disk.items()
              if state is not None and recorded.get(rel) is None]
    if not theirs:
        return
    secret = sorted(ignored(repo, theirs))
    if secret:
        raise Conflict(
            f"{doing} would overwrite or commit {_some(secret)}, ignored by .gitignore: a file of "
            "yours, which gitspace neither records nor replaces. Nothing was changed.",
            hint=f"Move {secret[0]} away (or stop ignoring it and record it with 'gitspace "
                 "snapshot' if it belongs in history), then run it again.")
    overwritten = sorted(rel for rel in theirs if moves and writes.get(rel) != disk[rel])
    if overwritten:
        raise Conflict(
            f"{doing} would overwrite {_some(overwritten)}, untracked: a file of yours no op "
            "recorded. Nothing was changed.",
            hint=f"Move {overwritten[0]} away, or record it first with 'gitspace snapshot', "
                 "then run it again.")


def _some(paths: list[str]) -> str:
    shown = ", ".join(paths[:5])
    return shown + (f" (and {len(paths) - 5} more)" if len(paths) > 5 else "")
