"""The web view of a person's own checkout recorded in place: the line's ops and the person's
commits in one timeline, the Claude Code conversation read from the transcript the hook
recorded (never committed), each tool call linked to its op and back, kept work never drawn as
abandoned, and the agent named everywhere."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from conftest import git
from ui_server import fetch, serving

SID = "7a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"


def hook(root: Path, transcript: Path, event: str, **extra: Any) -> None:
    body = {"session_id": SID, "transcript_path": str(transcript), "cwd": str(root),
            "hook_event_name": event, **extra}
    proc = subprocess.run([sys.executable, "-m", "gitspace", "hook", "claude-code"], cwd=root,
                          input=json.dumps(body).encode(), capture_output=True,
                          env={k: v for k, v in os.environ.items() if not k.startswith("GIT")})
    assert proc.returncode == 0 and b"gitspace:" not in proc.stderr, proc.stderr.decode()


def transcript_lines(root: Path) -> list[dict[str, Any]]:
    """Lines shaped as Claude Code writes them (one assistant reply over two lines)."""
    write = {"type": "tool_use", "id": "toolu_ui1", "name": "Write",
             "input": {"file_path": str(root / "plan.md"), "content": "# plan\n"}}
    return [
        {"type": "summary", "summary": "not a message"},
        {"type": "user", "message": {"role": "user", "content": "write the plan"}},
        {"type": "assistant", "message": {"id": "msg_1", "role": "assistant",
                                          "content": [{"type": "text", "text": "Writing it."}]}},
        {"type": "assistant", "message": {"id": "msg_1", "role": "assistant",
                                          "content": [write]}},
        {"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_ui1", "content": "File created"}]}},
        {"type": "assistant", "message": {"id": "msg_2", "role": "assistant",
                                          "content": [{"type": "text", "text": "Done."}]}},
    ]


def test_the_conversation_timeline_and_graph_of_a_checkout_recorded_in_place(
        tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Pat Person")
    (root / "README.md").write_text("mine\n")
    git(root, "add", "README.md")
    git(root, "commit", "-q", "-m", "the person's own commit")
    out = subprocess.run([sys.executable, "-m", "gitspace", "-C", str(root), "hooks", "install",
                          "claude-code"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    transcript = tmp_path / "home" / ".claude" / "projects" / "repo" / f"{SID}.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_text("".join(json.dumps(x) + "\n" for x in transcript_lines(root))
                          + "not json\n")
    write = {"file_path": str(root / "plan.md"), "content": "# plan\n"}
    hook(root, transcript, "UserPromptSubmit", prompt="write the plan", prompt_id="p1")
    hook(root, transcript, "PreToolUse", tool_name="Write", tool_input=write,
         tool_use_id="toolu_ui1")
    (root / "plan.md").write_text("# plan\n")
    hook(root, transcript, "PostToolUse", tool_name="Write", tool_input=write,
         tool_use_id="toolu_ui1", tool_response={})
    hook(root, transcript, "Stop")
    commit = git(root, "rev-parse", "refs/gitspace/lines/main").strip()
    listed = git(root, "ls-tree", "-r", "--name-only", "refs/gitspace/lines/main").split()
    assert "plan.md" in listed and not any(".jsonl" in p or "transcript" in p for p in listed)

    with serving(root) as base:
        status, sessions = fetch(base + "/sessions")
        assert status == 200 and SID in sessions and "Claude Code" in sessions
        status, page = fetch(base + f"/session/{SID}")
        assert status == 200, page
        assert "cannot be shown" not in page and "Writing it." in page and "Done." in page
        assert f'href="/op/{commit}"' in page, "the tool call links to its op"
        assert "1 line(s) of the transcript were not messages" in page
        status, op = fetch(base + f"/op/{commit}")
        assert status == 200 and f"/session/{SID}#" in op, "the op links back to the call"
        status, timeline = fetch(base + "/")
        assert status == 200 and ">Write<" in timeline and "plan.md" in timeline, timeline
        assert "the person&#x27;s own commit" in timeline or "the person's own commit" in timeline
        status, graph = fetch(base + "/graph")
        assert status == 200 and "#cbd5e1" not in graph, "kept work is not drawn as abandoned"
        assert "None" not in re.sub(r"<[^>]+>", " ", graph)
