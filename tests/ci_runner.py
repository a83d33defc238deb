"""The parts of GitHub's and GitLab's runners a CI test needs, done here for real.

A composite action (``action.yml``): each ``run`` step is a bash script (``bash --noprofile
--norc -eo pipefail``, GitHub's ``shell: bash``) run with the variables a runner sets
(``GITHUB_*``, ``RUNNER_*``, ``CI``) and the step's ``env``; ``${{ ... }}`` is replaced first,
and only property paths of ``inputs``, ``steps.<id>.outputs``, ``github`` and ``runner`` are
allowed (anything else fails the test: the action must stay this simple). After each step its
``GITHUB_OUTPUT``, ``GITHUB_ENV`` and ``GITHUB_PATH`` files are read as the runner reads them,
and ``GITHUB_STEP_SUMMARY`` collects. ``uses`` steps (actions/cache, actions/upload-artifact)
are not run: ``uses_steps`` returns them for the test to check, and the run steps must work
without them (a cache miss is what an empty cache gives anyway).

A GitLab job: its ``variables`` expanded as GitLab expands them (``$NAME`` from the job's
environment), then its ``script`` lines run in one ``bash -eo pipefail`` session, as GitLab's
shell executor runs them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from conftest import REPO, git

EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
PATH_EXPR = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_-]*)*")
ACTION_PATH = re.compile(r"(?:\$GITHUB_ACTION_PATH|\$\{GITHUB_ACTION_PATH\}"
                         r"|\$\{\{\s*github\.action_path\s*\}\})/([\w./-]+)")


def load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text())
    assert isinstance(data, dict), f"{path} is not a YAML mapping"
    return data


def evaluate(expression: str, contexts: dict[str, Any]) -> str:
    assert PATH_EXPR.fullmatch(expression), f"the expression {expression!r} is not a property path"
    parts = expression.split(".")
    value: Any = contexts
    for i, part in enumerate(parts):
        if parts[0] == "steps" and i >= 1 and isinstance(value, dict) and part not in value:
            return ""  # an output a step did not set is empty, as on a runner
        assert isinstance(value, dict) and part in value, (
            f"${{{{ {expression} }}}} names {part!r}, which the runner does not provide here")
        value = value[part]
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def substitute(text: str, contexts: dict[str, Any]) -> str:
    return EXPRESSION.sub(lambda m: evaluate(m.group(1), contexts), text)


def read_commands(path: Path) -> dict[str, str]:
    """``name=value`` and ``name<<DELIM ... DELIM`` lines, as GITHUB_OUTPUT and GITHUB_ENV hold."""
    found: dict[str, str] = {}
    lines = path.read_text().splitlines() if path.exists() else []
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            end = lines.index(delimiter, i + 1)
            found[name] = "\n".join(lines[i + 1:end])
            i = end + 1
            continue
        name, _, value = line.partition("=")
        found[name] = value
        i += 1
    return found


@dataclass
class Step:
    id: str
    code: int
    stdout: str
    stderr: str
    outputs: dict[str, str]


@dataclass
class ActionRun:
    steps: list[Step] = field(default_factory=list)
    outputs: dict[str, str] = field(default_factory=dict)
    summary: str = ""

    @property
    def code(self) -> int:
        return next((s.code for s in self.steps if s.code != 0), 0)

    def step(self, name: str) -> Step:
        return next(s for s in self.steps if s.id == name)

    @property
    def log(self) -> str:
        return "\n".join(f"--- {s.id} ({s.code})\n{s.stdout}{s.stderr}" for s in self.steps)


def run_action(action: Path, workspace: Path, *, inputs: dict[str, str], event_name: str,
               event: dict[str, Any], temp: Path, tool_cache: Path, path: str,
               github: dict[str, str] | None = None) -> ActionRun:
    """Run ``action``'s ``run`` steps in ``workspace`` as a runner would (see the docstring)."""
    spec = load(action / "action.yml")
    declared = spec.get("inputs") or {}
    unknown = set(inputs) - set(declared)
    assert not unknown, f"inputs the action does not declare: {unknown}"
    values = {k: inputs.get(k, str(v.get("default", ""))) for k, v in declared.items()}
    temp.mkdir(parents=True, exist_ok=True)
    event_path = temp / "event.json"
    event_path.write_text(json.dumps(event))
    home = temp / "home"
    home.mkdir(exist_ok=True)
    sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=workspace, capture_output=True,
                         text=True, check=True).stdout.strip()
    gh = {"action_path": str(action), "workspace": str(workspace), "event_name": event_name,
          "event_path": str(event_path), "sha": sha, "repository": "owner/workspace",
          "ref": "refs/heads/main", "base_ref": "", "head_ref": "", **(github or {})}
    contexts: dict[str, Any] = {"inputs": values, "steps": {}, "github": gh,
                                "runner": {"os": "Linux", "temp": str(temp),
                                           "tool_cache": str(tool_cache)}}
    env = {"PATH": path, "HOME": str(home), "LANG": "C.UTF-8", "CI": "true",
           "GITHUB_ACTIONS": "true", "GITHUB_ACTION_PATH": str(action),
           "GITHUB_WORKSPACE": str(workspace), "GITHUB_EVENT_NAME": event_name,
           "GITHUB_EVENT_PATH": str(event_path), "GITHUB_SHA": sha, "GITHUB_REF": gh["ref"],
           "GITHUB_BASE_REF": gh["base_ref"], "GITHUB_HEAD_REF": gh["head_ref"],
           "GITHUB_REPOSITORY": gh["repository"], "RUNNER_OS": "Linux", "RUNNER_TEMP": str(temp),
           "RUNNER_TOOL_CACHE": str(tool_cache), "GIT_CONFIG_GLOBAL": "/dev/null",
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0",
           "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    for name in ("PIP_CACHE_DIR", "PIP_FIND_LINKS", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL",
                 "PIP_CERT", "PIP_CONFIG_FILE", "SSL_CERT_FILE"):  # the machine's package index
        if os.environ.get(name):
            env[name] = os.environ[name]
    summary = temp / "step_summary.md"
    result = ActionRun()
    for number, step in enumerate(spec["runs"]["steps"]):
        if "run" not in step:
            continue
        step_id = step.get("id", f"__run{number}")
        files = {name: temp / f"{name.lower()}-{uuid.uuid4().hex}" for name in
                 ("GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STATE")}
        for f in files.values():
            f.touch()
        step_env = {**env, **{k: str(v) for k, v in files.items()},
                    "GITHUB_STEP_SUMMARY": str(summary),
                    **{k: substitute(str(v), contexts) for k, v in (step.get("env") or {}).items()}}
        assert step.get("shell") == "bash", f"step {step_id} has no 'shell: bash'"
        script = temp / f"step-{step_id}.sh"
        script.write_text(substitute(step["run"], contexts))
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                              cwd=workspace, env=step_env, capture_output=True, text=True,
                              timeout=600)
        outputs = read_commands(files["GITHUB_OUTPUT"])
        contexts["steps"][step_id] = {"outputs": outputs}
        env.update(read_commands(files["GITHUB_ENV"]))
        added = [line for line in files["GITHUB_PATH"].read_text().splitlines() if line]
        env["PATH"] = os.pathsep.join([*reversed(added), env["PATH"]])
        result.steps.append(Step(step_id, proc.returncode, proc.stdout, proc.stderr, outputs))
        if proc.returncode != 0:
            break
    result.outputs = {name: substitute(str(o["value"]), contexts)
                      for name, o in (spec.get("outputs") or {}).items()}
    result.summary = summary.read_text() if summary.exists() else ""
    return result


def uses_steps(action: Path) -> list[dict[str, Any]]:
    return [s for s in load(action / "action.yml")["runs"]["steps"] if "uses" in s]


def shipped_references(action: Path) -> list[str]:
    """The files of the action's own checkout its steps name (``$GITHUB_ACTION_PATH/...``)."""
    spec = load(action / "action.yml")
    text = "\n".join(str(s.get("run", "")) + json.dumps(s.get("env") or {}) + json.dumps(
        s.get("with") or {}) for s in spec["runs"]["steps"])
    return sorted(set(ACTION_PATH.findall(text)))


def run_gitlab_job(template: Path, job: str, project: Path, *, variables: dict[str, str],
                   path: str, home: Path) -> subprocess.CompletedProcess[str]:
    spec = load(template)
    assert job in spec, f"{template} has no job {job}"
    definition = spec[job]
    env = {"PATH": path, "HOME": str(home), "LANG": "C.UTF-8", "CI": "true", "GITLAB_CI": "true",
           "CI_PROJECT_DIR": str(project), "GIT_CONFIG_GLOBAL": "/dev/null",
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0",
           "PIP_DISABLE_PIP_VERSION_CHECK": "1", **variables}
    for name, value in (definition.get("variables") or {}).items():
        if name not in variables:  # a project's own variables win, as in GitLab
            env[name] = re.sub(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?",
                               lambda m: env.get(m.group(1), ""), str(value))
    lines = definition["script"]
    assert isinstance(lines, list) and all(isinstance(line, str) for line in lines)
    home.mkdir(parents=True, exist_ok=True)
    script = home / "gitlab-job.sh"
    script.write_text("\n".join(lines) + "\n")
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                          cwd=project, env=env, capture_output=True, text=True, timeout=600)


def check_step(bare: Path, tip: str, base: str, tmp: Path,
               head_ref: str = "forged") -> tuple[subprocess.CompletedProcess[str], dict[str, Path]]:
    """The action's check step (``ci/gitspace_ci.py github``) as a runner runs it on a pull
    request from ``head_ref`` (tip) into main (base), in a fresh clone of ``bare`` at
    ``tmp/checkout``, with this checkout's gitspace; the step and its files (``output``,
    ``env``, ``path``, ``summary``, ``event.json``)."""
    clone = tmp / "checkout"
    git(tmp, "init", "-q", str(clone))
    git(clone, "remote", "add", "origin", f"file://{bare}")
    git(clone, "fetch", "-q", "--tags", "origin", "+refs/heads/*:refs/remotes/origin/*")
    git(clone, "checkout", "-q", "--detach", tip)
    files = {name: tmp / name for name in ("output", "env", "path", "summary", "event.json")}
    for path in files.values():
        path.write_text("")
    event: dict[str, Any] = {"number": 7, "repository": {"default_branch": "main"},
                             "pull_request": {"number": 7, "head": {"sha": tip, "ref": head_ref},
                                              "base": {"sha": base, "ref": "main"}}}
    files["event.json"].write_text(json.dumps(event))
    env = {**os.environ, "GITHUB_ACTIONS": "true", "CI": "true",
           "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(files["event.json"]),
           "GITHUB_OUTPUT": str(files["output"]), "GITHUB_ENV": str(files["env"]),
           "GITHUB_PATH": str(files["path"]), "GITHUB_STEP_SUMMARY": str(files["summary"]),
           "GITHUB_BASE_REF": "main", "GITHUB_HEAD_REF": head_ref,
           "GITSPACE_VENV": str(Path(sys.executable).parent.parent),
           "GITSPACE_REPORT": str(tmp / "report"), "INPUT_NO_SCRIPTS": "true"}
    proc = subprocess.run([sys.executable, str(REPO / "ci" / "gitspace_ci.py"), "github"],
                          cwd=clone, env=env, capture_output=True, text=True, timeout=300)
    return proc, files
