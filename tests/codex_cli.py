"""The real Codex CLI for tests: installed by ``make test``, run hermetically against the fake.

``make test`` (target ``codex``) installs ``@openai/codex`` from npm into ``.cache/codex/`` of this
checkout. A test that needs it FAILS when it is missing, never skips.

Each run is ``codex exec --json PROMPT`` (or ``codex exec resume ID PROMPT``) with:
- HOME in a temporary folder holding ``.codex/config.toml``: a custom provider at the fake
  Responses API (``wire_api = "responses"``, no retries), a model Codex knows (so it offers
  ``apply_patch``), and everything that would reach the internet off (update check, analytics,
  apps, plugins, web search);
- every proxy variable at the fake, which fails the test on any attempt to reach another host;
- ``--dangerously-bypass-approvals-and-sandbox``: Codex's sandbox needs bubblewrap and user
  namespaces, which a test machine may not give; the fake decides what runs anyway;
- ``--dangerously-bypass-hook-trust`` unless ``trusted=False``: Codex runs only hooks someone
  reviewed, and this is the flag it documents for automation that vetted its hooks. A test of
  what happens without it passes ``trusted=False``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fake_responses import FakeResponses
from fake_server import ROOT, hermetic_env, installed, run_gitspace

CODEX = ROOT / ".cache" / "codex" / "node_modules" / ".bin" / "codex"
MODEL = "gpt-5.5"  # in `codex debug models --bundled`: Codex offers it apply_patch and exec_command
KEY_VARIABLE = "GITSPACE_TEST_CODEX_KEY"


def codex_binary() -> Path:
    """The installed ``codex``; fails the test (with the fix) when it is missing."""
    return installed(CODEX, "Codex CLI", "codex")


def config(base_url: str) -> str:
    """``~/.codex/config.toml``: the fake as the provider, nothing that leaves the machine."""
    return f"""model = "{MODEL}"
model_provider = "fake"
check_for_update_on_startup = false
web_search = "disabled"

[analytics]
enabled = false

[features]
apps = false
plugins = false
remote_plugin = false

[model_providers.fake]
name = "fake"
base_url = "{base_url}/v1"
wire_api = "responses"
env_key = "{KEY_VARIABLE}"
request_max_retries = 0
stream_max_retries = 0
"""


@dataclass
class Outcome:
    """One finished ``codex exec --json`` run: its JSON events."""

    proc: subprocess.CompletedProcess[str]
    events: list[dict[str, Any]] = field(default_factory=list)

    @property
    def thread(self) -> str:
        return next((str(e["thread_id"]) for e in self.events if e.get("type") == "thread.started"),
                    "")

    def items(self, kind: str) -> list[dict[str, Any]]:
        return [e["item"] for e in self.events if e.get("type") == "item.completed"
                and e.get("item", {}).get("type") == kind]


def events(stdout: str) -> list[dict[str, Any]]:
    found = []
    for line in stdout.splitlines():
        try:
            found.append(json.loads(line))
        except ValueError:
            continue
    return found


def interrupt(launcher: subprocess.Popen[str]) -> None:
    """Ctrl-C for Codex: SIGINT to the native binary the npm launcher runs (only to it, so that
    the command it runs is stopped by Codex, as in a terminal)."""
    children = Path(f"/proc/{launcher.pid}/task/{launcher.pid}/children").read_text().split()
    assert children, "the launcher has not started Codex yet"
    for pid in children:
        os.kill(int(pid), signal.SIGINT)


@dataclass
class Codex:
    fake: FakeResponses
    home: Path

    def __post_init__(self) -> None:
        (self.home / ".codex").mkdir(parents=True, exist_ok=True)
        (self.home / ".codex" / "config.toml").write_text(config(self.fake.base_url))

    def env(self, extra: dict[str, str | None] | None = None) -> dict[str, str]:
        # TMPDIR inside HOME: Codex refuses to put its helper binaries in a CODEX_HOME under
        # the temporary folder, and then touches ~/.codex of the real home instead.
        (self.home / "tmp").mkdir(exist_ok=True)
        return hermetic_env(self.home, self.fake, {KEY_VARIABLE: "sk-test-not-secret",
                                                   "TMPDIR": str(self.home / "tmp"),
                                                   **(extra or {})})

    def command(self, prompt: str, *, resume: str | None = None, trusted: bool = True,
                args: tuple[str, ...] = ()) -> list[str]:
        flags = ["--json", "--dangerously-bypass-approvals-and-sandbox", *args]
        if trusted:
            flags.append("--dangerously-bypass-hook-trust")
        return [str(codex_binary()), "exec", *(["resume", resume] if resume else []), *flags,
                prompt]

    def run(self, cwd: Path, prompt: str, *, resume: str | None = None, trusted: bool = True,
            args: tuple[str, ...] = (), timeout: float = 120) -> Outcome:
        """One turn of ``codex exec`` in ``cwd``: a new session, or ``resume`` (a thread id)."""
        proc = subprocess.run(self.command(prompt, resume=resume, trusted=trusted, args=args),
                              cwd=cwd, env=self.env(), capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)
        return Outcome(proc, events(proc.stdout))

    def start(self, cwd: Path, prompt: str, **options: Any) -> subprocess.Popen[str]:
        """``codex exec`` started, not waited for (``interrupt`` stops its turn)."""
        return subprocess.Popen(self.command(prompt, **options), cwd=cwd, env=self.env(),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                stdin=subprocess.DEVNULL)

    def run_ok(self, cwd: Path, prompt: str, **options: Any) -> Outcome:
        out = self.run(cwd, prompt, **options)
        assert out.proc.returncode == 0 and any(e.get("type") == "turn.completed"
                                                for e in out.events), (
            f"codex exec failed ({out.proc.returncode}):\n{out.proc.stdout}\n{out.proc.stderr}")
        return out

    def transcripts(self) -> list[Path]:
        return sorted((self.home / ".codex" / "sessions").glob("*/*/*/rollout-*.jsonl"))

    def gitspace(self, root: Path, *args: str, check: bool = True
                 ) -> subprocess.CompletedProcess[str]:
        """gitspace beside this Codex: its HOME, and this ``codex`` first on PATH."""
        return run_gitspace(self.env(), root, *args, check=check, path=CODEX.parent)


@pytest.fixture
def codex(fake_responses: FakeResponses, tmp_path_factory: pytest.TempPathFactory) -> Codex:
    """Codex CLI wired to the fake Responses API, with a HOME of its own."""
    codex_binary()
    return Codex(fake_responses, tmp_path_factory.mktemp("codex-home"))
