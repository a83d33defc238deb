"""Commands on the authorship of lines: blame, provenance, purge, and the notes' travels."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from .common import JsonOpt, echo, emit_json, state
from .shared import relative

notes_app = typer.Typer(help="The authorship notes (refs/notes/ai): fetch and merge them, push "
                             "them (docs/provenance.md).", no_args_is_help=True)


class Format(StrEnum):
    text = "text"
    json = "json"
    git_ai = "git-ai"
    agent_trace = "agent-trace"


def _repo() -> Any:
    from ..storage.gitrepo import GitRepo

    return GitRepo.open(Path(state.directory))


def provenance(
    rev: Annotated[Optional[str], typer.Argument(metavar="REV | RANGE", help=(  # noqa: UP045
        "A commit (default HEAD) or a range git understands (main..feature)."))] = None,
    format_: Annotated[Format, typer.Option("--format", help=(
        "text, json (docs/json.md), git-ai (the notes as the Git AI Standard writes them) or "
        "agent-trace (Agent Trace v0.1 records)."))] = Format.text,
    as_json: JsonOpt = False,
) -> None:
    """The authorship of a commit or a range: the lines added by each agent (harness,
    session, model) and by people, from the authorship notes (refs/notes/ai)."""
    from ..provenance import agenttrace, report
    from ..provenance.notes import Notes

    repo = _repo()
    try:
        if as_json or format_ is Format.json:
            emit_json(report.as_json(rev, report.report(repo, rev)), "provenance")
            return
        commits = report.commits_of(repo, rev)
        if format_ is Format.agent_trace:
            found = agenttrace.records(repo, commits)
            echo(json.dumps(found[0] if found and ".." not in (rev or "") else found, indent=2,
                            ensure_ascii=False))
            return
        if format_ is Format.git_ai:
            _git_ai(Notes(repo), commits, rev)
            return
        _text(report.report(repo, rev), rev)
    finally:
        repo.close()


def _git_ai(notes: Any, commits: list[str], rev: str | None) -> None:
    from ..provenance import authorship

    for sha in commits:
        note = notes.get(sha)
        if note is None:
            continue
        if ".." in (rev or ""):
            echo(f"commit {sha}")
        echo(authorship.dump(note).rstrip("\n"))


def _text(reports: list[Any], rev: str | None) -> None:
    from ..provenance import report

    summary: dict[str, Any] = report.totals(reports)
    total = summary["total"]
    echo(f"{rev or 'HEAD'}: {total['commits']} commit(s), {total['noted']} with an authorship "
         f"note; {total['added']} line(s) added: {total['agent_lines']} by agents, "
         f"{total['person_lines']} by people, {total['unattested']} not attested.")
    for agent in summary["agents"]:
        echo(f"  {agent['agent']}: {agent['lines']} line(s) in {agent['calls']} call(s), "
             f"session {agent['session'] or '?'}, model {agent['model'] or 'unknown'}")
    for person in summary["people"]:
        echo(f"  {person['author']} (person): {person['lines']} line(s)")
    for r in reports:
        if r.problem:
            echo(f"  {r.commit[:10]}: {r.problem}")


def purge(
    path: Annotated[str, typer.Argument(help="The file (or folder) to take out of what "
                                             "gitspace keeps.")],
) -> None:
    """Take a file an agent wrote (a secret) out of everything gitspace recorded in place: the
    ops' trees, their arguments and results, the objects. Your own commits are not touched."""
    from ..provenance import purge as purging

    repo = _repo()
    try:
        done = purging.purge(repo, relative(repo, path))
    finally:
        repo.close()
    echo(f"Purged {done.path} from {len(done.lines)} recorded line(s): {done.ops} op record(s) "
         f"rewritten, {len(done.deleted)} object(s) deleted; it is excluded from recording "
         "from now on.")
    if done.kept:
        echo(f"{len(done.kept)} version(s) of it are still in your own history, index or stash "
             "(gitspace leaves those to you: 'git filter-repo --invert-paths --path "
             f"{done.path}' takes it out of your history).")


@notes_app.command("fetch")
def notes_fetch(
    remote: Annotated[str, typer.Argument(help="The remote (default origin).")] = "origin",
) -> None:
    """Fetch the remote's notes and merge them into yours: nothing of either side is lost."""
    from ..provenance import travel

    repo = _repo()
    try:
        tip = travel.pull(repo, remote)
    finally:
        repo.close()
    echo(f"refs/notes/ai is at {tip[:10]} with {remote}'s notes merged in." if tip else
         f"Neither you nor {remote} have authorship notes yet.")


@notes_app.command("push")
def notes_push(
    remote: Annotated[str, typer.Argument(help="The remote (default origin).")] = "origin",
) -> None:
    """Merge the remote's notes into yours, then push refs/notes/ai there (what the pre-push
    hook does with every push of a branch)."""
    from ..errors import GitspaceError
    from ..provenance import travel
    from ..team.remote import push_refspecs

    repo = _repo()
    try:
        tip = travel.pull(repo, remote)
        if tip is None:
            echo("There are no authorship notes to push.")
            return
        proc = push_refspecs(repo, remote, [f"{travel.REF}:{travel.REF}"])
        if proc.returncode != 0:
            raise GitspaceError(f"Could not push refs/notes/ai to {remote}: "
                                f"{proc.stderr.decode(errors='replace').strip()}",
                                hint="Someone pushed notes meanwhile: run it again.")
    finally:
        repo.close()
    echo(f"Pushed refs/notes/ai ({tip[:10]}) to {remote}.")


@notes_app.command("attach")
def notes_attach(
    commit: Annotated[str, typer.Argument(help="A squash commit a host made (a merged pull "
                                               "request).")],
) -> None:
    """Give a squash commit a host made the note of the commits it joined (their notes, or
    their ops): what the CI action does on a push."""
    from ..errors import NotFound
    from ..provenance import squash

    repo = _repo()
    try:
        sha = repo.rev_parse(f"{commit}^{{commit}}") if not commit.startswith("-") else None
        if sha is None:
            raise NotFound(f"{commit!r} names no commit here.", hint="Name the squash commit.")
        joined = squash.attach(repo, sha)
    finally:
        repo.close()
    echo(f"Attached the note of {sha[:10]} from {len(joined)} commit(s) it squashed." if joined
         else f"{sha[:10]} got no note: it has one, or no noted commit it squashed was found.")
