"""``gitspace hooks install|uninstall|status``: wiring a harness's hooks to ``gitspace hook``.

Invariants:
- Project-scope hooks are written only into a checkout gitspace owns (a workspace, or an agent's
  worktree made by ``attach``): in a user's own checkout they would record nothing, and writing
  there is not gitspace's to do. The settings file written into a workspace is committed as an
  outside edit at once, so the hook's own first call does not find it pending.
- User-scope hooks run for every project; their command carries ``--quiet-outside`` so that in a
  folder that is not a gitspace workspace the hook does nothing and says nothing.
- Merging is ``settings``' job: other hooks and keys are never touched.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..core import owner
from ..core.snapshot import record_paths
from ..core.workspace import Workspace
from ..errors import BadArguments
from ..storage.gitrepo import GitRepo
from . import claude_code, codex, cursor, gemini, settings
from .events import RecordingOnly
from .spec import HookSpec

# Every harness gitspace can wire, in one place.
SPECS: dict[str, HookSpec] = {m.SPEC.name: m.SPEC for m in (claude_code, codex, gemini, cursor)}


@dataclass(frozen=True)
class Wired:
    spec: HookSpec
    scope: str
    path: Path
    changed: bool
    op: str | None = None  # the external op that recorded the settings file in the workspace


def spec_for(name: str) -> HookSpec:
    if name not in SPECS:
        raise BadArguments(f"gitspace has no hooks for {name!r}.",
                           hint="Known harnesses: " + ", ".join(SPECS) + ".")
    return SPECS[name]


def settings_file(spec: HookSpec, scope: str, root: Path, home: Path) -> Path:
    relative = spec.path_for(scope)
    return home / relative[2:] if relative.startswith("~/") else root / relative


def _workspace_root(start: Path, spec: HookSpec) -> GitRepo:
    repo = GitRepo.open(start)
    if not owner.owns(repo):
        refused = owner.refuse(repo, f"install {spec.title} hooks")
        repo.close()
        raise refused
    return repo


def install(name: str, scope: str, start: Path, home: Path, program: str,
            commit_transcript: bool = False) -> Wired:
    spec = spec_for(name)
    command = settings.hook_command(program, spec.name, quiet_outside=scope == "user",
                                    commit_transcript=commit_transcript)
    if scope == "user":
        path = settings_file(spec, scope, start, home)
        return Wired(spec, scope, path, settings.install(path, spec, command))
    repo = _workspace_root(start, spec)
    path = settings_file(spec, scope, repo.root, home)
    changed = settings.install(path, spec, command)
    return Wired(spec, scope, path, changed, _record(repo, path) if changed else None)


def uninstall(name: str, scope: str, start: Path, home: Path) -> Wired:
    spec = spec_for(name)
    if scope == "user":
        path = settings_file(spec, scope, start, home)
        return Wired(spec, scope, path, settings.uninstall(path, spec) > 0)
    repo = _workspace_root(start, spec)
    path = settings_file(spec, scope, repo.root, home)
    changed = settings.uninstall(path, spec) > 0
    return Wired(spec, scope, path, changed, _record(repo, path) if changed else None)


def status(start: Path, home: Path) -> list[tuple[HookSpec, str, settings.Installed]]:
    """Every harness and scope, installed or not (project scopes read from ``start``'s checkout)."""
    try:
        repo = GitRepo.open(start)
        root: Path | None = repo.root
        repo.close()
    except Exception:  # noqa: BLE001  (outside a repository only user scopes apply)
        root = None
    rows = []
    for spec in SPECS.values():
        for scope in spec.scopes:
            if scope != "user" and root is None:
                continue
            path = settings_file(spec, scope, root or start, home)
            rows.append((spec, scope, settings.status(path, spec)))
    return rows


def _record(repo: GitRepo, path: Path) -> str | None:
    """Commit the settings file just written as an outside edit (by whoever ran the command)."""
    rel = path.relative_to(repo.root).as_posix()
    with Workspace(repo, tools=RecordingOnly()) as ws:
        return record_paths(ws, [rel], f"Written by 'gitspace hooks' ({rel}).")
