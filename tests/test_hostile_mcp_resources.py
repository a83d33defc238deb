"""MCP resources and their subscriptions, as a hostile client (or a prompt-injected agent) uses
them: every URI is untrusted input.

- A subscription to a file names a workspace path: one the path policy refuses (an escape with
  ``..``, spelled plainly or percent-encoded, a path inside ``.git`` in any case, a NUL) is
  refused with INVALID_PARAMS, through ``resources/subscribe`` (2025) and ``subscriptions/listen``
  (2026) alike, and nothing is kept.
- A read never shows what lies beyond a link the history holds (a file or a folder linked
  outside), whether it is read now or as it was at an op, and never follows an escape.

Each ends sealed: ``git fsck --strict``, the status as it was, nothing outside changed.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from hostile import Link, sealed, workspace
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, Implementation, TextResourceContents

from gitspace.mcp_server import build_server

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")

ESCAPES = ["gitspace://file/../outside/victim.txt", "gitspace://file/..%2Foutside%2Fvictim.txt",
           "gitspace://file/notes/%2E%2E/%2E%2E/outside/victim.txt", "gitspace://file/.git/config",
           "gitspace://file/.GIT/config", "gitspace://file/notes/.git/HEAD",
           "gitspace://file/a.md%00.txt", "gitspace://file//etc/passwd"]
SECRETS = ("outside the workspace", "deeper")  # what the folder beside the workspace holds


def _run(root: Any, mode: str, body: Any) -> None:
    async def main() -> None:
        async with Client(build_server(root), mode=mode,
                          client_info=Implementation(name="hostile", version="1")) as client:
            await body(client)

    anyio.run(main)


def _refused(caught: pytest.ExceptionInfo[MCPError], uri: str) -> None:
    assert caught.value.error.code == INVALID_PARAMS, (uri, caught.value.error)
    assert "Traceback" not in caught.value.error.message


@pytest.mark.parametrize("mode", ["legacy", "auto"])  # 2025: resources/subscribe; 2026: listen
def test_a_subscription_to_a_path_outside_the_workspace_is_refused(tmp_path: Any,
                                                                   mode: str) -> None:
    with workspace(tmp_path, {"a.md": "a\n"}) as (ws, outside), sealed(ws.root, outside):
        async def body(client: Client) -> None:
            for uri in ESCAPES:
                with pytest.raises(MCPError) as caught:
                    if mode == "legacy":
                        await client.subscribe_resource(uri)
                    else:
                        async with client.listen(resource_subscriptions=[uri]):
                            pass
                _refused(caught, uri)
            if mode == "legacy":  # the connection still works, and a good one is kept
                await client.subscribe_resource("gitspace://file/a.md")

        _run(ws.root, mode, body)


def test_a_read_never_shows_what_a_link_in_the_history_points_at(tmp_path: Any) -> None:
    files = {"a.md": "a\n", "lnk": Link("{outside}/victim.txt"), "dir": Link("{outside}/sub")}
    with workspace(tmp_path, files) as (ws, outside), sealed(ws.root, outside):
        first = ws.call("create", {"path": "notes/b.md", "file_text": "b\n"}).op
        assert first is not None

        async def body(client: Client) -> None:
            for uri in ["gitspace://file/lnk", "gitspace://file/dir", "gitspace://file/dir/deep.txt",
                        f"gitspace://op/{first}/file/lnk", f"gitspace://op/{first}/file/dir",
                        f"gitspace://op/{first}/file/dir/deep.txt",
                        f"gitspace://op/{first}/file/..%2Foutside%2Fvictim.txt",
                        *ESCAPES]:
                try:
                    contents = (await client.read_resource(uri)).contents[0]
                except MCPError as e:
                    said = e.error.message
                else:
                    assert isinstance(contents, TextResourceContents)
                    said = contents.text
                assert not [s for s in SECRETS if s in said], (uri, said)
                assert "Traceback" not in said, (uri, said)
            for uri in ("gitspace://file/lnk", "gitspace://file/dir/deep.txt"):
                await client.subscribe_resource(uri)  # names a path inside: kept, shows nothing

        _run(ws.root, "legacy", body)
