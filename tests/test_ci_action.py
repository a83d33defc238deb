"""The GitHub action (action.yml) and the GitLab CI template, run as their runners run them.

A real workspace is pushed to a bare remote on disk; each test checks out a clone the way
actions/checkout does (full, or shallow at one commit), writes the event a runner writes, and
runs every ``run`` step of action.yml (tests/ci_runner.py says what is emulated and how). The
action runs from a copy of exactly the files it ships (what git tracks, as the tarball GitHub
downloads for ``uses:`` holds), so a step naming a file the action does not ship fails.

Installing: the first test to need it runs the action's own install step for real (a fresh
venv, ``pip install $GITHUB_ACTION_PATH`` against this machine's package index), once per
test session under a lock (the workers share it); every later run finds that venv where
actions/cache would restore it (``RUNNER_TOOL_CACHE``), which is the action's cache-hit path.
The GitLab job reuses the same venv through its ``GITSPACE_VENV`` variable, after a test checks
that its install command is the action's.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ci_runner import (
    load,
    read_commands,
    run_action,
    run_gitlab_job,
    shipped_references,
    substitute,
    uses_steps,
)
from conftest import REPO, call_ok, git, head

import gitspace

PATH = os.pathsep.join([str(Path(sys.executable).resolve().parent), "/usr/local/bin", "/usr/bin",
                        "/bin"])  # python3 and git; never this checkout's own gitspace
TEMPLATE = "ci/gitspace.gitlab-ci.yml"


# -- what the action ships, installed once -------------------------------------------------------

@pytest.fixture(scope="session")
def shared(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    base = tmp_path_factory.getbasetemp()
    return base if worker_id == "master" else base.parent


@pytest.fixture(scope="session")
def action(shared: Path) -> Path:
    """The action's files as GitHub ships them: the repository's tracked files (and, in a
    checkout being worked on, its new files git does not ignore), minus any export-ignore."""
    with _locked(shared):
        target = shared / "gitspace-action"
        if not (target / "action.yml").exists():
            listed = git(REPO, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
            names = [n for n in listed.split("\0") if n and (REPO / n).is_file()]
            ignored = git(REPO, "check-attr", "-z", "export-ignore", "--", *names).split("\0")
            dropped = {ignored[i] for i in range(0, len(ignored) - 2, 3) if ignored[i + 2] == "set"}
            building = shared / "gitspace-action.part"
            shutil.rmtree(building, ignore_errors=True)
            for name in names:
                if name not in dropped:
                    (building / name).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(REPO / name, building / name)
            building.rename(target)
    return target


@pytest.fixture(scope="session")
def tool_cache(shared: Path, action: Path) -> Path:
    """RUNNER_TOOL_CACHE holding the venv the action's install step made (once, for real)."""
    cache = shared / "runner-tool-cache"
    with _locked(shared):
        if not (cache / ".installed").exists():
            workspace = shared / "install-ws"
            workspace.mkdir(exist_ok=True)
            git(workspace, "init", "-q")
            git(workspace, "commit", "-q", "--allow-empty", "-m", "nothing")
            run = run_action(action, workspace, inputs={}, event_name="workflow_dispatch",
                             event={}, temp=shared / "install-temp", tool_cache=cache, path=PATH)
            install = run.step("install")
            assert install.code == 0, run.log
            assert "from the cache" not in install.stdout and "gitspace 0.1.0" in install.stdout
            (cache / ".installed").write_text(run.step("setup").outputs["venv"])
    return cache


@pytest.fixture(scope="session")
def venv(tool_cache: Path) -> Path:
    return Path((tool_cache / ".installed").read_text())


class _locked:
    def __init__(self, shared: Path) -> None:
        self.path = shared / "gitspace-action.lock"

    def __enter__(self) -> None:
        self.file = open(self.path, "w")  # noqa: SIM115
        fcntl.flock(self.file, fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        fcntl.flock(self.file, fcntl.LOCK_UN)
        self.file.close()


# -- a workspace on a remote -------------------------------------------------------------------

@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A workspace pushed to a bare remote: main (a checkpoint, then a restore of it later),
    branch agent (two ops), branch forged (a hand edit under a str_replace trailer), and the
    merge refs a pull request of each has on GitHub."""
    where = tmp_path_factory.mktemp("remote")
    root = where / "ws"
    with gitspace.init(root, agent="ci-bot") as ws:
        call_ok(ws, "create", {"path": "a.md", "file_text": "one\n"})
        call_ok(ws, "checkpoint", {"name": "start"})
        call_ok(ws, "str_replace", {"path": "a.md", "old_str": "one", "new_str": "two"})
        pushed_before = head(root)
        call_ok(ws, "restore", {"name": "start"})
        call_ok(ws, "create", {"path": "b.md", "file_text": "b\n"})
        call_ok(ws, "branch", {"name": "agent"})
        call_ok(ws, "create", {"path": "agent.md", "file_text": "agent\n"})
        call_ok(ws, "str_replace", {"path": "agent.md", "old_str": "agent", "new_str": "done"})
        call_ok(ws, "branch", {"name": "forged"})
        call_ok(ws, "create", {"path": "c.md", "file_text": "c\n"})
        call_ok(ws, "switch", {"name": "main"})
        call_ok(ws, "create", {"path": "main.md", "file_text": "main moved on\n"})
        call_ok(ws, "switch", {"name": "agent"})
        call_ok(ws, "branch", {"name": "merger"})
        git(root, "merge", "-q", "--no-edit", "main")  # the branch takes its base in
        call_ok(ws, "str_replace", {"path": "agent.md", "old_str": "done", "new_str": "DONE"})
        call_ok(ws, "switch", {"name": "main"})
    lie = head(root, "forged")
    git(root, "switch", "-q", "forged")
    (root / "c.md").write_text("c, and a line no tool wrote\n")
    git(root, "commit", "-q", "--amend", "-a", "--no-edit")
    git(root, "switch", "-q", "main")
    bare = where / "remote.git"
    git(where, "init", "-q", "--bare", "--initial-branch=main", str(bare))
    git(root, "push", "-q", str(bare), "main", "agent", "forged", "merger",
        "refs/tags/gitspace/start")
    pulls = {}
    for number, branch in enumerate(("agent", "forged", "merger"), 1):
        tree = git(root, "merge-tree", "--write-tree", "main", branch).split()[0]
        merge = git(root, "commit-tree", tree, "-p", "main", "-p", branch, "-m",
                    f"Merge {branch} into main").strip()
        git(root, "push", "-q", str(bare), f"{merge}:refs/pull/{number}/merge")
        pulls[branch] = (number, merge)
    return {"bare": bare, "root": root, "before": pushed_before, "pulls": pulls, "lie": lie}


def checkout(remote: dict[str, Any], to: Path, ref: str, sha: str, *, depth: int = 0) -> Path:
    """What actions/checkout does: init, fetch (all branches and tags unless shallow), check out."""
    git(to.parent, "init", "-q", str(to))
    git(to, "remote", "add", "origin", f"file://{remote['bare']}")
    if depth:
        git(to, "fetch", "-q", "--no-tags", f"--depth={depth}", "origin", f"+{sha}:{ref}")
    else:
        git(to, "fetch", "-q", "--tags", "origin", "+refs/heads/*:refs/remotes/origin/*")
        if not ref.startswith("refs/remotes/origin/"):
            git(to, "fetch", "-q", "origin", f"+{sha}:{ref}")
    git(to, "checkout", "-q", "--detach", ref)
    return to


def pull_request(remote: dict[str, Any], branch: str) -> tuple[str, dict[str, Any], str]:
    number, merge = remote["pulls"][branch]
    root = remote["root"]
    event = {"number": number, "repository": {"default_branch": "main"},
             "pull_request": {"number": number,
                              "head": {"sha": head(root, branch), "ref": branch},
                              "base": {"sha": head(root, "main"), "ref": "main"}}}
    return merge, event, f"refs/remotes/pull/{number}/merge"


def gitspace_ops(remote: dict[str, Any], rev: str, base: str) -> int:
    return len(git(remote["root"], "log", "--first-parent", "--format=%H", f"{base}..{rev}",
                   "--grep", "^Gitspace-Source: tool$").split())


def act(action: Path, tool_cache: Path, workspace: Path, tmp_path: Path, event_name: str,
        event: dict[str, Any], inputs: dict[str, str] | None = None, **github: str) -> Any:
    return run_action(action, workspace, inputs=inputs or {}, event_name=event_name,
                      event=event, temp=tmp_path / "runner-temp", tool_cache=tool_cache,
                      path=PATH, github=github)


# -- GitHub ------------------------------------------------------------------------------------

def test_a_pull_request_is_verified_and_replayed_and_summarised(
        action: Path, tool_cache: Path, remote: dict[str, Any], tmp_path: Path) -> None:
    merge, event, ref = pull_request(remote, "agent")
    ws = checkout(remote, tmp_path / "checkout", ref, merge)
    run = act(action, tool_cache, ws, tmp_path, "pull_request", event, base_ref="main",
              head_ref="agent", ref="refs/pull/1/merge")
    assert run.code == 0, run.log
    assert "gitspace from the cache" in run.step("install").stdout
    added = gitspace_ops(remote, "agent", "main")
    assert added == 2
    authorship = {"agent-lines", "person-lines", "unattested-lines", "notes-attached",
                  "authorship"}
    assert {k: v for k, v in run.outputs.items() if k not in authorship} == {
        "result": "match", "matched": "true", "ops-checked": "2", "reexecuted": "2",
        "first-divergence": "", "report": str(tmp_path / "runner-temp" / "gitspace-report")}
    assert run.outputs["agent-lines"] == "2" and run.outputs["notes-attached"] == "0"
    assert "### gitspace: every op matched" in run.summary
    assert "the commits the pull request adds to main" in run.summary
    assert f"`{head(ws, 'refs/remotes/origin/main')[:12]}..{head(remote['root'], 'agent')[:12]}`" \
        in run.summary
    report = Path(run.outputs["report"])
    assert sorted(p.name for p in report.iterdir()) == [
        "gitspace.env", "provenance.json", "replay.err", "replay.json", "summary.md",
        "verify.err", "verify.json"]
    assert json.loads((report / "replay.json").read_text())["reexecuted"] == 2
    assert json.loads((report / "verify.json").read_text())["ops"] == 2


def test_a_pull_request_that_merged_its_base_replays_only_its_own_ops(
        action: Path, tool_cache: Path, remote: dict[str, Any], tmp_path: Path) -> None:
    merge, event, ref = pull_request(remote, "merger")
    ws = checkout(remote, tmp_path / "checkout", ref, merge)
    run = act(action, tool_cache, ws, tmp_path, "pull_request", event, base_ref="main")
    assert run.code == 0, run.log
    assert run.outputs["reexecuted"] == "3" and run.outputs["ops-checked"] == "3"
    assert r"\(1 merge commit\)" in run.summary  # (Markdown that means only itself)


def test_a_push_from_a_shallow_checkout_is_deepened_tagged_and_checked(
        action: Path, tool_cache: Path, remote: dict[str, Any], tmp_path: Path) -> None:
    tip = head(remote["root"], "main")
    ws = checkout(remote, tmp_path / "checkout", "refs/remotes/origin/main", tip, depth=1)
    assert git(ws, "rev-parse", "--is-shallow-repository").strip() == "true"
    event = {"before": remote["before"], "after": tip, "repository": {"default_branch": "main"}}
    run = act(action, tool_cache, ws, tmp_path, "push", event)
    assert run.code == 0, run.log
    assert run.outputs["result"] == "match" and run.outputs["ops-checked"] == "3"
    assert "fetched the rest of its history from origin" in run.summary
    assert git(ws, "rev-parse", "--is-shallow-repository").strip() == "false"
    # The push restores checkpoint 'start': the action fetched the checkpoint tags for it.
    assert git(ws, "tag", "--list", "gitspace/*").split() == ["gitspace/start"]


def test_a_shallow_checkout_that_cannot_be_deepened_fails_with_the_fix(
        action: Path, tool_cache: Path, remote: dict[str, Any], tmp_path: Path) -> None:
    tip = head(remote["root"], "main")
    ws = checkout(remote, tmp_path / "checkout", "refs/remotes/origin/main", tip, depth=1)
    git(ws, "remote", "set-url", "origin", str(tmp_path / "gone.git"))
    run = act(action, tool_cache, ws, tmp_path, "push", {"before": remote["before"]})
    assert run.code == 1, run.log
    assert run.outputs["result"] == "error" and run.outputs["matched"] == "false"
    assert "fetch-depth: 0" in run.outputs["first-divergence"]
    assert "### gitspace: could not check" in run.summary and "fetch-depth: 0" in run.summary
    assert "::error title=gitspace::" in run.step("check").stderr


def test_a_forged_op_fails_the_job_at_that_op_with_the_diff(
        action: Path, tool_cache: Path, remote: dict[str, Any], tmp_path: Path) -> None:
    merge, event, ref = pull_request(remote, "forged")
    ws = checkout(remote, tmp_path / "checkout", ref, merge)
    run = act(action, tool_cache, ws, tmp_path, "pull_request", event,
              {"no-scripts": "true"}, base_ref="main")
    assert run.code == 1, run.log
    op = git(remote["root"], "log", "-1", "--format=%(trailers:key=Gitspace-Op,valueonly)",
             "forged").strip()
    assert run.outputs["result"] == "diverged" and run.outputs["matched"] == "false"
    first = run.outputs["first-divergence"]
    assert first.startswith(f"{head(remote['root'], 'forged')[:12]} op {op} (create):"), first
    assert "re-running it produced different files" in first
    assert f"Diverged at commit `{head(remote['root'], 'forged')}`" in run.summary
    assert "```diff" in run.summary and "-c, and a line no tool wrote" in run.summary
    assert "::error title=gitspace diverged::" in run.step("check").stderr


def test_a_push_that_re_executes_no_op_fails_unless_allow_empty(
        action: Path, tool_cache: Path, remote: dict[str, Any], tmp_path: Path) -> None:
    before = head(remote["root"], "main")
    ws = checkout(remote, tmp_path / "checkout", "refs/remotes/origin/main", before)
    (ws / "NOTES.md").write_text("a person's commit, no op\n")
    git(ws, "add", "NOTES.md")
    git(ws, "commit", "-q", "-m", "notes")
    event = {"before": before, "repository": {"default_branch": "main"}}
    run = act(action, tool_cache, ws, tmp_path / "strict", "push", event)
    assert run.code == 1, run.log
    assert run.outputs["result"] == "empty" and run.outputs["reexecuted"] == "0"
    assert run.outputs["first-divergence"].startswith("replay it re-executed no op")
    assert "set the input `allow-empty`" in run.summary
    allowed = act(action, tool_cache, ws, tmp_path / "allowed", "push", event,
                  {"allow-empty": "true"})
    assert allowed.code == 0, allowed.log
    assert allowed.outputs["result"] == "match" and allowed.outputs["ops-checked"] == "0"


def test_a_push_of_a_squash_the_host_made_gets_its_note_and_the_authorship_summary(
        action: Path, tool_cache: Path, remote: dict[str, Any], tmp_path: Path) -> None:
    """The host squash-merged branch agent (its ops) into main: on that push the action gives
    the squash commit the note of the ops it joined (provenance/squash.py), pushes it to
    origin, and puts the authorship in the summary and the outputs."""
    bare = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(remote["bare"]), str(bare))
    own = {**remote, "bare": bare}
    before = head(remote["root"], "main")
    tree = git(remote["root"], "merge-tree", "--write-tree", "main", "agent").split()[0]
    squash = git(remote["root"], "commit-tree", tree, "-p", "main", "-m",
                 "Agent's work (#1)").strip()
    git(remote["root"], "push", "-q", str(bare), f"{squash}:refs/heads/main")
    ws = checkout(own, tmp_path / "checkout", "refs/remotes/origin/main", squash)
    event = {"before": before, "after": squash, "repository": {"default_branch": "main"}}
    run = act(action, tool_cache, ws, tmp_path, "push", event, {"allow-empty": "true"})
    assert run.code == 0, run.log
    assert run.outputs["notes-attached"] == "1", run.summary + run.log[-3000:]
    assert int(run.outputs["agent-lines"]) > 0 and run.outputs["unattested-lines"] == "0"
    assert json.loads(run.outputs["authorship"])["agents"][0]["agent"] == "ci-bot"
    assert "### Authorship" in run.summary and "`ci-bot`" in run.summary
    assert git(bare, "notes", "--ref=ai", "list", squash).strip(), "the note went to origin"


def test_the_action_ships_what_its_steps_name_and_its_uses_steps_are_well_formed(
        action: Path, tmp_path: Path) -> None:
    spec = load(action / "action.yml")
    for name in shipped_references(action):
        assert (action / name).is_file(), f"action.yml names {name}, which the action does not ship"
    assert shipped_references(action) == ["ci/gitspace_ci.py"]
    steps = spec["runs"]["steps"]
    assert spec["runs"]["using"] == "composite"
    ids = [s.get("id") for s in steps]
    text = json.dumps(steps)
    inputs = set(spec["inputs"])
    used = set(re.findall(r"inputs\.([\w-]+)", text))
    assert used == inputs, f"inputs declared but unused, or used but undeclared: {inputs ^ used}"
    # Every step output an expression reads comes from an earlier step that writes it.
    setup = subprocess.run([sys.executable, str(action / "ci" / "gitspace_ci.py"), "setup"],
                           env={**os.environ, "GITHUB_OUTPUT": str(tmp_path / "out"),
                                "GITHUB_ACTION_PATH": str(action), "RUNNER_TEMP": str(tmp_path)},
                           capture_output=True, text=True)
    assert setup.returncode == 0, setup.stderr
    written = {"setup": set(read_commands(tmp_path / "out")),
               "check": {"result", "matched", "ops-checked", "reexecuted", "first-divergence",
                         "tip", "base", "agent-lines", "person-lines", "unattested-lines",
                         "notes-attached", "authorship"}}
    for i, step in enumerate(steps):
        for ref in _step_refs(json.dumps(step)):
            step_id, output = ref
            assert step_id in ids[:i], f"step {i} reads {step_id} before it runs"
            assert output in written.get(step_id, set()), f"{step_id} never writes {output}"
    for name, out in spec["outputs"].items():
        for step_id, output in _step_refs(str(out["value"])):
            assert output in written[step_id], f"output {name} reads {step_id}.{output}"
    cache, upload = uses_steps(action)
    assert cache["uses"] == "actions/cache@v4" and set(cache["with"]) == {"path", "key"}
    assert substitute(cache["with"]["path"], {"steps": {"setup": {"outputs": {"venv": "V"}}}}) == "V"
    assert upload["uses"] == "actions/upload-artifact@v4" and upload["if"] == "always()"
    assert set(upload["with"]) <= {"name", "path", "if-no-files-found", "retention-days",
                                   "compression-level", "overwrite", "include-hidden-files"}
    assert steps.index(cache) < ids.index("install")  # restored before the install looks


def _step_refs(text: str) -> list[tuple[str, str]]:
    return re.findall(r"steps\.([\w-]+)\.outputs\.([\w-]+)", text)


def test_the_example_workflow_uses_the_action_on_pull_requests_and_pushes() -> None:
    workflow = load(REPO / ".github" / "workflows" / "gitspace-replay.yml")
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare 'on' as true
    assert {"pull_request", "push"} <= set(triggers)
    steps = workflow["jobs"]["replay"]["steps"]
    checkout_step = next(s for s in steps if str(s.get("uses", "")).startswith("actions/checkout"))
    assert checkout_step["with"]["fetch-depth"] == 0
    ours = next(s for s in steps if s.get("uses") == "./")
    assert set(ours.get("with") or {}) <= set(load(REPO / "action.yml")["inputs"])
    # The README's CI path and docs/ci.md both show it, pinned to a commit of the team's copy
    # (there is no published release to name).
    for page, heading in ((REPO / "README.md", "## 4. CI"), (REPO / "docs" / "ci.md", "# ")):
        text = page.read_text()
        section = text[text.index(heading):]
        first_block = section[section.index("```"):].split("\n", 1)
        assert first_block[0] == "```yaml", page
        assert "uses: your-org/gitspace@<40-hex commit" in first_block[1].split("```")[0], page


# -- GitLab ------------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def gitspace_repo(shared: Path, action: Path) -> tuple[str, str]:
    """A git repository of the shipped files, as GITSPACE_REPO and its commit, GITSPACE_REF."""
    with _locked(shared):
        repo = shared / "gitspace-repo"
        if not (repo / ".git").exists():
            building = shared / "gitspace-repo.part"
            shutil.rmtree(building, ignore_errors=True)
            shutil.copytree(action, building)
            git(building, "init", "-q")
            git(building, "add", "-A")
            git(building, "commit", "-q", "-m", "gitspace")
            building.rename(repo)
    return f"file://{repo}", head(repo)


def test_the_gitlab_template_installs_like_the_action() -> None:
    job = load(REPO / TEMPLATE)[".gitspace-replay"]
    install = next(line for line in job["script"] if "pip install" in line)
    action_install = next(s["run"] for s in load(REPO / "action.yml")["runs"]["steps"]
                          if s.get("id") == "install")
    pip = lambda text: next(l.strip() for l in text.splitlines() if "pip install" in l)  # noqa: E731,E741
    assert pip(install).replace('"$GITSPACE_DIR/src"', "SOURCE") == \
        pip(action_install).replace('"$GITHUB_ACTION_PATH"', "SOURCE")
    assert job["variables"]["GIT_DEPTH"] == "0"
    assert job["artifacts"]["reports"]["dotenv"] == ".gitspace-ci/report/gitspace.env"


def test_the_gitlab_template_checks_a_merge_request(
        venv: Path, gitspace_repo: tuple[str, str], remote: dict[str, Any], tmp_path: Path) -> None:
    root = remote["root"]
    project = checkout(remote, tmp_path / "project", "refs/pipelines/1",
                       head(root, "agent"))
    variables = {"GITSPACE_REPO": gitspace_repo[0], "GITSPACE_REF": gitspace_repo[1],
                 "GITSPACE_VENV": str(venv),  # the cache a runner restores (see the docstring)
                 "CI_PIPELINE_SOURCE": "merge_request_event", "CI_COMMIT_SHA": head(root, "agent"),
                 "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main",
                 "CI_MERGE_REQUEST_DIFF_BASE_SHA": git(root, "merge-base", "main", "agent").strip(),
                 "CI_DEFAULT_BRANCH": "main"}
    out = run_gitlab_job(REPO / TEMPLATE, ".gitspace-replay", project, variables=variables,
                         path=PATH, home=tmp_path / "home")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "### gitspace: every op matched" in out.stdout
    assert "the commits the merge request adds to main" in out.stdout
    dotenv = (project / ".gitspace-ci" / "report" / "gitspace.env").read_text().splitlines()
    assert {"GITSPACE_RESULT=match", "GITSPACE_MATCHED=true", "GITSPACE_OPS_CHECKED=2",
            "GITSPACE_REEXECUTED=2"} <= set(dotenv)
    assert (project / ".gitspace-ci" / "src" / "ci" / "gitspace_ci.py").is_file()

    # The forged branch, in a job whose clone is shallow and cannot be deepened.
    lie = checkout(remote, tmp_path / "lie", "refs/pipelines/2",
                   head(root, "forged"), depth=1)
    git(lie, "remote", "set-url", "origin", str(tmp_path / "gone.git"))
    failed = run_gitlab_job(REPO / TEMPLATE, ".gitspace-replay", lie, path=PATH,
                            home=tmp_path / "home2",
                            variables={**variables, "CI_COMMIT_SHA": head(root, "forged")})
    assert failed.returncode == 1
    assert "GIT_DEPTH: 0" in failed.stdout + failed.stderr
    full = checkout(remote, tmp_path / "lie-full", "refs/pipelines/3",
                    head(root, "forged"))
    diverged = run_gitlab_job(REPO / TEMPLATE, ".gitspace-replay", full, path=PATH,
                              home=tmp_path / "home3",
                              variables={**variables, "CI_COMMIT_SHA": head(root, "forged")})
    assert diverged.returncode == 1 and "### gitspace: diverged" in diverged.stdout
    assert "GITSPACE_RESULT=diverged" in (full / ".gitspace-ci/report/gitspace.env").read_text()


def test_the_gitlab_template_says_which_variables_it_needs(
        remote: dict[str, Any], tmp_path: Path) -> None:
    root = remote["root"]
    project = checkout(remote, tmp_path / "project", "refs/pipelines/1",
                       head(root, "agent"))
    out = run_gitlab_job(REPO / TEMPLATE, ".gitspace-replay", project, variables={},
                         path=PATH, home=tmp_path / "home")
    assert out.returncode == 1 and "Set GITSPACE_REPO" in out.stderr


@pytest.fixture(autouse=True)
def _no_ambient_github(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in list(os.environ):
        if name.startswith(("GITHUB_", "RUNNER_", "CI_")):
            monkeypatch.delenv(name)
    yield
