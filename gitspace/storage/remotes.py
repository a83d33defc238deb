"""Reading another repository: its branches and checkpoints (``ls_remote``) and the objects
wanted from it (``fetch``), with no ref moved here; the errors a remote gives.

Invariant: reads only. ``git://`` remotes are read with protocol v0, whose client does not stall
on TCP's delayed acknowledgement as v2's does (``_reading``); a remote that refused this clone's
credentials is told apart from one that is down (``unreachable``), since retrying cannot help.
Used by the team layer's push, pull and sync and by a replay that fetches the checkpoints it
needs (``replay/reach.py``), which is why it sits below both.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import GitspaceError
from .gitrepo import GitRepo
from .ledger import CHECKPOINTS

TAGS = CHECKPOINTS  # refs/tags/gitspace/


class RemoteUnavailable(GitspaceError):
    """The remote could not be read or written (down, unreachable, refusing the connection)."""


class AccessDenied(GitspaceError):
    """The remote refused this clone's credentials, or its right to push: retrying cannot help
    (and retrying a wrong password can lock the account)."""


_DENIED = ("Authentication failed", "could not read Username", "could not read Password",
           "returned error: 401", "returned error: 403", "Permission denied (publickey")


def unreachable(remote: str, text: str, unavailable: RemoteUnavailable) -> GitspaceError:
    """``unavailable``, unless git's ``text`` says the remote refused this clone's access."""
    if not any(sign in text for sign in _DENIED):
        return unavailable
    return AccessDenied(
        f"{remote} refused this clone's credentials: {text.strip()} Nothing was changed here; "
        "any ops not pushed yet stay on this branch.",
        hint="Fix what your git credential helper gives for this host ('git config --get-all "
             "credential.helper' names it; 'git credential reject' forgets a stored password), "
             "then sync again. gitspace never takes a password from its command line or its "
             "environment.")


_READING: dict[tuple[Path, str], tuple[int, tuple[str, ...]]] = {}  # by repository and remote


def _reading(repo: GitRepo, remote: str) -> tuple[str, ...]:
    """git's options for a read (``ls-remote``, ``fetch``) of ``remote``: protocol v0 when its
    URL, as git resolves it (``insteadOf`` included), is ``git://``. Cached per repository and
    remote until the repository's config file changes: a stale answer costs time, never refs."""
    config = repo.commondir / "config"
    try:
        stamp = config.stat().st_mtime_ns
    except OSError:
        stamp = -1
    known = _READING.get((repo.commondir, remote))
    if known is not None and known[0] == stamp:
        return known[1]
    options = ("-c", "protocol.version=0") if repo.remote_url(remote).startswith("git://") else ()
    _READING[(repo.commondir, remote)] = (stamp, options)
    return options


def ls_remote(repo: GitRepo, remote: str) -> dict[str, str]:
    """The remote's branches and checkpoints ``{ref: object}``."""
    proc = repo.run_git(*_reading(repo, remote), "ls-remote", "--refs", remote)
    if proc.returncode != 0:
        text = proc.stderr.decode(errors="replace").strip()
        raise unreachable(remote, text, RemoteUnavailable(
            f"Could not read remote {remote}: {text}",
            hint="Check the name with 'git remote -v', or pass a path or URL."))
    refs = {}
    for line in proc.stdout.decode(errors="surrogateescape").splitlines():
        sha, _, ref = line.partition("\t")
        if ref.startswith("refs/heads/") or ref.startswith(TAGS):
            refs[ref] = sha
    return refs


def fetch(repo: GitRepo, remote: str, wanted: dict[str, str]) -> None:
    """Fetch the objects of ``wanted`` ({ref: object}) that are missing here; no ref moves."""
    missing = [ref for ref, sha in wanted.items() if not repo.has_object(sha)]
    if not missing:
        return
    proc = repo.run_git(*_reading(repo, remote), "-c", "gc.auto=0", "-c", "maintenance.auto=false",
                        "fetch", "--quiet",
                        "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules",
                        "--refmap=", remote, *missing)
    if proc.returncode != 0:
        text = proc.stderr.decode(errors="replace").strip()
        raise unreachable(remote, text, RemoteUnavailable(
            f"Could not fetch from {remote}: {text} Nothing was changed here.",
            hint="Check the remote ('git remote -v') and your access to it, then pull again."))
    if any(not repo.has_object(wanted[ref]) for ref in missing):
        raise RemoteUnavailable(f"{remote} changed while pulling. Nothing was changed here.",
                            hint="Run 'gitspace pull' again.")
