"""gitspace's git hooks (``post-commit``, ``post-rewrite``, ``post-merge``, ``pre-push``): put in
beside the person's own by ``gitspace hooks install``, taken out by ``gitspace hooks uninstall``.

Invariants:
- They go where git runs hooks (``git rev-parse --git-path hooks``: ``core.hooksPath`` when set,
  husky's ``.husky/_`` or any other, else ``.git/hooks``). A hook already there is never
  replaced: it is renamed ``<name>.gitspace-chained`` (its bytes and mode untouched) and
  gitspace's runs it first, with the same arguments, standard input and ``$0`` (a shell script
  is run as if from its own name, which husky's stubs and the pre-commit framework's scripts
  read), and exits with its status: a pre-push it refuses is refused.
- ``uninstall`` puts every renamed hook back under its name and removes gitspace's: the folder
  is as it was, byte for byte (a hooks folder gitspace had to make is removed again if empty).
  What was installed, and where, is kept in ``<git dir>/gitspace/provenance/hooks.json``.
- The hooks never fail the person's git and say nothing: gitspace's part runs with its output
  thrown away, only when its Python still exists (``gitspace`` uninstalled: the hook still runs
  the chained one, and nothing else), and every failure of it is left for the next hook to
  catch up (``githook``).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

from ..errors import GitspaceError
from ..storage import statefiles
from ..storage.gitrepo import GitRepo

HOOKS = ("post-commit", "post-rewrite", "post-merge", "pre-push")
MARK = "# gitspace-provenance-hook"
CHAINED = ".gitspace-chained"
STATE = "gitspace/provenance/hooks.json"
READS_STDIN = ("post-rewrite", "pre-push")

_BODY = r"""#!/bin/sh
{mark} (written by 'gitspace hooks install'; 'gitspace hooks uninstall' removes it)
# Writes the authorship notes of refs/notes/ai (docs/provenance.md). The hook that was here
# before is {name}{chained} beside this file, and runs first, as it always did.
GITSPACE_PY={python}
GITSPACE_BOOT={boot}
{ask_program}chained="$(dirname "$0")/{name}{chained}"
{read_input}status=0
if [ -x "$chained" ]; then
    case $(head -n 1 "$chained" 2>/dev/null) in
        '#!'*bash*) with=bash ;;
        '#!'*/sh | '#!'*/sh' '* | '#!'*' sh' | '#!'*' sh '* | '#!'*dash*) with=sh ;;
        *) with= ;;
    esac
    if [ -n "$with" ]; then
        {feed}GITSPACE_CHAINED="$chained" "$with" -c '. "$GITSPACE_CHAINED"' "$0" "$@" || status=$?
    else
        {feed}"$chained" "$@" || status=$?
    fi
fi
{ours}exit $status
"""

_OURS = r"""if [ -x "$GITSPACE_PY" ]; then
    {feed}(unset GIT_INDEX_FILE GIT_PREFIX
        {ask}exec "$GITSPACE_PY" -E -S -c "$GITSPACE_BOOT" {name} "$@") >/dev/null 2>&1
fi
"""

# The hooks a checkout's resident recorder runs when one is up (harness/resident/server.py):
# bash asks it over the loopback address with the secret it keeps, and the hook's own Python
# runs only when that did not answer 200 (no resident, no bash, anything else).
SERVED = ("post-commit", "post-rewrite", "post-merge")
_ASK = r"""GITSPACE_INPUT="$input" /bin/bash -c "$GITSPACE_ASK" {name} "$@" </dev/null && exit 0
        """
_PROGRAM = r"""[ "$GITSPACE_RESIDENT" != off ] || exit 1
LC_ALL=C
g=$(git rev-parse --absolute-git-dir 2>/dev/null) || exit 1
r=$g/gitspace/resident
for f in port secret pid; do [ -f "$r/$f" ] && [ ! -L "$r/$f" ] || exit 1; done
{ read -r port <"$r/port" && read -r key <"$r/secret" && read -r pid <"$r/pid"; } || exit 1
case $port:$pid in *[!0-9:]* | :* | *:) exit 1 ;; esac
kill -0 "$pid" 2>/dev/null || exit 1
IFS='&'; query="$*"; unset IFS
exec 3<>"/dev/tcp/127.0.0.1/$port" || exit 1
head='POST /git/%s?%s HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nAuthorization: Bearer %s\r\n'
head="$head"'Content-Length: %s\r\nConnection: close\r\n\r\n%s'
printf "$head" "$0" "$query" "$port" "$key" "${#GITSPACE_INPUT}" "$GITSPACE_INPUT" >&3 || exit 1
IFS= read -r -t 25 status <&3 || exit 1
case $status in 'HTTP/1.1 200 '*) exit 0 ;; esac
exit 1
"""


# pre-push: gitspace's part decides (exit 0) that refs/notes/ai goes too, once it merged the
# remote's notes into the local ones; the person's push is never failed for it.
_PUSH = r"""if [ "$status" -eq 0 ] && [ -x "$GITSPACE_PY" ] && [ -z "$GITSPACE_NOTES_PUSH" ]; then
    if printf '%s' "$input" | (unset GIT_INDEX_FILE GIT_PREFIX
            exec "$GITSPACE_PY" -E -S -c "$GITSPACE_BOOT" pre-push "$@") >/dev/null 2>&1; then
        GITSPACE_NOTES_PUSH=1 git push --no-verify --quiet "$1" \
            refs/notes/ai:refs/notes/ai >/dev/null 2>&1 || echo "gitspace: the authorship \
notes (refs/notes/ai) were not pushed to $1; the next push tries again." >&2
    fi
fi
"""


def _script(name: str, python: str, paths: list[str]) -> str:
    boot = ("import sys; sys.path[:0] = " + json.dumps(paths) + "; "
            "from gitspace.provenance.githook import main; sys.exit(main(sys.argv[1:]))")
    stdin = name in READS_STDIN
    feed = "printf '%s' \"$input\" | " if stdin else ""
    ask = _ASK.format(name=name) if name in SERVED else ""
    ours = _PUSH if name == "pre-push" else _OURS.format(feed=feed, name=name, ask=ask)
    return _BODY.format(mark=MARK, name=name, chained=CHAINED, python=shlex.quote(python),
                        boot=shlex.quote(boot), feed=feed, ours=ours,
                        ask_program=f"GITSPACE_ASK={shlex.quote(_PROGRAM)}\n" if ask else "",
                        read_input="input=$(cat; echo x); input=${input%x}\n" if stdin else "")


def _paths() -> list[str]:
    """Where this gitspace and the packages it reads packs with are imported from."""
    import importlib.util

    found = [str(Path(__file__).resolve().parents[2])]  # (the folder holding gitspace/)
    spec = importlib.util.find_spec("git")
    if spec is not None and spec.origin:
        found.append(str(Path(spec.origin).resolve().parent.parent))
    return list(dict.fromkeys(found))


def hooks_dir(repo: GitRepo) -> Path:
    """Where the person's git runs hooks: ``core.hooksPath`` as their configuration sets it
    (gitspace's own git runs with it pointed away), relative to the work tree; else the hooks
    folder of the repository."""
    out = repo.git("config", "--show-scope", "--get-all", "core.hooksPath", check=False)
    found = [row.split("\t", 1)[1] for row in out.decode("utf-8", "surrogateescape").splitlines()
             if "\t" in row and not row.startswith("command")]
    if not found or not found[-1]:
        return repo.commondir / "hooks"
    path = Path(found[-1]).expanduser()
    return path if path.is_absolute() else repo.root / path


def ours(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return MARK.encode() in f.read(512)
    except OSError:
        return False


def _state(repo: GitRepo) -> dict[str, object]:
    try:
        data = json.loads(statefiles.read(repo.commondir, STATE) or b"{}")
    except (ValueError, OSError, statefiles.StateRefused):
        return {}
    return data if isinstance(data, dict) else {}


def install(repo: GitRepo, python: str | None = None) -> list[str]:
    """Put gitspace's hooks in (again: each of its own is rewritten, nothing else); the hook
    names newly chained to one of the person's."""
    folder = hooks_dir(repo)
    state = _state(repo)
    made = bool(state.get("made")) if state.get("dir") == str(folder) else False
    if not folder.exists():
        folder.mkdir(parents=True)
        made = True
    if folder.is_symlink() or not folder.is_dir():
        raise GitspaceError(f"{folder} (where git runs hooks) is not a folder, so gitspace put "
                            "no hook there. Nothing was changed.",
                            hint="Fix core.hooksPath ('git config core.hooksPath'), then run "
                                 "'gitspace hooks install' again.")
    chained = []
    python = python or sys.executable
    paths = _paths()
    for name in HOOKS:
        path, kept = folder / name, folder / (name + CHAINED)
        if (path.exists() or path.is_symlink()) and not ours(path):
            if kept.exists() or kept.is_symlink():
                raise GitspaceError(
                    f"{path} is a hook of yours, and {kept.name} is there too, so gitspace would "
                    "have to replace one of them. Nothing more was changed.",
                    hint="Move one of them away, then run 'gitspace hooks install' again.")
            os.rename(path, kept)
            chained.append(name)
        _write(path, _script(name, python, paths))
    statefiles.write(repo.commondir, STATE, json.dumps(
        {"dir": str(folder), "made": made, "hooks": list(HOOKS)}).encode())
    return chained


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.gitspace-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o755)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)
    os.replace(tmp, path)


def uninstall(repo: GitRepo) -> list[str]:
    """Take gitspace's hooks out and put every chained hook back; the names put back."""
    state = _state(repo)
    folder = Path(str(state["dir"])) if isinstance(state.get("dir"), str) else hooks_dir(repo)
    back = []
    for name in HOOKS:
        path, kept = folder / name, folder / (name + CHAINED)
        if ours(path):
            path.unlink()
        if (kept.exists() or kept.is_symlink()) and not (path.exists() or path.is_symlink()):
            os.rename(kept, path)
            back.append(name)
    if state.get("made") and folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
    statefiles.remove(repo.commondir, STATE)
    return back


def installed(repo: GitRepo) -> bool:
    folder = hooks_dir(repo)
    return all(ours(folder / name) for name in HOOKS)


def wire(repo: GitRepo, *, on: bool) -> None:
    """What ``gitspace hooks install`` (``on``) and ``uninstall`` do here: git's hooks go in with
    the first harness recorded in this checkout and out with the last."""
    if on:
        install(repo)
        return
    from ..harness.route import recording

    if not recording(repo.gitdir):
        uninstall(repo)
