#!/usr/bin/env python3
"""What the gitspace action (``action.yml``) and the GitLab CI template run, step by step.

Invariant: this script decides only which commits to check and how to report; the checks are
``gitspace verify`` and ``gitspace replay`` themselves, run as a person runs them (``--json``),
and their exit codes decide the job's. It needs Python's standard library, git, and (for
``check`` and ``gitlab``) the gitspace the step before installed (``$GITSPACE_VENV/bin``).

Steps (``python3 ci/gitspace_ci.py STEP``):
- ``setup`` (GitHub): where the environment and the report go, and the cache key (the Python
  and every file of the action's gitspace): step outputs ``venv``, ``cache-key``, ``report-dir``.
- ``github``: fetch the rest of a shallow clone and the checkpoint tags; choose the range:
  ``tip`` (input ``branch``, else the pull request's head, else the pushed commit) and ``base``
  (input ``base-ref``, else the pull request's base branch, else what the push replaced, else
  the default branch; when none applies, the whole history); verify and replay ``base..tip``;
  write the job summary, the report folder and the step outputs ``result``, ``matched``,
  ``ops-checked``, ``reexecuted``, ``first-divergence``, ``tip``, ``base``; and the range's
  authorship from the notes (refs/notes/ai): its summary, ``provenance.json`` and the outputs
  ``agent-lines``, ``person-lines``, ``unattested-lines``, ``notes-attached``, ``authorship``.
  On a push, a squash commit the host made first gets the note of the commits it joined
  (``gitspace notes attach``), pushed back to origin.
- ``gitlab``: the same for a GitLab CI job (``CI_*`` variables; the inputs as ``GITSPACE_*``
  variables), the outputs written as a dotenv report (``gitspace.env``).
Exit codes: 0 every op checked matched, 1 anything else (a divergence, a malformed op, nothing
re-executed, a history that cannot be fetched), each said in a sentence with what to do.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ZEROS = "0" * 40
TAGS = "refs/tags/gitspace/*:refs/tags/gitspace/*"
NOT_OPS = ("not an op", "merge commit", "root commit")


class Stop(Exception):  # noqa: N818 (a job-ending sentence, not a failure of this script)
    """The job cannot check anything: the message says why and what to do."""


@dataclass
class Range:
    tip: str
    base: str | None
    why: str  # how the range was chosen, for the summary


@dataclass
class Outcome:
    result: str  # match, diverged, empty, malformed, error, nothing
    lines: list[str] = field(default_factory=list)  # the summary, Markdown
    outputs: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.result in ("match", "nothing")


# -- git -------------------------------------------------------------------------------------

def git(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["git", *args], capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise Stop(f"git {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc


def commit_of(rev: str) -> str | None:
    proc = git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False)
    return proc.stdout.strip() or None


def have(rev: str, remote: str = "origin") -> str | None:
    """``rev`` as a commit, fetched from ``remote`` first when this clone lacks it."""
    found = commit_of(rev)
    if found is None and rev and not rev.startswith("-"):
        name = rev.removeprefix(f"{remote}/")
        if git("fetch", "--quiet", "--no-tags", remote, name, check=False).returncode == 0:
            found = commit_of(rev) or commit_of("FETCH_HEAD")
    return found


def deepen(fetch: bool, depth_fix: str) -> list[str]:
    """Make a shallow clone whole and bring the checkpoint tags; what was done, as notes."""
    notes = []
    shallow = git("rev-parse", "--is-shallow-repository").stdout.strip() == "true"
    if shallow and not fetch:
        raise Stop(f"This checkout is shallow, so its history stops after the commits it "
                   f"fetched and replay would check nothing before them. {depth_fix}")
    if shallow:
        proc = git("fetch", "--quiet", "--unshallow", "--no-tags", "origin", check=False)
        if proc.returncode != 0:
            raise Stop(f"This checkout is shallow, and fetching the rest of its history from "
                       f"origin failed ({proc.stderr.strip() or 'no reason given'}). {depth_fix}")
        notes.append("The checkout was shallow: fetched the rest of its history from origin.")
    if fetch:
        proc = git("fetch", "--quiet", "--no-tags", "origin", TAGS, check=False)
        if proc.returncode != 0:
            notes.append("Could not fetch the checkpoint tags from origin "
                         f"({proc.stderr.strip()}); replay fetches those a restore needs.")
    return notes


# -- the range -------------------------------------------------------------------------------

def github_range(env: dict[str, str]) -> Range:
    event: dict[str, Any] = {}
    if env.get("GITHUB_EVENT_PATH"):
        try:
            event = json.loads(Path(env["GITHUB_EVENT_PATH"]).read_text())
        except (OSError, ValueError):
            event = {}
    pull = event.get("pull_request") or {}
    name = env.get("GITHUB_EVENT_NAME", "")
    default = (event.get("repository") or {}).get("default_branch") or ""
    tip_rev = env.get("INPUT_BRANCH") or (pull.get("head") or {}).get("sha") \
        or env.get("GITHUB_SHA") or "HEAD"
    tip = have(tip_rev)
    if tip is None:
        raise Stop(f"The commit to check, {tip_rev}, is not in this clone and could not be "
                   "fetched. Pass the input 'branch' a branch or commit of this repository.")
    given = env.get("INPUT_BASE_REF", "")
    if given:
        return Range(tip, _base(given, tip, required=True), f"after {given} (input base-ref)")
    if pull:
        ref = env.get("GITHUB_BASE_REF") or (pull.get("base") or {}).get("ref", "")
        for rev in (f"origin/{ref}" if ref else "", (pull.get("base") or {}).get("sha", "")):
            base = _base(rev, tip) if rev else None
            if base:
                return Range(tip, base, f"the commits the pull request adds to {ref or rev}")
    before = event.get("before") or ""
    if name == "push" and before and before != ZEROS:
        base = _base(before, tip)
        if base:
            return Range(tip, base, f"the commits the push added after {before[:12]}")
    base = _base(f"origin/{default}", tip) if default else None
    if base:
        return Range(tip, base, f"the commits {default} does not have")
    return Range(tip, None, "the whole history")


def _base(rev: str, tip: str, required: bool = False) -> str | None:
    found = have(rev)
    if found is None and required:
        raise Stop(f"The base {rev} is not in this clone and could not be fetched from origin. "
                   "Pass the input 'base-ref' a branch or commit of this repository.")
    if found is not None and found == tip and not required:
        return None  # the tip is the base itself (a push to the default branch): look further
    return found


def gitlab_range(env: dict[str, str]) -> Range:
    tip_rev = env.get("GITSPACE_BRANCH") or env.get("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA") \
        or env.get("CI_COMMIT_SHA") or "HEAD"
    tip = have(tip_rev)
    if tip is None:
        raise Stop(f"The commit to check, {tip_rev}, is not in this clone and could not be "
                   "fetched. Set GITSPACE_BRANCH to a branch or commit of this project.")
    if env.get("GITSPACE_BASE_REF"):
        given = env["GITSPACE_BASE_REF"]
        return Range(tip, _base(given, tip, required=True), f"after {given} (GITSPACE_BASE_REF)")
    target = env.get("CI_MERGE_REQUEST_TARGET_BRANCH_NAME", "")
    for rev in (env.get("CI_MERGE_REQUEST_DIFF_BASE_SHA", ""), f"origin/{target}" if target else ""):
        base = _base(rev, tip) if rev else None
        if base:
            return Range(tip, base, f"the commits the merge request adds to {target}")
    before = env.get("CI_COMMIT_BEFORE_SHA", "")
    if env.get("CI_PIPELINE_SOURCE") == "push" and before and before != ZEROS:
        base = _base(before, tip)
        if base:
            return Range(tip, base, f"the commits the push added after {before[:12]}")
    default = env.get("CI_DEFAULT_BRANCH", "")
    base = _base(f"origin/{default}", tip) if default else None
    if base:
        return Range(tip, base, f"the commits {default} does not have")
    return Range(tip, None, "the whole history")


# -- the check -------------------------------------------------------------------------------

def check(bin_dir: Path, span: Range, report: Path, *, no_scripts: bool, allow_empty: bool,
          notes: list[str]) -> Outcome:
    report.mkdir(parents=True, exist_ok=True)
    if span.base is not None and git("merge-base", "--is-ancestor", span.tip, span.base,
                                      check=False).returncode == 0:
        outcome = Outcome("nothing", ["### gitspace: nothing to check\n",
                                      f"{span.base[:12]} already contains {span.tip[:12]}: "
                                      "no commit to verify or replay."])
        return _finish(outcome, span, notes, {}, "0", "")
    since = ["--from", span.base] if span.base else []
    verify = _run(bin_dir, report, "verify", [span.tip, *since])
    options = (["--no-scripts"] if no_scripts else []) + (["--allow-empty"] if allow_empty else [])
    replay = _run(bin_dir, report, "replay", [span.tip, *since, *options])
    data = replay.get("json") or {}
    outcome = Outcome(_result(verify, replay))
    where = f"`{span.base[:12]}..{span.tip[:12]}`" if span.base else f"the whole history of `{span.tip[:12]}`"
    checked = data.get("checked", 0) - sum(data.get("recorded_why", {}).get(k, 0) for k in NOT_OPS)
    title = {"match": "every op matched", "diverged": "diverged", "empty": "no op re-executed",
             "malformed": "malformed ops", "error": "could not check"}[outcome.result]
    outcome.lines += [f"### gitspace: {title}\n", f"Checked {where}: {md_text(span.why)}.\n"]
    if data:
        # The replay's own sentences (gitspace/replay/summary.py): the same words as its CLI,
        # each as Markdown that means only itself (they quote names from history).
        outcome.lines += [f"{md_text(line)}\n" for line in data.get("summary", [])]
        if data.get("fetched"):
            outcome.lines.append("\nCheckpoints fetched from a remote: "
                                 f"{md_text(', '.join(data['fetched']))}.")
    outcome.lines += _verify_lines(verify) + _replay_lines(replay, data)
    return _finish(outcome, span, notes, data, str(max(checked, 0)),
                   _first(outcome.result, verify, replay, data))


def _run(bin_dir: Path, report: Path, command: str, args: list[str]) -> dict[str, Any]:
    proc = subprocess.run([str(bin_dir / "gitspace"), command, *args, "--json"],
                          capture_output=True, text=True)
    (report / f"{command}.json").write_text(proc.stdout)
    (report / f"{command}.err").write_text(proc.stderr)
    try:
        parsed = json.loads(proc.stdout) if proc.stdout.strip() else None
    except ValueError:
        parsed = None
    return {"code": proc.returncode, "json": parsed, "error": proc.stderr.strip()}


def _result(verify: dict[str, Any], replay: dict[str, Any]) -> str:
    data = replay.get("json")
    if data is None or verify.get("json") is None:
        return "error"
    if not verify["json"].get("ok"):
        return "malformed"
    if replay["code"] == 0 and data.get("ok"):
        return "match"
    return "empty" if data.get("result") == "empty" else "diverged"


def _verify_lines(verify: dict[str, Any]) -> list[str]:
    data = verify.get("json")
    if data is None:
        said = verify["error"] or f"(exit {verify['code']}, no message)"
        return ["\n`gitspace verify` could not run:\n", _fence([said]), said, _fence([said])]
    lines = [f"\nverify: {data['ops']} op(s) in {data['commits']} commit(s), "
             f"{len(data['problems'])} problem(s)."]
    lines += [f"- `{p['commit'][:12]}`: {md_text(p['problem'])}" for p in data["problems"][:20]]
    return lines


def _replay_lines(replay: dict[str, Any], data: dict[str, Any]) -> list[str]:
    if not data:
        said = replay["error"] or f"(exit {replay['code']}, no message)"
        return ["\n`gitspace replay` could not run:\n", _fence([said]), said, _fence([said])]
    if data.get("empty"):  # (the summary's sentences said why)
        return ["\nIf that is expected (the range adds only outside edits, commands or plain "
                "commits), set the input `allow-empty`."]
    d = data.get("divergence")
    if not d:
        return []
    op = f", op {_code(d['op_id'])} ({md_text(d['tool'])})" if d.get("op_id") else ""
    lines = [f"\nDiverged at commit {_code(d['commit'])}{op}:\n", f"> {md_text(d['reason'])}\n"]
    if d.get("paths"):
        more = max(0, len(d["paths"]) - 20) + d.get("more_paths", 0)
        lines.append("Paths: " + ", ".join(_code(p) for p in d["paths"][:20])
                     + (f" and {more} more" if more else "") + "\n")
    if d.get("diff"):
        fence = _fence(d["diff"])
        lines += [f"{fence}diff", *d["diff"], fence]
    return lines


# -- authorship (refs/notes/ai) -------------------------------------------------------------

def authorship(bin_dir: Path, span: Range, report: Path, *, attach: bool
               ) -> tuple[list[str], dict[str, str]]:
    """The range's authorship from the notes (``gitspace provenance``), for the summary and the
    outputs; on a push, a squash commit the host made first gets the note of the commits it
    joined (``gitspace notes attach``), pushed back to origin. Notes hold names and ids, never
    transcript text, so neither does anything written here."""
    def gitspace(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(bin_dir / "gitspace"), *args], capture_output=True, text=True)

    said: list[str] = []
    if gitspace("notes", "fetch", "origin").returncode != 0:
        said.append("The authorship notes could not be fetched from origin.")
    attached = []
    if attach and span.base:
        listed = git("rev-list", "--first-parent", "--max-count=50", "--no-merges",
                     f"{span.base}..{span.tip}", check=False).stdout.split()
        for sha in listed:
            if "Attached" in gitspace("notes", "attach", sha).stdout:
                attached.append(sha)
        if attached and gitspace("notes", "push", "origin").returncode != 0:
            said.append("The notes of the squash commits were made here but could not be pushed "
                        "to origin (the job needs 'permissions: contents: write').")
    spec = f"{span.base}..{span.tip}" if span.base else span.tip
    proc = gitspace("provenance", spec, "--json")
    (report / "provenance.json").write_text(proc.stdout)
    try:
        data = json.loads(proc.stdout) if proc.returncode == 0 else None
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return ["\n### Authorship\n", "`gitspace provenance` could not read the range: "
                + one_line(proc.stderr.strip() or f"exit {proc.returncode}")], {}
    total = data["total"]
    lines = ["\n### Authorship\n",
             f"{total['added']} line(s) added in {total['commits']} commit(s) "
             f"({total['noted']} with an authorship note): {total['agent_lines']} by agents, "
             f"{total['person_lines']} by people, {total['unattested']} not attested."]
    if data["agents"]:
        lines += ["", "| agent | model | session | lines | calls |", "|---|---|---|---:|---:|"]
        lines += [f"| {_code(a['agent'])} | {_code(a['model'] or 'unknown')} | "
                  f"{_code((a['session'] or '')[:12])} | {a['lines']} | {a['calls']} |"
                  for a in data["agents"][:50]]
    if attached:
        lines.append(f"\nAttached the note of {len(attached)} squash commit(s) from the commits "
                     "they joined.")
    lines += [f"\n_{one_line(n)}_" for n in said]
    outputs = {"agent-lines": str(total["agent_lines"]), "person-lines": str(total["person_lines"]),
               "unattested-lines": str(total["unattested"]), "notes-attached": str(len(attached)),
               "authorship": json.dumps({"total": total, "agents": data["agents"]},
                                        separators=(",", ":"))}
    return lines, outputs


# -- history's text where Markdown and the runner read it -------------------------------------
# A pull request's history is its author's: its text must not close a code block, start a
# heading, render as HTML (a job summary takes some: a forged path could say "every op
# matched" in an <h3>), or reach the runner as a workflow command.

_MARKUP = re.compile(r"[!-/:-@\[-`{-~]")  # every ASCII punctuation character


def one_line(text: object) -> str:
    """``text`` on one line, every character that is not printable spelled as an escape."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))


def md_text(text: object) -> str:
    """``text`` as Markdown text that means only itself: on one line, and every ASCII
    punctuation character backslash-escaped (CommonMark lets each be), so none of it starts an
    HTML tag, an entity, emphasis, a link or a heading, or ends the line's own markup."""
    return _MARKUP.sub(lambda found: "\\" + found.group(), one_line(text))


def _code(text: object) -> str:
    """``text`` as an inline code span no backtick in it can close."""
    shown = one_line(text)
    ticks = "`" * (1 + max((len(run) for run in re.findall(r"`+", shown)), default=0))
    pad = " " if shown.startswith("`") or shown.endswith("`") else ""
    return f"{ticks}{pad}{shown}{pad}{ticks}"


def _fence(lines: list[str]) -> str:
    """A code fence longer than any run of backticks the lines hold."""
    longest = max((len(run) for line in lines for run in re.findall(r"`+", line)), default=0)
    return "`" * max(3, longest + 1)


def escape_command(text: str) -> str:
    """``text`` as the message of a workflow command (GitHub's own escapes: one line)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _first(result: str, verify: dict[str, Any], replay: dict[str, Any],
           data: dict[str, Any]) -> str:
    """One line: the first op that differs, the first malformed op, or why nothing was checked."""
    d = data.get("divergence") or {}
    problems = (verify.get("json") or {}).get("problems") or []
    if result == "malformed" and problems:
        return f"{problems[0]['commit'][:12]}: {problems[0]['problem']}"
    if d:
        op = f" op {d['op_id']} ({d['tool']})" if d.get("op_id") else ""
        return f"{d['commit'][:12]}{op}: {d['reason']}"
    if data.get("empty"):
        return f"replay {data['empty']}"
    if result == "error":
        failed = verify if verify.get("json") is None else replay
        return " ".join((failed.get("error") or f"exit {failed.get('code')}").split())
    return ""


def _finish(outcome: Outcome, span: Range, notes: list[str], data: dict[str, Any],
            checked: str, first: str) -> Outcome:
    if notes:
        outcome.lines += ["", *(f"_{md_text(n)}_" for n in notes)]
    outcome.outputs = {"result": outcome.result, "matched": "true" if outcome.ok else "false",
                       "ops-checked": checked, "reexecuted": str(data.get("reexecuted", 0)),
                       "first-divergence": first, "tip": span.tip, "base": span.base or ""}
    return outcome


def failed_outcome(message: str) -> Outcome:
    return Outcome("error", ["### gitspace: could not check\n", message],
                   {"result": "error", "matched": "false", "ops-checked": "0", "reexecuted": "0",
                    "first-divergence": message, "tip": "", "base": ""})


# -- writing where CI reads ------------------------------------------------------------------

def github_output(env: dict[str, str], values: dict[str, str]) -> None:
    path = env.get("GITHUB_OUTPUT")
    if not path:
        return
    with open(path, "a", encoding="utf-8") as out:
        for name, value in values.items():
            marker = "gitspace_" + hashlib.sha256(value.encode()).hexdigest()[:16]
            out.write(f"{name}<<{marker}\n{value}\n{marker}\n")


def publish(outcome: Outcome, report: Path, summary: str | None, *, github: bool = False) -> None:
    text = "\n".join(outcome.lines) + "\n"
    report.mkdir(parents=True, exist_ok=True)
    (report / "summary.md").write_text(text)
    if summary:
        with open(summary, "a", encoding="utf-8") as out:
            out.write(text)
    if not github:
        print(text)
        return
    # The report quotes the history (a diff of its files): a runner must not read a line of it
    # as a workflow command, so command processing is off while it prints (GitHub's own advice
    # for untrusted text), under a token the history cannot know.
    token = secrets.token_hex(16)
    print(f"::stop-commands::{token}\n{text}\n::{token}::")


def setup(env: dict[str, str]) -> int:
    # This script runs on the runner's own python3 (3.8 or later reads it), before any gitspace.
    if sys.version_info < (3, 11):  # noqa: UP036
        raise Stop(f"gitspace needs Python 3.11 or later, and python3 here is "
                   f"{sys.version.split()[0]}. Add actions/setup-python (3.11 or later) before "
                   "this step.")
    action = Path(env.get("GITHUB_ACTION_PATH") or Path(__file__).resolve().parents[1])
    temp = Path(env.get("RUNNER_TEMP") or "/tmp")
    digest = hashlib.sha256(f"{sys.version}\n{sys.executable}\n".encode())
    for path in sorted([action / "pyproject.toml", *(action / "gitspace").rglob("*")]):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(path.relative_to(action).as_posix().encode() + b"\0" + path.read_bytes())
    key = f"gitspace-{env.get('RUNNER_OS', 'os')}-{digest.hexdigest()[:32]}"
    # The tool cache outlives a job on a self-hosted runner (a venv there is reused as is); on a
    # hosted runner actions/cache restores it to the same path.
    tools = Path(env.get("RUNNER_TOOL_CACHE") or temp)
    github_output(env, {"venv": str(tools / "gitspace" / key / "venv"), "cache-key": key,
                        "report-dir": str(temp / "gitspace-report")})
    return 0


def main(argv: list[str]) -> int:
    env = dict(os.environ)
    step = argv[1] if len(argv) > 1 else ""
    truthy = lambda name: env.get(name, "").strip().lower() in ("1", "true", "yes")  # noqa: E731
    try:
        if step == "setup":
            return setup(env)
        if step == "github":
            notes = deepen(env.get("INPUT_FETCH", "true") != "false",
                           "Set 'fetch-depth: 0' on actions/checkout.")
            return _conclude(env, github_range(env), notes, Path(env["GITSPACE_REPORT"]),
                             truthy("INPUT_NO_SCRIPTS"), truthy("INPUT_ALLOW_EMPTY"),
                             pushed=env.get("GITHUB_EVENT_NAME") == "push")
        if step == "gitlab":
            notes = deepen(env.get("GITSPACE_FETCH", "true") != "false",
                           "Set the variable GIT_DEPTH: 0 on this job.")
            return _conclude(env, gitlab_range(env), notes, Path(env["GITSPACE_REPORT"]),
                             truthy("GITSPACE_NO_SCRIPTS"), truthy("GITSPACE_ALLOW_EMPTY"),
                             pushed=env.get("CI_PIPELINE_SOURCE") == "push")
    except Stop as e:
        report = env.get("GITSPACE_REPORT")
        outcome = failed_outcome(str(e))
        if report:
            publish(outcome, Path(report), env.get("GITHUB_STEP_SUMMARY"),
                    github=bool(env.get("GITHUB_ACTIONS")))
        github_output(env, outcome.outputs)
        print(f"::error title=gitspace::{escape_command(str(e))}" if env.get("GITHUB_ACTIONS")
              else f"error: {e}", file=sys.stderr)
        return 1
    print(f"usage: {argv[0]} setup|github|gitlab", file=sys.stderr)
    return 2


def _conclude(env: dict[str, str], span: Range, notes: list[str], report: Path,
              no_scripts: bool, allow_empty: bool, pushed: bool = False) -> int:
    bin_dir = Path(env["GITSPACE_VENV"]) / "bin"
    outcome = check(bin_dir, span, report, no_scripts=no_scripts, allow_empty=allow_empty,
                    notes=notes)
    lines, outputs = authorship(bin_dir, span, report, attach=pushed)
    outcome.lines += lines
    outcome.outputs.update(outputs)
    publish(outcome, report, env.get("GITHUB_STEP_SUMMARY"), github=bool(env.get("GITHUB_ACTIONS")))
    github_output(env, outcome.outputs)
    (report / "gitspace.env").write_text("".join(
        f"GITSPACE_{k.upper().replace('-', '_')}={' '.join(v.split())}\n"
        for k, v in outcome.outputs.items()))
    if not outcome.ok and env.get("GITHUB_ACTIONS"):
        print(f"::error title=gitspace {outcome.result}::"
              f"{escape_command(outcome.outputs['first-divergence'])}", file=sys.stderr)
    return 0 if outcome.ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
