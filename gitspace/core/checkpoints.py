"""Checkpoints: annotated tags ``gitspace/<name>`` at op commits; restore is a new op.

Invariant: a checkpoint never moves and never rewrites history. Restoring makes a new op whose
tree is the checkpoint's tree, so the abandoned path stays visible in the log and can itself be
restored or undone. Outside changes to the files a restore replaces are committed first.
"""

from __future__ import annotations

from ..errors import BadArguments, GitspaceError, LedgerError, NotFound
from ..storage import ledger
from ..storage.records import record
from . import refnames
from .identity import Identity
from .transaction import Outcome, Stage, Txn
from .workspace import Workspace
from .writer import Change, RefMove, refused_writes

PREFIX = ledger.CHECKPOINTS
MESSAGE_CAP = 500
NAME = refnames.CHECKPOINT  # a checkpoint name's shape (refnames.check says the rest)


@record(frozen=True)
class Checkpoint:
    name: str
    commit: str
    branch: str
    agent: str
    time: int
    message: str


def check_name(name: str) -> str:
    return refnames.check("checkpoint", name)


def create(ws: Workspace, who: Identity, name: str, message: str = "") -> Checkpoint:
    """Tag the tip as checkpoint ``name``, by ``who`` (its agent; its op id, when fixed)."""
    with ws.writer.locked():
        return write(ws, who, name, message)


def write(ws: Workspace, who: Identity, name: str, message: str = "") -> Checkpoint:
    """``create``, with the checkout's lock held by the caller (a harness's turn ends at one
    under the lock its ops were recorded under, so no other call can take the name first)."""
    refnames.check_new(ws, "checkpoint", name, PREFIX)
    if len(message) > MESSAGE_CAP:
        raise BadArguments(f"The checkpoint message has {len(message):,} characters; the cap is "
                           f"{MESSAGE_CAP}.", hint="Say why you saved here in a sentence or two.")
    branch, tip = ws.branch(), ws.tip()
    if ws.repo.read_ref(PREFIX + name) is not None:
        raise GitspaceError(
            f"A checkpoint named {name!r} already exists.",
            hint="Pick another name; 'gitspace checkpoints' lists the existing ones.",
        )
    agent = who.name  # the agent, or the person who made it from the command line
    text = ledger.clean_subject(message, MESSAGE_CAP)  # one printable line: no forged lines
    body = ledger.checkpoint_message(text, name, branch, agent, who.op_id)
    tagger = who.author
    with refused_writes():  # an orphan tag object is all a failure here can leave
        tag = ws.repo.write_tag(f"gitspace/{name}", tip, body, tagger)
    ws.writer.apply(Change(f"checkpoint {name}", tagger, [RefMove(PREFIX + name, None, tag)]))
    ws.repo.drop_tag_reflogs(PREFIX)
    return Checkpoint(name, tip, branch, agent, ws.repo.commit(tip).time, text)


def listing(ws: Workspace) -> list[Checkpoint]:
    out = []
    for ref, _, commit, when, message in ws.repo.tags(PREFIX.rstrip("/")):
        note = _note(message)
        out.append(Checkpoint(
            name=ref[len(PREFIX):], commit=commit,
            branch=note.branch if note else "?", agent=note.agent if note else "?",
            time=when, message=message.split("\n\n", 1)[0].strip(),
        ))
    return sorted(out, key=lambda c: (c.time, c.name))


def _note(message: str) -> ledger.CheckpointNote | None:
    """A tag's checkpoint record; a tag someone wrote by hand may have a broken one."""
    try:
        return ledger.parse_checkpoint(message)
    except LedgerError:
        return None


def resolve(ws: Workspace, name: str) -> str:
    check_name(name)
    tag = ws.repo.read_ref(PREFIX + name)
    if tag is None:
        names = [c.name for c in listing(ws)]
        raise NotFound(
            f"There is no checkpoint named {name!r}.",
            hint="Existing checkpoints: " + (", ".join(names[-20:]) if names else "none yet") + ".",
        )
    commit = ws.repo.rev_parse(f"refs/tags/gitspace/{name}")
    if commit is None:
        raise NotFound(f"Checkpoint {name!r} does not point at a commit.")
    return commit


def stage_restore(ws: Workspace, name: str, target_commit: str) -> Stage:
    """Restore the tree of ``target_commit``; ``name`` is a checkpoint name or ``op <id>``."""
    target_tree = ws.repo.commit(target_commit).tree
    what = name if name.startswith("op ") else f"checkpoint {name}"

    def stage(txn: Txn) -> Outcome:
        changed = set_tree(ws, txn, target_tree)
        return Outcome(f"Restored {what}: {changed} file(s) changed.", f"restore {name}")

    return stage


def set_tree(ws: Workspace, txn: Txn, target_tree: str) -> int:
    """Stage writes that make the files equal ``target_tree``; the number of paths staged."""
    changes = list(ws.repo.diff_trees(txn.tree, target_tree))
    txn.moves = True  # (an untracked file in the way is refused: core/userfiles.py)
    for change in changes:
        txn.read(change.path)
        if change.new is None:
            txn.delete(change.path)
        else:
            txn.write(change.path, ws.repo.read_blob(change.new.sha), change.new.mode)
    return len(changes)
