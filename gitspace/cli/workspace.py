"""Commands on the workspace itself: init, status, tools, call, snapshot."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from .. import config
from ..errors import BadArguments, GitspaceError
from ..storage import bounded
from . import lines
from .common import (
    JsonOpt,
    call_tool,
    echo,
    emit_json,
    here,
    in_place,
    open_workspace,
    render,
    show_result,
    state,
    usage,
)


def init(directory: Annotated[Path, typer.Argument()] = Path(".")) -> None:
    """Make DIRECTORY a new workspace (a git repository the agent owns)."""
    import gitspace

    with gitspace.init(here(directory), agent=state.agent,
                       max_file_bytes=config.max_file_bytes()) as ws:
        echo(f"Initialised gitspace workspace in {ws.root} on branch {ws.branch()}.")


def status(as_json: JsonOpt = False) -> None:
    """Branch, tip op, and outside changes not yet snapshotted."""
    from ..core.snapshot import pending_changes

    with open_workspace() as ws:
        branch, tip = ws.repo.head_branch(), ws.repo.read_ref("HEAD")
        here = in_place(ws)
        if here is not None:
            data = _status_in_place(ws, here)
            emit_json(data, "status") if as_json else echo("\n".join(lines.status(data)))
            return
        changes, skipped = pending_changes(ws) if tip else ({}, [])
        data = {"root": str(ws.root), "branch": branch, "detached": branch is None, "tip": tip,
                "pending": sorted(changes), "too_large": skipped, "last_op": _last_op(ws, tip)}
        if tip is not None and _not_owned(ws):
            data["own"] = True  # a checkout of the person's own, where nothing is recorded
        if as_json:
            emit_json(data, "status")
        else:
            echo("\n".join(lines.status(data)))


def _not_owned(ws: Any) -> bool:
    """Is this plainly a checkout of the person's own? (False when that cannot be told: a
    shallow clone's history ends before the root a workspace starts from.)"""
    try:
        return not ws.owned
    except GitspaceError:
        return False


def _status_in_place(ws: Any, here: Any) -> dict[str, Any]:
    from ..harness import inplace, inplace_record
    from ..harness.events import Options

    found = inplace_record.pending(ws.repo, Options(max_file_bytes=ws.max_file_bytes))
    last = _last_op(ws, here.tip)
    if last is not None and last["op"]["tool"] == "follow":  # where the line starts, or caught up
        parent = last["parents"][0] if last["parents"] else None
        last["line_start"] = parent == last["op"]["args"].get("commit")
    return {"root": str(ws.root), "branch": here.branch, "detached": here.branch is None,
            "tip": here.head, "in_place": True, "line": here.ref, "line_tip": here.tip,
            "recording": inplace.recording(ws.repo.gitdir),
            "pending": found[0] if found else [], "too_large": found[1] if found else [],
            "last_op": last}


def _last_op(ws: Any, tip: str | None) -> dict[str, Any] | None:
    """The log entry of the op at ``tip`` (None: no commit, or no op there)."""
    from ..core import timeline

    if tip is None:
        return None
    found = timeline.entry(ws.repo, tip)
    return found.as_json() if found.op is not None else None


def tools(as_json: JsonOpt = False) -> None:
    """List every tool an agent can call, with its example."""
    from ..tools.registry import registry_of
    from ..tools.scripts import catalog

    with open_workspace() as ws:
        registry = registry_of(ws)
        found = registry.all(ws)
        cat = catalog(ws)
        reserved = set(registry.builtins)
        notes = [f"workspace script {n} overrides the built-in script" for n in cat.overridden]
        notes += [f"script {n} is ignored: a built-in tool has that name"
                  for n in cat.scripts if n in reserved]
        notes += [str(e) for e in cat.errors]
        if as_json:
            emit_json({"tools": [{**t.definition(), "mutates": t.mutates, "origin": t.origin,
                                  "example": t.example} for t in found.values()],
                       "notes": notes}, "tools")
        else:
            render().tools(list(found.values()), notes)


def call(
    tool: str,
    args: Annotated[str, typer.Option(
        "--args", help="Arguments as a JSON object; @FILE reads them from FILE, - from stdin.")
    ] = "{}",
    as_json: JsonOpt = False,
) -> None:
    """Run any tool exactly as an agent would."""
    call_tool(tool, parse_args(args), as_json)


def parse_args(text: str) -> dict[str, Any]:
    """``--args``: JSON inline, ``@FILE`` or ``-`` (stdin). Malformed input is a usage error."""
    source = "--args"
    raw = text
    if text == "-":
        source = "--args - (stdin)"
        data = sys.stdin.buffer.read(bounded.JSON_CAP + 1)
        if len(data) > bounded.JSON_CAP:
            usage(f"{source} is over {bounded.JSON_CAP >> 20} MiB; it was not read.")
        text = _decoded(data, source)
    elif text.startswith("@"):
        path = here(Path(text[1:]))
        source = f"--args {raw}"
        try:  # a regular file only, under the cap, never through a link: never a fifo's wait
            found = bounded.read_named(path, bounded.JSON_CAP, what="The --args file")
        except GitspaceError as e:
            usage(f"{source}: {e.message} {e.hint or ''}".strip())
        except OSError as e:
            usage(f"{source}: cannot read {path}: {e.strerror or e}.")
        if found is None:
            usage(f"{source}: cannot read {path}: there is no such file.")
        text = _decoded(found, source)
    try:
        parsed = json.loads(text)
    except RecursionError:  # what is in it, not how it was typed: refused as every door refuses it
        raise BadArguments(f"{source} nests too deeply to read.",
                           hint="Pass a flat JSON object of the tool's arguments.") from None
    except ValueError as e:
        usage(f"{source} is not valid JSON: {e}. Quote it for the shell, e.g. "
              '--args \'{"path": "notes"}\', or put it in a file and pass --args @FILE.')
    if not isinstance(parsed, dict):
        usage(f'{source} must be a JSON object, like {{"path": "notes"}}.')
    return parsed


def _decoded(data: bytes, source: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        usage(f"{source} is not UTF-8 text: {e}.")


def snapshot(
    author: Annotated[Optional[str], typer.Option(  # noqa: UP045
        help="Who made the changes (default: GITSPACE_AUTHOR, else your git user.name).")] = None,
    message: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "-m", "--message", help="The op's subject line (default: 'external edit of FILES').")
    ] = None,
) -> None:
    """Commit all pending outside changes as one op (source: external)."""
    with open_workspace(author=author) as ws:
        if in_place(ws) is not None:
            if message is not None:
                usage("-m names a snapshot in a workspace; in your own checkout your edits are "
                      "recorded as they are, and 'git commit -m' is how you name them.")
            from ..harness import inplace
            from ..harness.events import Options

            done = inplace.begin(ws.repo, "gitspace", Options(max_file_bytes=ws.max_file_bytes,
                                                              author=author))
            echo(f"Recorded your changes as op {done.ops[-1]}." if done.ops else
                 "unchanged: no outside changes to record.")
            for note in done.notes:
                echo(f"not recorded: {note}")
            return
        show_result(ws.snapshot(message))


def exclude(
    patterns: Annotated[Optional[list[str]], typer.Argument(  # noqa: UP045
        help="gitignore-style patterns to add (none: list the patterns in force).")] = None,
) -> None:
    """Keep paths out of every recording (never read, hashed or committed): in place, snapshots,
    watch and hooks. Patterns go into .git/info/gitspace-exclude; ~/.config/gitspace/exclude
    holds yours for every repository."""
    from ..core import exclude as excludes
    from ..storage.gitrepo import GitRepo

    repo = GitRepo.open(here())
    try:
        if patterns:
            path = excludes.add(repo.commondir, patterns)
            echo(f"Excluded from recording here: {', '.join(patterns)} (in {path}).")
            return
        for path in (config.user_config_dir() / "exclude",
                     repo.commondir / "info" / excludes.FILE):
            try:
                lines_ = [x for x in path.read_text().splitlines()
                          if x.strip() and not x.startswith("#")]
            except OSError:
                continue
            echo(f"{path}:")
            for pattern in lines_:
                echo(f"  {pattern}")
    finally:
        repo.close()
