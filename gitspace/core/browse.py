"""The files of any commit: a folder's listing, one file's bytes, and which op last changed
each line (``git blame`` mapped to ops).

Invariants: everything is read from objects through ``git --no-optional-locks`` processes (never
the work tree, never the index), so a reader beside a running agent sees committed history only
and holds no lock. Whatever the history holds (a binary file, a symlink, a submodule, a name that
is not UTF-8, a file too large to show) comes back as data that says so; nothing here raises
for odd content. Paths are literal (no pathspec magic).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import NotFound
from ..storage import ledger
from ..storage.gitrepo import GitRepo
from . import timeline

SHOW_BYTES = 512 * 1024  # larger files are described, not shown
BLAME_LINES = 5_000
_SNIFF = 8000  # git's own binary heuristic: a NUL in the first 8,000 bytes


@dataclass(frozen=True)
class Item:
    """One entry of a folder."""

    name: str
    path: str
    kind: str  # "tree" (folder), "blob" (file), "link" (symlink), "commit" (submodule)
    size: int | None
    sha: str


@dataclass(frozen=True)
class File:
    path: str
    kind: str  # as Item.kind
    size: int
    data: bytes | None  # None when too large to show (or not a file)
    binary: bool  # (not sniffed when too large to show)

    @property
    def text(self) -> str | None:
        if self.data is None or self.binary:
            return None
        return self.data.decode("utf-8", "replace")


@dataclass(frozen=True)
class BlameLine:
    number: int
    text: str
    commit: str
    op: ledger.Op | None
    subject: str
    agent: str = ""  # who made it: the op's agent, else the commit's author (timeline.LogEntry.agent)


def listing(repo: GitRepo, commit: str, folder: str = "") -> list[Item]:
    """The entries of ``folder`` ("" for the top) at ``commit``, folders first."""
    folder = folder.strip("/")
    if folder and _item(repo, commit, folder).kind != "tree":
        raise NotFound(f"{folder} is not a folder at {commit[:12]}.")
    spec = [f"{folder}/"] if folder else []
    out = repo.read_git("--literal-pathspecs", "ls-tree", "-l", "-z", commit, "--", *spec)
    items = [_parse_item(record) for record in out.split(b"\0") if record]
    return sorted(items, key=lambda i: (i.kind != "tree", i.name))


def kind(repo: GitRepo, commit: str, path: str) -> str:
    """What ``path`` is at ``commit`` (as ``Item.kind``; "" is the top folder); NotFound if absent."""
    return _item(repo, commit, path.strip("/")).kind


def read(repo: GitRepo, commit: str, path: str, limit: int = SHOW_BYTES) -> File:
    """``path`` at ``commit``: its bytes when it is a file small enough to show."""
    item = _item(repo, commit, path.strip("/"))
    if item.kind == "tree":
        raise NotFound(f"{path} is a folder at {commit[:12]}.")
    if item.kind == "commit":
        return File(item.path, "commit", 0, None, False)
    size = item.size or 0
    if size > limit:
        return File(item.path, item.kind, size, None, False)
    data = repo.read_git("cat-file", "blob", item.sha)
    return File(item.path, item.kind, size, data, item.kind == "blob" and _binary(data))


def blame(repo: GitRepo, commit: str, path: str) -> list[BlameLine]:
    """Each line of ``path`` at ``commit`` with the commit (and op) that last changed it."""
    item = _item(repo, commit, path.strip("/"))
    if item.kind != "blob":
        raise NotFound(f"{path} is not a file at {commit[:12]}; only files have lines to blame.")
    out = repo.read_git("--literal-pathspecs", "blame", "--porcelain", "--no-textconv", commit,
                        "--", item.path)
    rows: list[tuple[int, str, str]] = []
    current = ""
    for raw in out.split(b"\n"):
        if raw.startswith(b"\t"):
            rows.append((len(rows) + 1, raw[1:].decode("utf-8", "replace"), current))
            if len(rows) >= BLAME_LINES:
                break
        else:
            head = raw.split(b" ", 1)[0]
            if len(head) in (40, 64) and all(c in b"0123456789abcdef" for c in head):
                current = head.decode()
    ops = _ops_of(repo, sorted({sha for _, _, sha in rows}))
    return [BlameLine(n, text, sha, *ops.get(sha, (None, "", ""))) for n, text, sha in rows]


def _ops_of(repo: GitRepo, shas: list[str]) -> dict[str, tuple[ledger.Op | None, str, str]]:
    if not shas:
        return {}
    found = {}
    for entry in timeline.entries_of(repo, shas):
        found[entry.commit] = (entry.op, entry.subject, entry.agent)
    return found


def _item(repo: GitRepo, commit: str, path: str) -> Item:
    if not path:
        return Item("", "", "tree", None, "")
    if "\0" in path or any(part in ("", ".", "..") for part in path.split("/")):
        raise NotFound(f"{path!r} is not a path inside the repository.",
                       hint="Paths are relative to the top folder, without '.' or '..'.")
    out = repo.read_git("--literal-pathspecs", "ls-tree", "-l", "-z", commit, "--", path)
    for record in out.split(b"\0"):
        if record:
            item = _parse_item(record)
            if item.path == path:
                return item
    raise NotFound(f"There is no {path} at {commit[:12]}.",
                   hint="Pick it from the folder listing of that op.")


def _parse_item(record: bytes) -> Item:
    meta, _, raw_path = record.partition(b"\t")
    mode, kind, sha, size = meta.split(None, 3)
    path = raw_path.decode("utf-8", "replace")
    shown = "link" if mode == b"120000" else kind.decode()
    return Item(path.rsplit("/", 1)[-1], path, shown,
                int(size) if size.strip().isdigit() else None, sha.decode())


def _binary(data: bytes) -> bool:
    return b"\0" in data[:_SNIFF]
