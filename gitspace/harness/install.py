"""``gitspace hooks install|uninstall|status``: wiring a harness's hooks to ``gitspace hook``.

Invariants:
- In a checkout gitspace owns (a workspace, or an agent's worktree made by ``attach``) the
  default scope is ``project``; the settings file written there is committed as an outside edit
  at once, so the hook's own first call does not find it pending. A ``local`` one never is: it
  is kept out of git through ``.git/info/exclude``, as in a person's own checkout.
- In a person's own checkout the calls are recorded in place (``harness/inplace.py``), and
  nothing of gitspace's enters their history: Claude Code's hooks go into
  ``.claude/settings.local.json``, kept out of git through ``.git/info/exclude`` when nothing
  ignores it yet (a tracked one is refused); Codex, Gemini CLI and Cursor have no per-checkout
  file that git would not see, so their hooks go into the person's own settings (``user``
  scope, ``--quiet-outside``), and record only in checkouts where ``hooks install`` turned
  recording on. ``--scope project`` (a committed file every clone would run) is refused there.
  Installing starts the recorded line at once.
- User-scope hooks run for every project; their command carries ``--quiet-outside`` so that in a
  folder where gitspace records nothing the hook does nothing and says nothing.
- Merging is ``settings``' job: other hooks and keys are never touched.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..core import owner
from ..core.snapshot import record_paths
from ..core.workspace import Workspace
from ..errors import BadArguments, NotAWorkspace
from ..storage import statefiles
from ..storage.gitrepo import GitRepo
from . import adapters, settings
from .events import RecordingOnly
from .spec import HookSpec


@dataclass(frozen=True)
class Wired:
    spec: HookSpec
    scope: str
    path: Path
    changed: bool
    op: str | None = None  # the op that recorded the settings file, or started the line
    in_place: bool = False  # a person's own checkout: their calls are recorded in place
    excluded: bool = False  # the settings file was added to .git/info/exclude


def spec_for(name: str) -> HookSpec:
    if name not in adapters.ADAPTERS:
        raise BadArguments(f"gitspace has no hooks for {name!r}.",
                           hint="Known harnesses: " + ", ".join(adapters.ADAPTERS) + ".")
    return adapters.adapter(name).SPEC


def settings_file(spec: HookSpec, scope: str, root: Path, home: Path) -> Path:
    relative = spec.path_for(scope)
    return home / relative[2:] if relative.startswith("~/") else root / relative


def install(name: str, scope: str | None, start: Path, home: Path, program: str,
            commit_transcript: bool = False) -> Wired:
    """Wire ``name``'s hooks (``scope`` None: the default for where ``start`` is)."""
    spec = spec_for(name)
    if scope == "user":
        command = settings.hook_command(program, spec.name, quiet_outside=True,
                                        commit_transcript=commit_transcript)
        path = settings_file(spec, scope, start, home)
        return Wired(spec, scope, path, settings.install(path, spec, command))
    repo = _repository(start)
    try:
        if not owner.owns(repo):
            return _install_in_place(spec, scope, repo, home, program, commit_transcript)
        scope = scope or "project"
        command = settings.hook_command(program, spec.name, commit_transcript=commit_transcript)
        path = settings_file(spec, scope, repo.root, home)
        if scope == "local":  # a local settings file is never committed, here either
            excluded = _keep_out_of_git(repo, path)
            return Wired(spec, scope, path, settings.install(path, spec, command, repo.root),
                         excluded=excluded)
        changed = settings.install(path, spec, command, repo.root)
        return Wired(spec, scope, path, changed, _record(repo, path) if changed else None)
    finally:
        repo.close()


def _repository(start: Path) -> GitRepo:
    """The repository ``start`` is in; a folder in none is refused naming it and saying how to
    make one (a repository of the person's own is where the hooks record in place)."""
    try:
        return GitRepo.open(start)
    except NotAWorkspace as e:
        if "not inside a git repository" not in e.message:
            raise
        where = start.absolute()
        raise NotAWorkspace(
            f"{where} is not inside a git repository, so there is no checkout for the hooks to "
            "record in.",
            hint=f"Run 'git init' in {where} (gitspace then records in place, and nothing of "
                 "yours moves), or 'gitspace init DIR' for a new workspace the agent owns; or "
                 "pass -C with a folder inside a repository.") from None


def uninstall(name: str, scope: str | None, start: Path, home: Path) -> Wired:
    spec = spec_for(name)
    if scope == "user":
        path = settings_file(spec, scope, start, home)
        return Wired(spec, scope, path, settings.uninstall(path, spec) > 0)
    repo = GitRepo.open(start)
    try:
        if not owner.owns(repo):
            from . import inplace

            scope = scope or in_place_scope(spec)
            path = settings_file(spec, scope, repo.root, home)
            changed = settings.uninstall(path, spec, repo.root) > 0 if scope != "user" else False
            was_on = spec.name in inplace.recording(repo.gitdir)
            inplace.set_recording(repo.gitdir, spec.name, False)
            return Wired(spec, scope, path, changed or was_on, in_place=True)
        scope = scope or "project"
        path = settings_file(spec, scope, repo.root, home)
        changed = settings.uninstall(path, spec, repo.root) > 0
        recorded = _record(repo, path) if changed and scope != "local" else None
        return Wired(spec, scope, path, changed, recorded)
    finally:
        repo.close()


def in_place_scope(spec: HookSpec) -> str:
    """Where a harness's hooks go in a person's own checkout: a settings file of the checkout
    that git need not see (``local``), else the person's own (``user``)."""
    return "local" if "local" in spec.scopes else "user"


def _install_in_place(spec: HookSpec, scope: str | None, repo: GitRepo, home: Path,
                      program: str, commit_transcript: bool) -> Wired:
    from . import inplace
    from .events import Options

    place = in_place_scope(spec)
    if scope not in (None, place):
        raise BadArguments(
            f"{repo.root} is a checkout of your own, so gitspace will not put its {spec.title} "
            f"hooks in the {scope} settings: that file is committed with your project and would "
            "run them in every clone.",
            hint=f"Leave out --scope: gitspace then records in place through the {place} "
                 "settings, which your history never sees.")
    if commit_transcript:
        raise BadArguments(
            "In a checkout of your own, session transcripts are never committed: the web view "
            "reads them from where the harness keeps them.", hint="Leave out --commit-transcript.")
    from ..core import line

    line.own_folder(repo.gitdir)  # (refused before anything is written when a link stands there)
    path = settings_file(spec, place, repo.root, home)
    excluded = _keep_out_of_git(repo, path) if place != "user" else False
    command = settings.hook_command(program, spec.name, quiet_outside=place == "user")
    changed = settings.install(path, spec, command, None if place == "user" else repo.root)
    inplace.set_recording(repo.gitdir, spec.name, True)
    started = inplace.begin(repo, spec.name, Options())
    return Wired(spec, place, path, changed, started.ops[-1] if started.ops else None,
                 in_place=True, excluded=excluded)


def _keep_out_of_git(repo: GitRepo, path: Path) -> bool:
    """Make sure git never sees ``path`` (a settings file in the work tree): refused when it is
    tracked; added to ``.git/info/exclude`` unless something ignores it already. True when it
    was added."""
    rel = path.relative_to(repo.root).as_posix()
    if repo.run_git("ls-files", "--error-unmatch", "--", rel).returncode == 0:
        raise BadArguments(
            f"{rel} is tracked in your repository, so gitspace will not write its hooks into it "
            "(they would show as your change, and be committed).",
            hint="Stop tracking it ('git rm --cached'), or use --scope user.")
    if repo.run_git("check-ignore", "-q", "--", rel).returncode == 0:
        return False
    # (git's own file, read and replaced without following a link: statefiles)
    old = statefiles.read(repo.commondir, "info/exclude") or b""
    line = f"/{rel}\n".encode()
    if line not in old.splitlines(keepends=True):
        statefiles.write(repo.commondir, "info/exclude", old + (
            b"" if not old or old.endswith(b"\n") else b"\n")
            + b"# gitspace keeps its hooks here (gitspace hooks install)\n" + line)
    return True


def status(start: Path, home: Path) -> list[tuple[HookSpec, str, settings.Installed]]:
    """Every harness and scope, installed or not (project scopes read from ``start``'s checkout)."""
    try:
        repo = GitRepo.open(start)
        root: Path | None = repo.root
        repo.close()
    except Exception:  # noqa: BLE001  (outside a repository only user scopes apply)
        root = None
    rows = []
    for spec in adapters.specs().values():  # every harness gitspace can wire
        for scope in spec.scopes:
            if scope != "user" and root is None:
                continue
            path = settings_file(spec, scope, root or start, home)
            rows.append((spec, scope, settings.status(path, spec, None if scope == "user"
                                                      else root)))
    return rows


def _record(repo: GitRepo, path: Path) -> str | None:
    """Commit the settings file just written as an outside edit (by whoever ran the command)."""
    rel = path.relative_to(repo.root).as_posix()
    with Workspace(repo, tools=RecordingOnly()) as ws:
        return record_paths(ws, [rel], f"Written by 'gitspace hooks' ({rel}).")
