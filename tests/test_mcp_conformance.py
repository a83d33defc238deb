"""The protocol's own conformance suite against ``gitspace mcp --transport http``.

``make test`` installs ``@modelcontextprotocol/conformance`` (pinned, with the Node 22 it needs)
into ``.cache/conformance``; this test FAILS when it is missing. The suite runs its server
scenarios against a real server on loopback. Every scenario that needs none of the suite's
reference fixtures must pass with no failure and no warning. The suite's tools gitspace can play
with features of its own are the workspace's own constraint scripts below (a script's text, a
failing script, a script's progress and log lines, a 2020-12 argument schema); the rest need
fixtures gitspace does not have, listed with why. A scenario the suite adds, drops or renames
fails the test: the lists must be looked at again.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import REPO
from mcp_http import clean_env, http_server

import gitspace

SUITE = REPO / ".cache" / "conformance" / "node_modules" / ".bin"

PASSING = {
    "server-initialize", "ping", "tools-list", "resources-list", "prompts-list",
    "logging-set-level", "completion-complete",
    "resources-subscribe", "resources-unsubscribe",  # honored (a URI it does not serve never fires)
    "tools-call-simple-text", "tools-call-error",  # a script's text; a script that exits 1
    "tools-call-with-progress", "tools-call-with-logging",  # its gitspace:progress / :log lines
    "json-schema-2020-12",  # a script whose args schema has $schema, $defs and $ref
    "server-sse-multiple-streams", "dns-rebinding-protection",
}
NEEDS_FIXTURES = {
    "tools-call-image": "a tool answering image content; gitspace's tools answer text",
    "tools-call-audio": "a tool answering audio content; gitspace's tools answer text",
    "tools-call-embedded-resource": "a tool answering an embedded test:// resource",
    "tools-call-mixed-content": "a tool answering text, an image and a resource at once",
    "tools-call-sampling": "a tool that asks the client's model (sampling/createMessage): "
                           "gitspace never calls back into the client's model",
    "tools-call-elicitation": "a tool that asks the user (elicitation/create): gitspace never does",
    "elicitation-sep1034-defaults": "elicitation with default values: gitspace never elicits",
    "elicitation-sep1330-enums": "elicitation with enum schemas: gitspace never elicits",
    "server-sse-polling": "test_reconnection, a tool after which the server closes its stream "
                          "mid-call; and its requests say protocol 2025-03-26, to which no "
                          "priming event is sent (older clients cannot read one): "
                          "test_mcp_live.py checks the priming event and retry for 2025-11-25",
    "resources-read-text": "the resource test://static-text",
    "resources-read-binary": "the binary resource test://static-binary",
    "resources-templates-read": "the template test://template/{id}/data",
    "prompts-get-simple": "the prompt test_simple_prompt",
    "prompts-get-with-args": "the prompt test_prompt_with_arguments",
    "prompts-get-embedded-resource": "the prompt test_prompt_with_embedded_resource",
    "prompts-get-with-image": "the prompt test_prompt_with_image",
}

NO_ARGS = '{"type": "object", "properties": {}, "additionalProperties": false}'
SCHEMA_2020_12 = json.dumps({
    "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
    "$defs": {"address": {"type": "object", "properties": {
        "street": {"type": "string"}, "city": {"type": "string"}}}},
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False})
SCRIPTS = {  # name: (args schema, example, body)
    "test_simple_text": (NO_ARGS, "{}", 'echo "This is a simple text response for testing."\n'),
    "test_error_handling": (NO_ARGS, "{}",
                            'echo "This tool intentionally returns an error for testing" >&2\n'
                            "exit 1\n"),
    "test_tool_with_progress": (NO_ARGS, "{}", "for n in 0 50 100; do\n"
                                '  echo "gitspace:progress $n/100 step $n" >&2; sleep 0.05\n'
                                "done\necho done\n"),
    "test_tool_with_logging": (NO_ARGS, "{}", 'echo "gitspace:log info Tool execution started" >&2\n'
                               "sleep 0.05\n"
                               'echo "gitspace:log info Tool processing data" >&2\nsleep 0.05\n'
                               'echo "gitspace:log info Tool execution completed" >&2\n'
                               "echo logged\n"),
    "json_schema_2020_12_tool": (SCHEMA_2020_12, '{"name": "Ada", "address": {"city": "Paris"}}',
                                 "cat\n"),
}


def suite(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    if not (SUITE / "conformance").exists() or not (SUITE / "node").exists():
        pytest.fail(f"The MCP conformance suite is not installed in {SUITE.parent.parent}. Run "
                    "'make conformance' (make test does it).")
    env = {**clean_env(), "PATH": f"{SUITE}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run([str(SUITE / "conformance"), *args], capture_output=True, text=True,
                          env=env, timeout=timeout)


def server_scenarios() -> set[str]:
    listed = suite("list").stdout
    section = listed.split("Server scenarios", 1)[1].split("Client scenarios", 1)[0]
    return {line.strip()[2:].split(" ")[0] for line in section.splitlines()
            if line.strip().startswith("- ")}


def conformance_workspace(root: Path) -> None:
    gitspace.init(root).close()
    folder = root / "constraints"
    folder.mkdir()
    for name, (args, example, body) in SCRIPTS.items():
        (folder / name).write_text(
            f"#!/bin/sh\n# ---gitspace---\n# name: {name}\n# description: The conformance "
            f"suite's {name}, played by a workspace script.\n# example: {example}\n"
            f"# mutates: false\n# args: {args}\n# ---\n{body}")
        (folder / name).chmod(0o755)


def checks_of(output: Path) -> dict[str, list[dict[str, object]]]:
    found: dict[str, list[dict[str, object]]] = {}
    for checks in output.glob("*/checks.json"):
        run = checks.parent.name  # server-<scenario>-<time stamp>
        scenario = next(s for s in PASSING | set(NEEDS_FIXTURES) if run.startswith(f"server-{s}-"))
        found[scenario] = json.loads(checks.read_text())
    return found


def test_the_suite_lists_the_scenarios_this_test_knows() -> None:
    listed = server_scenarios()
    assert PASSING.isdisjoint(NEEDS_FIXTURES)
    assert listed == PASSING | set(NEEDS_FIXTURES), (
        f"The suite's server scenarios changed: new {sorted(listed - PASSING - set(NEEDS_FIXTURES))}"
        f", gone {sorted(PASSING | set(NEEDS_FIXTURES) - listed)}. Decide for each whether gitspace "
        "passes it or it needs a fixture, and say why.")


def test_gitspace_passes_every_scenario_that_needs_no_fixture(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    conformance_workspace(root)
    output = tmp_path / "results"
    with http_server(root, tmp_path) as served:
        ran = suite("server", "--url", served.url, "--suite", "all", "-o", str(output))
    assert served.returncode == 130 and "Traceback" not in served.stderr, served.stderr
    results = checks_of(output)
    assert set(results) == PASSING | set(NEEDS_FIXTURES), ran.stdout[-3000:]
    problems = {name: [c for c in checks if c["status"] in ("FAILURE", "WARNING")]
                for name, checks in results.items()}
    failing = {name: found for name, found in problems.items() if name in PASSING and found}
    assert not failing, json.dumps(failing, indent=1)[:6000]
    stale = sorted(name for name in NEEDS_FIXTURES if not problems[name])
    assert not stale, f"These now pass: move them to PASSING: {stale}"
    seen = {c["id"] for c in results["tools-call-with-progress"] if c["status"] == "SUCCESS"}
    assert "tools-call-with-progress" in seen
