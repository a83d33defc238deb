"""The notes ref ``refs/notes/ai``: finding a commit's note, and writing notes through the writer.

Invariants:
- Read as git reads notes: the ref's commit names a tree whose entries are commit ids, whole or
  fanned out in two-character folders (``ab/cdef...``), each a blob, the note. A note over
  ``authorship.NOTE_CAP`` bytes is refused before it is read; one that does not parse is refused
  by ``authorship.parse`` with its reason. A note naming a commit this repository lacks is
  harmless: nothing reads it until that commit is asked about.
- Written by ``put`` alone: one notes commit (parent: the ref's tip, author and committer the
  person, by their git identity) whose tree is the tip's with the notes given put where git would
  look for them (an existing one replaced in place, a new one at the fan-out the tree uses), and
  one ``RefMove`` of ``refs/notes/ai`` handed to the checkout's ``Writer.apply`` under its lock,
  by compare-and-swap: a notes ref someone else moved meanwhile is re-read and written again.
- Nothing here deletes a note but ``put`` given None for it (``gitspace purge``).
"""

from __future__ import annotations

import zlib

from ..errors import ConcurrentUpdate, GitspaceError, NotFound
from ..storage import loose
from ..storage.gitrepo import GitRepo
from ..storage.objects import FILE_MODE, Entry, Signature
from . import authorship

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..core.writer import Writer

REF = authorship.REF


class Notes:
    """The notes of ``ref`` as its tip holds them (read once; ``refresh`` reads the tip again)."""

    def __init__(self, repo: GitRepo, ref: str = REF, tip: str | None = None) -> None:
        self.repo, self.ref = repo, ref
        self.tip = tip if tip is not None else repo.read_ref(ref)
        self._parsed: dict[str, authorship.Note | None] = {}
        self.refused: dict[str, str] = {}  # commit -> why its note was not read

    @property
    def tree(self) -> str | None:
        return self.repo.commit(self.tip).tree if self.tip else None

    def location(self, commit: str) -> tuple[str, str] | None:
        """(path in the notes tree, blob) of ``commit``'s note, or None."""
        tree, prefix, rest = self.tree, "", commit
        while tree is not None and rest:
            entries = self.repo.tree(tree)
            found = entries.get(rest.encode())
            if found is not None and not found.is_tree:
                return prefix + rest, found.sha
            fan = entries.get(rest[:2].encode())
            if fan is None or not fan.is_tree:
                return None
            tree, prefix, rest = fan.sha, prefix + rest[:2] + "/", rest[2:]
        return None

    def text(self, commit: str) -> bytes | None:
        """The raw note of ``commit`` (None: it has none); NoteRefused when it is too large."""
        found = self.location(commit)
        if found is None:
            return None
        size = blob_size(self.repo, found[1])
        if size > authorship.NOTE_CAP:
            raise authorship.NoteRefused(
                f"The authorship note of {commit[:10]} is {size:,} bytes, more than the "
                f"{authorship.NOTE_CAP >> 20} MiB gitspace reads; it was left unread.",
                hint="Whoever wrote it wrote no authorship log gitspace knows: "
                     "'git notes --ref=ai remove COMMIT' removes it.")
        return self.repo.read_blob(found[1])

    def get(self, commit: str) -> authorship.Note | None:
        """``commit``'s note parsed, or None when it has none or it cannot be read (the reason is
        kept in ``refused``)."""
        if commit not in self._parsed:
            try:
                data = self.text(commit)
                self._parsed[commit] = authorship.parse(data) if data is not None else None
            except GitspaceError as e:
                self.refused[commit] = e.message
                self._parsed[commit] = None
        return self._parsed[commit]

    def commits(self) -> dict[str, str]:
        """Every commit with a note here → the note's blob."""
        out: dict[str, str] = {}
        stack = [(self.tree, "")]
        while stack:
            tree, prefix = stack.pop()
            for name, entry in self.repo.tree(tree).items():
                text = prefix + name.decode("ascii", "replace")
                if entry.is_tree and len(name) == 2:
                    stack.append((entry.sha, text))
                elif not entry.is_tree and len(text) == 40:
                    out[text] = entry.sha
        return out


def blob_size(repo: GitRepo, blob: str) -> int:
    """The size of a blob without reading it whole (a loose object's header, a pack entry's;
    else git's: a blame reads one per commit, and a process each would cost more than it)."""
    path = loose.object_path(repo.objects, blob)
    try:
        if path is not None:
            with open(path, "rb") as f:
                head = zlib.decompressobj().decompress(f.read(256), 64)
            kind, _, size = head.split(b"\0", 1)[0].partition(b" ")
            return int(size)
    except (OSError, ValueError, zlib.error):
        pass
    packed = repo.packed_size(blob)
    if packed is not None:
        return packed
    out = repo.git("cat-file", "-s", blob, check=False).strip()
    if not out.isdigit():
        raise NotFound(f"The note blob {blob} is not in this repository.",
                       hint="Fetch the notes again: 'git fetch origin refs/notes/ai'.")
    return int(out)


def put(writer: Writer, person: Signature, notes: Mapping[str, str | None], why: str,
        ref: str = REF, tries: int = 3) -> str | None:
    """Write ``notes`` (commit → note text; None removes it) as one notes commit, and move
    ``ref`` to it (the caller holds ``writer.locked``). The new tip; the old one when nothing
    changed."""
    from ..core.writer import Change, RefMove  # (here: a read of the notes never loads it)

    repo = writer.repo
    for attempt in range(tries):
        current = Notes(repo, ref)
        tree = current.tree
        changes: dict[str, Entry | None] = {}
        for commit, text in notes.items():
            found = current.location(commit)
            path = found[0] if found else _new_path(repo, tree, commit)
            changes[path] = None if text is None else Entry(FILE_MODE,
                                                            repo.write_blob(text.encode()))
        new_tree = repo.update_tree(tree, changes) if changes else tree
        if new_tree == tree or (tree is None and not any(changes.values())):
            return current.tip
        parents = [current.tip] if current.tip else []
        message = f"{why}\n\nWritten by gitspace: {len(notes)} authorship note(s).\n"
        commit_id = repo.write_commit(new_tree or "", parents, message, person, person)
        try:
            writer.apply(Change(f"gitspace: {why}", person, [RefMove(ref, current.tip,
                                                                     commit_id)]))
            return commit_id
        except ConcurrentUpdate:
            if attempt == tries - 1:
                raise
    return None


def _new_path(repo: GitRepo, tree: str | None, commit: str) -> str:
    """Where a new note goes: at the fan-out the tree already uses (none: at the top)."""
    prefix, rest = "", commit
    while tree is not None and len(rest) > 2:
        entries = repo.tree(tree)
        fans = [e for n, e in entries.items() if e.is_tree and len(n) == 2]
        if not fans:
            break
        found = entries.get(rest[:2].encode())
        tree = found.sha if found is not None and found.is_tree else None
        prefix, rest = prefix + rest[:2] + "/", rest[2:]
    return prefix + rest
