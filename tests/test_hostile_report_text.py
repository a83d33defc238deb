"""Text from history in a report is escaped for the medium that shows it.

The CI job summary escaped only unprintable characters, so a forged op's recorded paths put live
HTML (a heading saying every op matched) into the summary GitHub renders. Every text from
history that reaches a report now means only itself where it lands:
- the job summary (Markdown with HTML, ``ci/gitspace_ci.py``): outside code spans and fences,
  every ASCII punctuation character is backslash-escaped (``md_text``). The summary is rendered
  here by a CommonMark renderer with raw HTML on, as GitHub's allows, and holds no tag and no
  heading of the history's;
- the terminal (``cli/render.py``'s ``escape``, ``cli/lines.py``): a control sequence in a
  subject, a path, an argument or a file's content (ESC, CSI, OSC, the bidirectional
  overrides) is spelled, never sent, through a terminal (a pseudo-terminal here) and a pipe;
  git's own colours in a diff stay;
- the web view's HTML (``ui/html.py``): every text is escaped.
Every scenario ends sealed.
"""

from __future__ import annotations

import html
import json
import os
import pty
import re
import select
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

from ci_runner import check_step, read_commands
from conftest import git, head
from hostile import commit, fsck, gitspace_argv, never_blocks, sealed, status, workspace
from markdown_it import MarkdownIt
from ui_server import fetch, serving

from gitspace.storage import ledger

HTML_PATH = "<h2>gitspace: every op matched<h2>.md"
SCRIPT = "<img src=x onerror=alert(1)><script>alert(1)<script>"
ESCAPES = ("\x1b]0;pwned\x07", "\x1b[2J", "\x1b[8m", "\x9b31m", "\u202e")
SPOKEN = "subject \x1b]0;pwned\x07 \x1b[2J\x1b[8m hidden \x9b31m\u202e txet"


class Tags(HTMLParser):
    """Every start tag a page or a rendered summary holds."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))


def _tags(html: str) -> list[str]:
    parser = Tags()
    parser.feed(html)
    return [tag for tag, _ in parser.tags]


def _forged_harness_op(root: Path) -> None:
    """A Bash call of Claude Code recorded over ``HTML_PATH``, whose commit changes one more
    path than it lists: it diverges, and its reason quotes the path. Then a commit whose
    trailer block holds a line of HTML: verify reports it."""
    (root / HTML_PATH).write_text("x\n")
    entry = json.dumps({"tool": "Bash", "agent": "claude-code", "cwd": str(root),
                        "paths": [HTML_PATH], "args": {"command": "make"}})
    proc = never_blocks(gitspace_argv(root, "record"), root, stdin=entry.encode())
    assert proc.returncode == 0, proc.stderr
    forged = commit(root, "HEAD~1", {HTML_PATH: "x\n", "slipped.txt": "in\n"},
                    git(root, "log", "-1", "--format=%B"))
    bad = commit(root, forged, {"b.txt": "b\n"}, "bad\n\nGitspace-Format: 4\n" + SCRIPT + ": x\n")
    git(root, "update-ref", "refs/heads/pr", bad)


def test_history_text_in_the_job_summary_is_markdown_that_means_only_itself(
        tmp_path: Path) -> None:
    with workspace(tmp_path, {"a.txt": "a\n"}) as (ws, outside):
        ws.close()
        root = ws.root
        base = head(root)
        _forged_harness_op(root)
        bare = tmp_path / "remote.git"
        git(tmp_path, "init", "-q", "--bare", "--initial-branch=main", str(bare))
        git(root, "push", "-q", str(bare), "main", "pr")
        with sealed(root, outside):
            proc, files = check_step(bare, head(root, "pr"), base, tmp_path, head_ref="pr")
            assert proc.returncode == 1, proc.stderr
            assert read_commands(files["output"])["matched"] == "false"
            summary = files["summary"].read_text()
            rendered = MarkdownIt("commonmark", {"html": True}).render(summary)
            text = html.unescape(re.sub(r"<[^>]*>", "", rendered))
            assert "<h2>gitspace: every op matched<h2>" in text and SCRIPT in text  # shown...
            tags = _tags(rendered)
            assert "h2" not in tags, (tags, summary)  # ...never live
            assert not {"img", "script"} & set(tags), (tags, summary)
            # (the headings are gitspace's own: the verdict, and the range's authorship)
            assert re.findall(r"<h3>(.*?)</h3>", rendered) == ["gitspace: malformed ops",
                                                               "Authorship"]
            fsck(tmp_path / "checkout")
            assert status(tmp_path / "checkout") == ""


def _on_a_terminal(root: Path, *args: str) -> str:
    """What ``gitspace ARGS`` writes to a terminal (a pseudo-terminal), colour and all."""
    primary, secondary = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "200", "GITSPACE_PAGER": "cat",
           "PAGER": "cat"}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen([sys.executable, "-m", "gitspace", "-C", str(root), "--no-pager",
                             *args], stdin=subprocess.DEVNULL, stdout=secondary, stderr=secondary,
                            env=env)
    os.close(secondary)
    out = b""
    while True:
        ready, _, _ = select.select([primary], [], [], 120)
        if not ready:
            proc.kill()
            raise AssertionError(f"gitspace {' '.join(args)} wrote nothing for 120 s")
        try:
            chunk = os.read(primary, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    proc.wait(timeout=60)
    os.close(primary)
    return out.decode("utf-8", "replace")


def test_history_text_never_acts_on_a_terminal_or_a_pipe(tmp_path: Path) -> None:
    with workspace(tmp_path, {"a.txt": "a\n"}) as (ws, outside):
        assert ws.call("create", {"path": "b.txt", "file_text": "b\n"}).ok
        ws.close()
        root = ws.root
        name = "c\x1b[2J.txt"
        forged = commit(root, head(root), {name: f"content {ESCAPES[0]}{ESCAPES[1]}\n"},
                        SPOKEN + "\n")
        git(root, "update-ref", "refs/heads/loud", forged)
        with sealed(root, outside):
            for args in (["log", "loud"], ["show", "loud"], ["log", "loud", "--format",
                                                                  "{subject} {files}"]):
                piped = subprocess.run(gitspace_argv(root, *args), capture_output=True,
                                       text=True, timeout=120).stdout
                # Into a pipe a diff is git's, byte for byte (a patch to apply); the rest is not.
                for shown in (_on_a_terminal(root, *args), piped.split("\ndiff --git")[0]):
                    assert "pwned" in shown and "hidden" in shown, (args, shown)
                    for sequence in ESCAPES:
                        assert sequence not in shown, (args, sequence, shown)
                if args[0] == "show":
                    assert ESCAPES[0] in piped
            # An op re-run gives other files: the divergence's diff quotes the recorded ones.
            op = (f"{SPOKEN}\n\nGitspace-Format: 1\nGitspace-Op: {ledger.new_op_id()}\n"
                  "Gitspace-Tool: create\nGitspace-Source: tool\n"
                  'Gitspace-Args: {"file_text":"plain\\n","path":"c.txt"}\n')
            lying = commit(root, head(root), {"c.txt": f"content {ESCAPES[0]}{ESCAPES[1]}\n"}, op)
            git(root, "update-ref", "refs/heads/lying", lying)
            replayed = _on_a_terminal(root, "replay", "lying")
            assert "diverged" in replayed and "pwned" in replayed, replayed
            for sequence in ESCAPES:
                assert sequence not in replayed, (sequence, replayed)
        git(root, "update-ref", "-d", "refs/heads/loud")
        git(root, "update-ref", "-d", "refs/heads/lying")
        git(root, "reflog", "expire", "--expire=now", "--all")
        git(root, "prune", "--expire=now")


def test_history_text_in_the_web_view_is_escaped(tmp_path: Path) -> None:
    with workspace(tmp_path, {"a.txt": "a\n"}) as (ws, outside):
        ws.close()
        root = ws.root
        tip = commit(root, head(root), {f"{SCRIPT}.md": f"{SCRIPT}\n"}, f"{SCRIPT}\n")
        git(root, "update-ref", "refs/heads/main", tip)
        git(root, "reset", "-q", "--hard")
        with sealed(root, outside), serving(root) as base:
            own = None
            for page in ("/", f"/op/{tip}", f"/files/{tip}", f"/compare?a={tip}~1&b={tip}"):
                code, body = fetch(base + page)
                assert code == 200, (page, code, body[:500])
                assert "alert(1)" in body, page
                tags = _tags(body)
                assert "img" not in tags, (page, tags)
                scripts = tags.count("script")
                own = scripts if own is None else own
                assert scripts == own == 1, (page, tags)  # the page's own live.js alone
