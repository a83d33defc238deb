"""Recording a harness's calls in a person's own checkout, where nothing of theirs moves.

How the line starts and follows the person: ``line.py``. What differs from a workspace gitspace
owns (``harness/owned.py``), and why:

- **Nothing of the person's is written**: not ``.git/index`` (git runs against a private index,
  ``storage/privateindex.py``), not HEAD, a branch, the stash, a tag or a work-tree file (but
  what an undo or rewind they asked for writes). Objects go into their object store, the line
  and turn refs under ``refs/gitspace/``, everything else under ``<git dir>/gitspace/``.
- **What is read**: the files a file tool names, before and after it runs; for a scan (a shell
  command's end, a turn's start or end, catching up) the paths one ``git status`` against the
  private index reports, and the paths the line changed since that index was last brought up to
  date. Never a file over the size cap (refused before it is opened), never one a filter owns
  (Git LFS: its smudged content), never an ignored one the line does not already track, never
  an excluded one (``core/exclude.py``).
- **Bounded cost**: a file tool's call reads its own files and the trees on their paths, and
  starts one ``git ls-files`` per file in its before hook (is it ignored, or a filter's?). A
  shell command costs one ``git status`` (at its end) plus the commit; the private index is
  rewritten only at a turn's start and end (``SYNC_AT``).
- **The person's own edits** go first as an ``external`` op by their git identity, exactly as
  git resolves it; a shell command's before hook keeps only the moment it started, since a
  status there would list all their uncommitted work (a file both the person and the command
  changed since the last scan is the command's: a scan cannot split one file).
- **Turns end at a mark** under ``refs/gitspace/turns/``, which no push or clone carries.
- **Crashes**: the line's ref moves by compare-and-swap after every object is written; the
  private index is brought up to date after the ref moved, and the model (``line.Model``) last.
  A hook killed anywhere leaves a mark of its process, and the next call, finding the process
  gone, scans first, so what the killed call saw is recorded then, as the person's.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ...core.linerefs import TURNS
from ...errors import GitspaceError, LockTimeout, NotFound
from ...storage import ledger, lockfile, privateindex
from ...storage.gitrepo import GitRepo
from ...storage.objects import Entry, Signature
from .. import state
from ..events import Options
from ..naming import title, turn_name
from ..recorder import Place, Recorder
from . import line

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ...core.writer import Writer
    from ..recorder import Found

# The private index is brought up to date at a turn's start and end, and by a scan that found
# more than this many paths to look at: git rewrites a whole index file to change one entry, so
# a shell command's scan leaves it be (its paths are looked at again, a few, until then).
SYNC_AT = 256


class InPlace(Place):
    """The line beside a person's branch as the place of a harness's ops."""

    def __init__(self, repo: GitRepo, options: Options) -> None:
        from ...core.writer import Writer

        self.repo, self.options = repo, options
        self.writer: Writer = Writer(repo)  # (its folder, <git dir>/gitspace: never a link)
        self.index = privateindex.path(repo.gitdir)
        self.starting = False  # no model yet: this scan's outside changes start the line
        self.known_at = ""  # the tree the private index holds
        self._person: tuple[Signature, str] | None = None

    # -- the lock ----------------------------------------------------------------------------

    @contextmanager
    def locked(self, timeout: float) -> Iterator[str | None]:
        busy = LockTimeout(f"Another gitspace hook held {self.writer.state_dir / 'lock'} for "
                           f"{timeout:.0f} s.", hint="The next call records this one.")
        mark = _mark_running(self.repo.gitdir)  # a hook killed from here on leaves it
        try:
            # The writer's lock: a change of the line a killed hook cut short (an undo's
            # files) is finished from its journal first.
            with self.writer.locked(timeout, busy):
                yield _killed(self.repo.gitdir, mark)
        finally:
            mark.unlink(missing_ok=True)

    # -- where the ops go --------------------------------------------------------------------

    def start(self, rec: Recorder) -> None:
        repo = self.repo
        loaded = line.load(repo.gitdir)
        self.here = here = line.carry(self.writer, loaded, line.where(repo))
        if loaded is not None and here.ref != loaded.ref and here.tip == loaded.tip:
            loaded = line.Model(here.ref, loaded.tip, loaded.base, loaded.index_at, loaded.stash)
        self.model = model = self._model(loaded, here)
        self.stash = repo.read_ref("refs/stash")
        if model is not None and model.stash != self.stash:
            rec.moved = True
        if line.continues(model, here):
            assert model is not None
            rec.parent, rec.tree = model.tip, repo.commit(model.tip).tree
            return
        rec.parent = here.tip or here.head
        rec.tree = repo.commit(rec.parent).tree
        if model is None:
            self.starting = True  # the scan finds the work tree; the follow op is made then
            return
        self._follow(rec, line.derive(repo, repo.commit(model.tip).tree, model.base, here.head),
                     model)

    def _model(self, model: line.Model | None, here: line.Where) -> line.Model | None:
        """The model, checked against the line (a crash between a ref move and the model's save
        leaves the model behind its line: the line wins)."""
        repo = self.repo
        if model is not None and not all(repo.has_object(s) for s in (model.tip, model.base)):
            model = None
        if model is not None and model.ref == here.ref and here.tip is not None \
                and model.tip != here.tip:
            base = line.base_of(repo, here.tip)
            model = line.Model(here.ref, here.tip, base, model.index_at) if base else None
        if model is None and here.tip is not None:
            base = line.base_of(repo, here.tip)
            if base is not None and base == here.head:
                return line.Model(here.ref, here.tip, base, None)
        return model

    def _follow(self, rec: Recorder, tree: str, since: line.Model | None) -> None:
        person, agent = self.person()
        commit = line.follow(self.repo, self.here, tree, since, person, agent)
        rec.moved = True
        rec.parent, rec.tree = commit, tree
        rec.outcome.ops.append(_op_id(self.repo, commit))

    def must_scan(self, rec: Recorder) -> bool:
        return self.model is None

    # -- scanning ----------------------------------------------------------------------------

    def scan(self, rec: Recorder, exclude: set[str]) -> Found:
        repo = self.repo
        known_at = None
        model = self.model
        if model is not None and model.index_at and self.index.exists():
            try:
                known_at = repo.commit(model.index_at).tree
            except NotFound:
                known_at = None
        _break_stale(self.index.with_name("index.lock"), repo)
        if known_at is None:
            line.own_folder(repo.gitdir)
            known_at = privateindex.rebuild(repo, self.index)
        self.known_at = known_at
        if self.starting:  # no line to compare with yet: the person's index is the start
            rec.tree = known_at
        candidates = self._hinted(rec) if self.options.changed is not None and not rec.missed \
            and not self.starting else set(privateindex.changed(repo, self.index))
        candidates |= {c.path for c in repo.diff_trees(known_at, rec.tree)}
        rec.scanned |= candidates
        ours = {p for p in candidates if p not in exclude}
        # (a file absent on purpose, outside a sparse checkout's cone, is no deletion)
        ours -= privateindex.sparse(repo, [p for p in ours if rec.files.stat(p) is None])
        filtered = privateindex.filtered(repo, ours)
        skipped: list[str] = []
        found: Found = {}
        for rel in sorted(ours - filtered):
            if rec.excluded.match(rel):
                continue
            seen = rec.read(rel, skipped)
            if seen is not None and seen[0] != repo.entry_at(rec.tree, rel):
                found[rel] = seen
        rec._skipped(skipped)
        return found

    def _hinted(self, rec: Recorder) -> set[str]:
        """What a watcher saw change since the last scan (``Options.changed``), for the paths
        git would list against the private index: a folder it names stands for every file the
        tree holds below it (the watcher names the disk's), and a file git ignores that the
        tree does not hold is left out, as git's own listing leaves it."""
        from ...core.userfiles import ignored

        assert self.options.changed is not None
        repo, found = self.repo, set()
        for rel in self.options.changed:
            entry = repo.entry_at(rec.tree, rel)
            if entry is not None and entry.is_tree:
                found |= {f"{rel}/{sub}" for sub, _ in repo.walk_files(entry.sha)}
            else:
                found.add(rel)
        return found - ignored(repo, [p for p in found if repo.entry_at(rec.tree, p) is None],
                               untracked=True)

    def outside(self, rec: Recorder, changes: dict[str, Entry | None], note: str) -> None:
        if not self.starting:
            super().outside(rec, changes, note)
            return
        # The line starts here: what the person had is its first op (a follow op), not a change.
        self.starting = False
        start = self.repo.update_tree(self.known_at, changes)
        rec.tree = self.repo.commit(rec.parent).tree
        if start != rec.tree or self.here.tip is None:
            self._follow(rec, start, None)

    def unreadable(self, rec: Recorder, rels: list[str], announced: state.Running | None
                   ) -> set[str]:
        """Ignored, or a filter's (Git LFS): never read. The before hook asked git already when
        it could read the file then: no second process."""
        repo = self.repo
        out = set()
        for rel in rels:
            read_before = announced is not None and (announced.before.get(rel) or [None])[0]
            tracked = repo.entry_at(rec.tree, rel) is not None
            if rec.files.stat(rel) is not None and not read_before and not privateindex.readable(
                    repo.root, repo.gitdir, repo.commondir, rel, tracked):
                out.add(rel)
        return out

    # -- who and where ------------------------------------------------------------------------

    def person(self) -> tuple[Signature, str]:
        from ...core import person as people  # (only when the person's own op is made)

        if self._person is None:
            who = people.person(self.repo, self.options.author)
            self._person = (who, people.token(who.name))
        return self._person

    def where(self, rec: Recorder) -> str:
        branch = self.here.branch
        return ", in your own checkout" + (f" on branch {branch}" if branch else " (HEAD detached)")

    # -- publishing --------------------------------------------------------------------------

    def publish(self, rec: Recorder) -> None:
        repo, here, model = self.repo, self.here, self.model
        new = rec.parent
        if self.starting:  # nothing scanned (a refused command): no line to start yet
            return
        if new != (here.tip or here.head):  # (a lock a killed hook left: the writer's recovery)
            if rec.writes:
                line.move_with_files(self.writer, here.ref, here.tip, new, rec.writes,
                                     rec.before)
            else:
                line.move(self.writer, [(here.ref, here.tip, new)])
        index_at = model.index_at if model is not None else None
        scanned = bool(self.known_at)
        if scanned and (index_at is None or rec.event.kind in ("prompt", "stop", "scan")
                        or len(rec.scanned | rec.touched) > SYNC_AT):
            entries = {p: repo.entry_at(rec.tree, p) for p in rec.scanned | rec.touched}
            privateindex.set_entries(repo, self.index, entries)
            # (set_entries clears the flag: git must still never filter a Git LFS file for us,
            # nor look for a file a sparse checkout leaves out)
            held = [p for p, e in entries.items() if e is not None]
            skipped = privateindex.filtered(repo, held) | privateindex.sparse(
                repo, [p for p in held if rec.files.stat(p) is None])
            privateindex.skip_worktree(repo, self.index, skipped)
            index_at = new
        line.save(repo.gitdir, line.Model(here.ref, new, here.head, index_at, self.stash))
        repo.maybe_pack()

    # -- turns -------------------------------------------------------------------------------

    def mark_turn(self, rec: Recorder, name: str, message: str) -> str:
        tip = self.repo.read_ref(self.here.ref) or self.here.head
        line.move(self.writer, [(TURNS + name, None, tip)])
        return name

    def turn_taken(self, name: str) -> bool:
        return self.repo.read_ref(TURNS + name) is not None

    def turn_marks(self, agent: str, session: str) -> int:
        return len(turn_marks(self.repo, agent, session))

    def finish(self, rec: Recorder) -> None:
        if rec.event.kind == "stop":
            _background_gc(self.repo)


def turn_marks(repo: GitRepo, agent: str, session: str) -> list[tuple[str, str]]:
    """The turn marks of one session: (name, commit)."""
    prefix = turn_name(agent, session, 0)[: -len("turn-0")]
    return [(ref[len(TURNS):], tip) for ref, tip, _ in repo.refs(TURNS.rstrip("/"))
            if ref[len(TURNS):].startswith(prefix)]


def pending(repo: GitRepo, options: Options) -> tuple[list[str], list[str]] | None:
    """What recording in place has not recorded yet: (paths, notes on files it will not read);
    None before the line has started. Read-only: no object is written, and git may not even
    refresh the private index (a hook holding the checkout's lock may be writing it)."""
    from ...core import exclude
    from ...errors import FileRefused, PathRefused
    from ...storage.files import Files

    model = line.load(repo.gitdir)
    index = privateindex.path(repo.gitdir)
    if model is None or model.index_at is None or not index.exists():
        return None
    try:
        here = line.where(repo)
        tree = repo.commit(model.tip).tree
        if not line.continues(model, here):
            tree = line.derive(repo, tree, model.base, here.head)
        known_at = repo.commit(model.index_at).tree
    except (NotFound, GitspaceError):
        return None
    candidates = set(privateindex.changed(repo, index, refresh=False))
    candidates |= {c.path for c in repo.diff_trees(known_at, tree)}
    excluded = exclude.load(repo.commondir)
    files = Files(repo.root)
    found, skipped = [], []
    for rel in sorted(candidates - privateindex.filtered(repo, candidates)):
        if excluded.match(rel):
            continue
        try:
            got = files.read(rel, limit=options.max_file_bytes)
        except (FileRefused, PathRefused) as e:
            skipped.append(f"{rel} ({e.message})")
            continue
        entry = None if got is None else Entry(got[1], repo.hash_object("blob", got[0]))
        if entry != repo.entry_at(tree, rel):
            found.append(rel)
    return found, skipped


def nothing_recorded_here(repo: GitRepo, agent: str) -> GitspaceError:
    from ..events import NothingRecorded

    return NothingRecorded(
        f"gitspace records nothing in {repo.root}: recording {title(agent)} in place is not "
        "turned on in this checkout.",
        hint=f"To record here, run 'gitspace hooks install {agent}' in it; otherwise remove "
             "gitspace's hook from this checkout's settings.")


def _background_gc(repo: GitRepo) -> None:
    """Start ``gitspace gc`` on its own at a turn's end, at most once a day (``gc --auto``
    decides the same way)."""
    from . import gc

    if not gc.due(repo):
        return
    import subprocess
    import sys

    gc.ran(repo)  # (before it starts: two turn ends at once start one)
    subprocess.Popen([sys.executable, "-m", "gitspace", "-C", str(repo.root), "gc"],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, start_new_session=True, cwd=repo.root)


def _mark_running(gitdir: Path) -> Path:
    mark = state.folder(gitdir, "running") / str(os.getpid())
    os.close(os.open(mark, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644))
    return mark


def _killed(gitdir: Path, mine: Path) -> str | None:
    """Did a hook die recording (its process gone, its mark left)? Its marks are cleared."""
    from ..recorder import INTERRUPTED

    found = None
    for mark in mine.parent.iterdir():
        if mark == mine or not mark.name.isdigit():
            continue
        try:
            os.kill(int(mark.name), 0)
            continue  # alive: still waiting for the lock
        except ProcessLookupError:
            found = INTERRUPTED
        except OSError:
            continue
        mark.unlink(missing_ok=True)
    return found


def _op_id(repo: GitRepo, commit: str) -> str:
    op = ledger.parse_message(repo.commit(commit).message)
    assert op is not None
    return op.op_id


def _break_stale(lock: Path, repo: GitRepo, wait: float = 0.5) -> None:
    """Under the checkout's own lock a lock file of a ref or index only gitspace writes is a
    crashed gitspace's, unless a live git process may hold it (``git gc`` packs refs)."""
    deadline = time.monotonic() + wait
    while lock.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    if lock.exists() and not lockfile.git_running_in({repo.root, repo.gitdir, repo.commondir}):
        lock.unlink(missing_ok=True)
