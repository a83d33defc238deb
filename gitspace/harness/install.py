"""``gitspace hooks install|uninstall|status``: wiring a harness's hooks to ``gitspace hook``.

Invariants:
- In a checkout gitspace owns (a workspace, or an agent's worktree made by ``attach``) the
  default scope is ``project``; the settings file written there is committed as an outside edit
  at once, so the hook's own first call does not find it pending. A ``local`` one never is: it
  is kept out of git through ``.git/info/exclude``, as in a person's own checkout.
- In a person's own checkout the calls are recorded in place (``harness/inplace/``), and
  nothing of gitspace's enters their history: Claude Code's hooks go into
  ``.claude/settings.local.json``, kept out of git through ``.git/info/exclude`` when nothing
  ignores it yet (a tracked one is refused); Codex, Gemini CLI and Cursor have no per-checkout
  file that git would not see, so their hooks go into the person's own settings (``user``
  scope, ``--quiet-outside``), and record only in checkouts where ``hooks install`` turned
  recording on. ``--scope project`` (a committed file every clone would run) is refused there.
  Installing starts the recorded line at once.
- User-scope hooks run for every project; their command carries ``--quiet-outside`` so that in a
  folder where gitspace records nothing the hook does nothing and says nothing.
- A settings file that is committed (``project`` scope, in a workspace) names the program as
  plain ``gitspace`` (``settings.PORTABLE``), found on the PATH the harness runs its hooks with,
  so that the hooks work in every clone on every machine. Files that stay on this machine
  (``local``, ``user``) name this very installation by absolute path: a harness started from a
  desktop launcher may run its hooks with a PATH that does not hold a pipx or venv folder.
- Merging is ``settings``' job: other hooks and keys are never touched.
- Codex runs only hooks someone trusted (``codex_trust.py``): installing Codex's hooks always
  asks Codex which of them it will run and says so (``Wired.review``), and with ``trust`` has
  Codex trust exactly the hooks just written. ``status`` asks the same. No other harness has
  such a step.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..core import owner
from ..core.snapshot import record_paths
from ..core.workspace import Workspace
from ..errors import BadArguments, NotAWorkspace
from ..provenance import githooks
from ..storage import statefiles
from ..storage.gitrepo import GitRepo
from . import adapters, settings
from .events import RecordingOnly
from .resident import wiring
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
    review: Any = None  # Codex: what it says of the hooks (codex_trust.Review)


def spec_for(name: str) -> HookSpec:
    if name not in adapters.ADAPTERS:
        raise BadArguments(f"gitspace has no hooks for {name!r}.",
                           hint="Known harnesses: " + ", ".join(adapters.ADAPTERS) + ".")
    return adapters.adapter(name).SPEC


def settings_file(spec: HookSpec, scope: str, root: Path, home: Path) -> Path:
    relative = spec.path_for(scope)
    return home / relative[2:] if relative.startswith("~/") else root / relative


def install(name: str, scope: str | None, start: Path, home: Path, program: str,
            commit_transcript: bool = False, trust: bool = False) -> Wired:
    """Wire ``name``'s hooks (``scope`` None: the default for where ``start`` is); with
    ``trust``, have Codex trust them."""
    spec = spec_for(name)
    if trust and spec.name != "codex":
        raise BadArguments(f"{spec.title} runs its hooks without a trust step of its own, so "
                           "there is nothing to trust.", hint="Leave out --trust.")
    wired = _wire(spec, scope, start, home, program, commit_transcript)
    return replace(wired, review=_codex_review(wired, start, trust)) if spec.name == "codex" \
        else wired


def _codex_review(wired: Wired, start: Path, trusting: bool) -> Any:
    from . import codex_trust

    command = settings.status(wired.path, wired.spec).command
    cwd = wired.path.parent.parent if wired.scope == "project" else start
    return codex_trust.review(cwd, wired.path, command or "", trusting=trusting)


def _wire(spec: HookSpec, scope: str | None, start: Path, home: Path, program: str,
          commit_transcript: bool) -> Wired:
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
        command = settings.hook_command(program if scope != "project" else settings.PORTABLE,
                                        spec.name, commit_transcript=commit_transcript)
        path = settings_file(spec, scope, repo.root, home)
        if scope == "local":  # a local settings file is never committed, here either
            excluded = _keep_out_of_git(repo, path)
            http = _resident(repo, spec, program, commit_transcript)
            return Wired(spec, scope, path, settings.install(path, spec, command, repo.root,
                                                             http=http), excluded=excluded)
        _resident(repo, spec, program, False, posts=False)  # (a committed file holds no secret)
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
            from .inplace import commands
            from .route import recording

            scope = scope or in_place_scope(spec)
            path = settings_file(spec, scope, repo.root, home)
            changed = settings.uninstall(path, spec, repo.root) > 0 if scope != "user" else False
            was_on = spec.name in recording(repo.gitdir)
            wiring.take_down(repo.gitdir, repo.root)
            commands.set_recording(repo, spec.name, False)
            githooks.wire(repo, on=False)  # (git's hooks go once nothing records here)
            return Wired(spec, scope, path, changed or was_on, in_place=True)
        scope = scope or "project"
        path = settings_file(spec, scope, repo.root, home)
        changed = settings.uninstall(path, spec, repo.root) > 0
        wiring.take_down(repo.gitdir, repo.root)
        recorded = _record(repo, path) if changed and scope != "local" else None
        return Wired(spec, scope, path, changed, recorded)
    finally:
        repo.close()


def elsewhere(spec: HookSpec, scope: str, start: Path, home: Path) -> list[Path]:
    """The other settings files holding gitspace's hooks for ``spec``'s harness that it reads in
    this checkout too: it runs them all, so each event would arrive as often."""
    found = []
    for row, other, installed, _ in status(start, home, spec, ask_codex=False):
        if row.name == spec.name and other != scope and any(installed.events.values()):
            found.append(installed.path)
    return found


def in_place_scope(spec: HookSpec) -> str:
    """Where a harness's hooks go in a person's own checkout: a settings file of the checkout
    that git need not see (``local``), else the person's own (``user``)."""
    return "local" if "local" in spec.scopes else "user"


def _install_in_place(spec: HookSpec, scope: str | None, repo: GitRepo, home: Path,
                      program: str, commit_transcript: bool) -> Wired:
    from .events import Options
    from .inplace import commands, line

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
    line.own_folder(repo.gitdir)  # (refused before anything is written when a link stands there)
    path = settings_file(spec, place, repo.root, home)
    excluded = _keep_out_of_git(repo, path) if place != "user" else False
    command = settings.hook_command(program, spec.name, quiet_outside=place == "user")
    http = _resident(repo, spec, program, False, posts=place != "user")
    changed = settings.install(path, spec, command, None if place == "user" else repo.root,
                               http=http)
    commands.set_recording(repo, spec.name, True)
    githooks.wire(repo, on=True)  # the authorship notes of the person's commits (provenance/)
    started = commands.begin(repo, spec.name, Options())
    return Wired(spec, place, path, changed, started.ops[-1] if started.ops else None,
                 in_place=True, excluded=excluded)


def _resident(repo: GitRepo, spec: HookSpec, program: str, commit_transcript: bool, *,
              posts: bool = True) -> settings.Resident | None:
    """Set up the checkout's resident recorder; how a harness that posts its events reaches it,
    from a settings file no commit holds (``posts``: its secret is in it). None: the hooks are
    commands, which hand their calls to it (``client.forward``)."""
    from .. import config

    if not config.resident_enabled():  # (GITSPACE_RESIDENT=off: command hooks, as before)
        return None
    if not (spec.http and posts):
        wiring.set_up(repo.gitdir)
        return None
    flags = ("--commit-transcript",) if commit_transcript else ()
    return wiring.http_hooks(repo.gitdir, program, spec.name, flags)


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


def status(start: Path, home: Path, only: HookSpec | None = None, ask_codex: bool = True,
           ) -> list[tuple[HookSpec, str, settings.Installed, Any]]:
    """Every harness (or ``only`` one) and scope, installed or not (project scopes read from
    ``start``'s checkout), with what Codex says of its hooks where they are
    (``codex_trust.Review``, when ``ask_codex``)."""
    try:
        repo = GitRepo.open(start)
        root: Path | None = repo.root
        repo.close()
    except Exception:  # noqa: BLE001  (outside a repository only user scopes apply)
        root = None
    rows = []
    for spec in [only] if only else adapters.specs().values():  # every harness gitspace wires
        for scope in spec.scopes:
            if scope != "user" and root is None:
                continue
            path = settings_file(spec, scope, root or start, home)
            found = settings.status(path, spec, None if scope == "user" else root)
            review = None
            if ask_codex and spec.name == "codex" and found.command:
                from . import codex_trust

                review = codex_trust.review(root or start, path, found.command)
            rows.append((spec, scope, found, review))
    return rows


def _record(repo: GitRepo, path: Path) -> str | None:
    """Commit the settings file just written as an outside edit (by whoever ran the command)."""
    rel = path.relative_to(repo.root).as_posix()
    with Workspace(repo, tools=RecordingOnly()) as ws:
        return record_paths(ws, [rel], f"Written by 'gitspace hooks' ({rel}).")
