"""The memory tool backend: the SDK reference backend's exact strings, one op per change with its
args, a read-only view, and every path trick refused before anything is touched."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from conftest import assert_clean, changed_files, files, git, head, ops, state

import gitspace
from gitspace.errors import BadArguments, FileRefused, PathRefused, ToolFailed
from gitspace.tools.memory import _size

LISTING = "Here're the files and directories up to 2 levels deep in {}, excluding hidden items:"
EDITED = "The memory file has been edited. Here is the snippet showing the change (with line numbers):"
PATH_HINT = "\nHint: Memory paths look like /memories/notes.md or /memories/projects/maze.md."


def memory(ws: gitspace.Workspace, **args: Any) -> gitspace.Result:
    return ws.call("memory", args)


def one_op(ws: gitspace.Workspace, record: dict[str, Any] | None = None, **args: Any) -> str:
    """Run a memory command that must be exactly one op recording ``record`` (default: args)."""
    before = ops(ws.root)
    result = memory(ws, **args)
    assert result.ok, result.text
    after = ops(ws.root)
    assert len(after) == len(before) + 1
    assert (after[-1].tool, after[-1].args, after[-1].op_id) == ("memory", record or args, result.op)
    assert_clean(ws.root)
    return result.text


def read_only(ws: gitspace.Workspace, **args: Any) -> str:
    before = state(ws.root)
    result = memory(ws, **args)
    assert result.ok, result.text
    assert result.op is None and state(ws.root) == before
    return result.text


def refused(ws: gitspace.Workspace, kind: type[Exception], **args: Any) -> str:
    """Run a memory command that must fail, change nothing and commit nothing; its text."""
    before = state(ws.root)
    result = memory(ws, **args)
    assert not result.ok, result.text
    assert isinstance(result.error, kind), result.error
    assert state(ws.root) == before
    assert_clean(ws.root)
    return result.text


def memories(ws: gitspace.Workspace) -> dict[str, str]:
    return {k: v for k, v in files(ws.root).items() if k.startswith("memories/")}


@pytest.fixture
def notes(ws: gitspace.Workspace) -> gitspace.Workspace:
    """A workspace holding /memories/notes.md: four lines, 'maze' on lines 2 and 4."""
    one_op(ws, command="create", path="/memories/notes.md",
           file_text="# Notes\nmaze: unsolved\nexit: east\nmaze again\n")
    return ws


# -- view --------------------------------------------------------------------------------------


def test_view_of_memories_before_any_memory_is_an_empty_listing(ws: gitspace.Workspace) -> None:
    assert read_only(ws, command="view", path="/memories") == (
        LISTING.format("/memories") + "\n0B\t/memories")
    assert not (ws.root / "memories").exists()


def test_view_of_a_file(notes: gitspace.Workspace) -> None:
    header = "Here's the content of /memories/notes.md with line numbers:\n"
    assert read_only(notes, command="view", path="/memories/notes.md") == header + (
        "     1\t# Notes\n     2\tmaze: unsolved\n     3\texit: east\n     4\tmaze again\n     5\t")
    assert read_only(notes, command="view", path="/memories/notes.md", view_range=[2, 3]) == (
        header + "     2\tmaze: unsolved\n     3\texit: east")
    assert read_only(notes, command="view", path="/memories/notes.md", view_range=[4, -1]) == (
        header + "     4\tmaze again\n     5\t")
    assert read_only(notes, command="view", path="/memories/notes.md", view_range=[9, 12]) == header


def test_view_listing_two_levels_deep_without_hidden_items(ws: gitspace.Workspace) -> None:
    for path, text in [("/memories/a.md", "x" * 12), ("/memories/sub/b.md", "y" * 1536),
                       ("/memories/sub/deep/c.md", "too deep")]:
        one_op(ws, command="create", path=path, file_text=text)
    (ws.root / "memories" / ".hidden").write_text("not listed")
    (ws.root / "memories" / "sub" / ".also-hidden").write_text("not listed")
    ws.snapshot()
    lines = read_only(ws, command="view", path="/memories").split("\n")
    assert lines[0] == LISTING.format("/memories")
    sizes = {path: size for size, path in (line.split("\t") for line in lines[1:])}
    assert list(sizes) == ["/memories", "/memories/a.md", "/memories/sub/", "/memories/sub/b.md",
                           "/memories/sub/deep/"]
    assert sizes["/memories/a.md"] == "12B" and sizes["/memories/sub/b.md"] == "1.5K"
    folder = _size(os.stat(ws.root / "memories" / "sub").st_size)
    assert sizes["/memories/sub/"] == folder
    assert read_only(ws, command="view", path="/memories/sub").split("\n")[1:] == [
        f"{folder}\t/memories/sub", "1.5K\t/memories/sub/b.md",
        f"{_size(os.stat(ws.root / 'memories/sub/deep').st_size)}\t/memories/sub/deep/",
        "8B\t/memories/sub/deep/c.md"]


def test_sizes_are_written_like_the_sdk() -> None:
    assert [_size(n) for n in (0, 1, 512, 1024, 1536, 4096, 1 << 20, 3 << 29)] == [
        "0B", "1B", "512B", "1K", "1.5K", "4K", "1M", "1.5G"]


def test_view_errors(notes: gitspace.Workspace) -> None:
    assert refused(notes, ToolFailed, command="view", path="/memories/nope.md") == (
        "The path /memories/nope.md does not exist. Please provide a valid path.")
    os.mkfifo(notes.root / "memories" / "pipe")
    assert refused_untracked(notes, command="view", path="/memories/pipe") == (
        "Unsupported file type for /memories/pipe")


def refused_untracked(ws: gitspace.Workspace, **args: Any) -> str:
    before = head(ws.root)
    result = memory(ws, **args)
    assert not result.ok and head(ws.root) == before
    return result.text


def test_large_file_views_are_paged_with_view_range(ws: gitspace.Workspace) -> None:
    text = "".join(f"line {n}: {'x' * 40}\n" for n in range(1, 1001))
    blob = git(ws.root, "hash-object", "--stdin", input=text.encode()).strip()
    one_op(ws, {"command": "create", "path": "/memories/big.md",
                "file_text": {"$blob": blob, "bytes": len(text)}},
           command="create", path="/memories/big.md", file_text=text)
    message = refused(ws, FileRefused, command="view", path="/memories/big.md")
    assert message.startswith("/memories/big.md has 1,001 lines; lines 1-1001 take ")
    assert "over the 16,000-character view cap.\nHint: Page through it with view_range" in message
    page = read_only(ws, command="view", path="/memories/big.md", view_range=[101, 200])
    assert page.split("\n")[1] == f"   101\tline 101: {'x' * 40}" and len(page.split("\n")) == 101


# -- create --------------------------------------------------------------------------------------


def test_create(ws: gitspace.Workspace) -> None:
    assert one_op(ws, command="create", path="/memories/user/prefs.md", file_text="tea\n") == (
        "File created successfully at: /memories/user/prefs.md")
    assert memories(ws) == {"memories/user/prefs.md": "tea\n"}
    assert changed_files(ws.root) == ["memories/user/prefs.md"]
    subject = git(ws.root, "log", "-1", "--format=%s")
    assert subject == "memory create /memories/user/prefs.md\n"


def test_create_refuses_an_existing_file_or_folder(notes: gitspace.Workspace) -> None:
    assert refused(notes, ToolFailed, command="create", path="/memories/notes.md",
                   file_text="x") == "File /memories/notes.md already exists"
    one_op(notes, command="create", path="/memories/sub/a.md", file_text="a")
    assert refused(notes, ToolFailed, command="create", path="/memories/sub",
                   file_text="x") == "File /memories/sub already exists"
    assert memories(notes)["memories/notes.md"].startswith("# Notes")


def test_only_a_created_files_text_is_elided_and_it_stays_readable(notes: gitspace.Workspace) -> None:
    """An elided argument must be provable from the commit: a create's file_text is the created
    blob; an inserted text is not a blob anywhere, so it is recorded whole."""
    big = "z" * 5000
    one_op(notes, {"command": "insert", "path": "/memories/notes.md", "insert_line": 0,
                   "insert_text": big},
           command="insert", path="/memories/notes.md", insert_line=0, insert_text=big)
    assert memories(notes)["memories/notes.md"].startswith(big + "\n# Notes")
    text = "y" * 5000
    blob = git(notes.root, "hash-object", "--stdin", input=text.encode()).strip()
    one_op(notes, {"command": "create", "path": "/memories/big.md",
                   "file_text": {"$blob": blob, "bytes": 5000}},
           command="create", path="/memories/big.md", file_text=text)
    assert git(notes.root, "cat-file", "blob", blob) == text


# -- str_replace ---------------------------------------------------------------------------------


def test_str_replace(notes: gitspace.Workspace) -> None:
    assert one_op(notes, command="str_replace", path="/memories/notes.md",
                  old_str="unsolved", new_str="solved") == EDITED + (
        "\n     1\t# Notes\n     2\tmaze: solved\n     3\texit: east\n     4\tmaze again")
    assert memories(notes)["memories/notes.md"] == (
        "# Notes\nmaze: solved\nexit: east\nmaze again\n")


def test_str_replace_errors(notes: gitspace.Workspace) -> None:
    path = "/memories/notes.md"
    assert refused(notes, ToolFailed, command="str_replace", path=path, old_str="north",
                   new_str="x") == (
        "No replacement was performed, old_str `north` did not appear verbatim in "
        "/memories/notes.md.")
    assert refused(notes, ToolFailed, command="str_replace", path=path, old_str="maze",
                   new_str="x") == (
        "No replacement was performed. Multiple occurrences of old_str `maze` in lines: 2, 4. "
        "Please ensure it is unique")
    assert refused(notes, ToolFailed, command="str_replace", path="/memories/no.md",
                   old_str="a", new_str="b") == (
        "The path /memories/no.md does not exist. Please provide a valid path.")
    assert refused(notes, ToolFailed, command="str_replace", path="/memories", old_str="a",
                   new_str="b") == "The path /memories is not a file."
    assert "old_str is empty" in refused(notes, BadArguments, command="str_replace", path=path,
                                         old_str="", new_str="b")


# -- insert --------------------------------------------------------------------------------------


def test_insert(notes: gitspace.Workspace) -> None:
    assert one_op(notes, command="insert", path="/memories/notes.md", insert_line=1,
                  insert_text="- remember the torch\n") == (
        "The file /memories/notes.md has been edited.")
    assert one_op(notes, command="insert", path="/memories/notes.md", insert_line=5,
                  insert_text="last") == "The file /memories/notes.md has been edited."
    assert memories(notes)["memories/notes.md"] == (
        "# Notes\n- remember the torch\nmaze: unsolved\nexit: east\nmaze again\nlast\n")


@pytest.mark.parametrize("line", [5, 99, -1])
def test_insert_out_of_range(notes: gitspace.Workspace, line: int) -> None:
    assert refused(notes, ToolFailed, command="insert", path="/memories/notes.md",
                   insert_line=line, insert_text="x") == (
        f"Invalid `insert_line` parameter: {line}. It should be within the range [0, 4].")


# -- delete and rename ---------------------------------------------------------------------------


def test_delete_a_file_and_a_folder(notes: gitspace.Workspace) -> None:
    one_op(notes, command="create", path="/memories/old/a.md", file_text="a")
    one_op(notes, command="create", path="/memories/old/deeper/b.md", file_text="b")
    assert one_op(notes, command="delete", path="/memories/old") == (
        "Successfully deleted /memories/old")
    assert changed_files(notes.root) == ["memories/old/a.md", "memories/old/deeper/b.md"]
    assert not (notes.root / "memories" / "old").exists()
    assert one_op(notes, command="delete", path="/memories/notes.md") == (
        "Successfully deleted /memories/notes.md")
    assert memories(notes) == {}
    assert read_only(notes, command="view", path="/memories") == (
        LISTING.format("/memories") + "\n0B\t/memories")


def test_delete_errors(notes: gitspace.Workspace) -> None:
    for path in ("/memories", "/memories/", "/memories/a/.."):
        assert refused(notes, PathRefused, command="delete", path=path) == (
            "Cannot delete the /memories directory itself")
    assert refused(notes, ToolFailed, command="delete", path="/memories/nope") == (
        "The path /memories/nope does not exist")


def test_rename(notes: gitspace.Workspace) -> None:
    assert one_op(notes, command="rename", old_path="/memories/notes.md",
                  new_path="/memories/archive/maze.md") == (
        "Successfully renamed /memories/notes.md to /memories/archive/maze.md")
    assert list(memories(notes)) == ["memories/archive/maze.md"]
    assert one_op(notes, command="rename", old_path="/memories/archive",
                  new_path="/memories/old") == (
        "Successfully renamed /memories/archive to /memories/old")
    assert list(memories(notes)) == ["memories/old/maze.md"]


def test_rename_errors(notes: gitspace.Workspace) -> None:
    one_op(notes, command="create", path="/memories/other.md", file_text="o")
    assert refused(notes, ToolFailed, command="rename", old_path="/memories/other.md",
                   new_path="/memories/notes.md") == (
        "The destination /memories/notes.md already exists")
    assert refused(notes, ToolFailed, command="rename", old_path="/memories/other.md",
                   new_path="/memories") == "The destination /memories already exists"
    assert refused(notes, PathRefused, command="rename", old_path="/memories",
                   new_path="/memories/x") == "Cannot rename the /memories directory itself"
    assert refused(notes, ToolFailed, command="rename", old_path="/memories/gone.md",
                   new_path="/memories/x.md") == "The path /memories/gone.md does not exist"
    one_op(notes, command="create", path="/memories/dir/a.md", file_text="a")
    assert "into itself" in refused(notes, ToolFailed, command="rename",
                                    old_path="/memories/dir", new_path="/memories/dir/sub")
    assert refused(notes, PathRefused, command="rename", old_path="/memories/other.md",
                   new_path="/tmp/x") == "Path must start with /memories, got: /tmp/x"


# -- arguments and paths -------------------------------------------------------------------------


def test_missing_fields_are_named(ws: gitspace.Workspace) -> None:
    assert refused(ws, BadArguments, command="create", path="/memories/a.md") == (
        'The memory create command needs file_text, which was not given.\n'
        'Hint: A valid call looks like: {"command": "create", "path": "/memories/notes.md", '
        '"file_text": "# Notes\\n"}')
    assert refused(ws, BadArguments, command="rename").startswith(
        "The memory rename command needs old_path and new_path, which were not given.")
    assert "args.command must be one of" in refused(ws, BadArguments, command="undo_edit",
                                                    path="/memories")


ESCAPES = {
    "/memories/../notes/x": "Path /memories/../notes/x would escape /memories directory",
    "/memories/a/../../x": "Path /memories/a/../../x would escape /memories directory",
    "/memories/..": "Path /memories/.. would escape /memories directory",
    "/etc/passwd": "Path must start with /memories, got: /etc/passwd",
    "/memoriesx/a.md": "Path must start with /memories, got: /memoriesx/a.md",
    "memories/a.md": "Path must start with /memories, got: memories/a.md",
    "/": "Path must start with /memories, got: /",
    "/memories/%2e%2e/x": "The path /memories/%2e%2e/x was refused: it contains URL-encoded "
                          "characters." + PATH_HINT,
    "/memories/..%2fx": "The path /memories/..%2fx was refused: it contains URL-encoded "
                        "characters." + PATH_HINT,
    "/memories/a\\..\\..\\x": "The path /memories/a\\..\\..\\x was refused: it contains a "
                               "backslash." + PATH_HINT,
    "/memories/a\0b": "The path /memories/a\0b was refused: it contains control, format or "
                      "unassigned characters." + PATH_HINT,
    "/memories/.git/config": "The path /memories/.git/config was refused: it points into .git."
                             + PATH_HINT,
    "/memories/\uff0e\uff0e/x": "The path /memories/\uff0e\uff0e/x was refused: it contains a "
                                "character that imitates a slash or a dot." + PATH_HINT,
}


@pytest.mark.parametrize("path", list(ESCAPES))
def test_refused_paths(notes: gitspace.Workspace, path: str) -> None:
    for args in ({"command": "view"}, {"command": "create", "file_text": "x"},
                 {"command": "str_replace", "old_str": "maze", "new_str": "x"},
                 {"command": "insert", "insert_line": 0, "insert_text": "x"},
                 {"command": "delete"}):
        assert refused(notes, PathRefused, path=path, **args) == ESCAPES[path], args
    assert refused(notes, PathRefused, command="rename", old_path=path,
                   new_path="/memories/y") == ESCAPES[path]
    assert refused(notes, PathRefused, command="rename", old_path="/memories/notes.md",
                   new_path=path) == ESCAPES[path]


def test_dots_and_slashes_that_stay_inside_are_canonicalised(notes: gitspace.Workspace) -> None:
    assert one_op(notes, {"command": "create", "path": "/memories/b.md", "file_text": "b"},
                  command="create", path="/memories/a/../b.md", file_text="b") == (
        "File created successfully at: /memories/b.md")
    assert read_only(notes, command="view", path="/memories//./b.md").startswith(
        "Here's the content of /memories/b.md with line numbers:")


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("secret\n")
    return folder


def test_a_link_inside_memories_pointing_out_is_refused(
    notes: gitspace.Workspace, outside: Path
) -> None:
    (notes.root / "memories" / "link").symlink_to(outside)
    (notes.root / "memories" / "file-link").symlink_to(outside / "secret.txt")
    notes.snapshot()
    for path in ("/memories/link", "/memories/link/secret.txt", "/memories/file-link"):
        escape = f"Path {path} would escape /memories directory"
        assert refused(notes, PathRefused, command="view", path=path) == escape
        assert refused(notes, PathRefused, command="delete", path=path) == escape
        assert refused(notes, PathRefused, command="str_replace", path=path, old_str="secret",
                       new_str="x") == escape
    assert refused(notes, PathRefused, command="create", path="/memories/link/new.md",
                   file_text="x") == "Path /memories/link/new.md would escape /memories directory"
    assert refused(notes, PathRefused, command="rename", old_path="/memories/notes.md",
                   new_path="/memories/link/n.md") == (
        "Path /memories/link/n.md would escape /memories directory")
    assert sorted(os.listdir(outside)) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == "secret\n"
    listing = read_only(notes, command="view", path="/memories")
    assert "link" not in listing and "/memories/notes.md" in listing


def test_a_link_to_elsewhere_inside_memories_is_refused_too(notes: gitspace.Workspace) -> None:
    (notes.root / "memories" / "alias.md").symlink_to("notes.md")
    notes.snapshot()
    assert refused(notes, PathRefused, command="view", path="/memories/alias.md") == (
        "The path /memories/alias.md was refused: memories/alias.md is a symbolic link, and "
        "memory paths never follow links." + PATH_HINT)


def test_memories_itself_a_link_pointing_out(ws: gitspace.Workspace, outside: Path) -> None:
    (ws.root / "memories").symlink_to(outside)
    ws.snapshot()
    assert refused(ws, PathRefused, command="view", path="/memories") == (
        "Path /memories would escape /memories directory")
    assert refused(ws, PathRefused, command="create", path="/memories/x.md", file_text="x") == (
        "Path /memories/x.md would escape /memories directory")
    assert sorted(os.listdir(outside)) == ["secret.txt"]


def test_registration(ws: gitspace.Workspace) -> None:
    from gitspace.tools.builtins import BUILTINS

    tool = BUILTINS["memory"]
    assert (tool.wire_type, tool.mutates) == ("memory_20250818", True)
    assert tool.args_schema["properties"]["command"]["enum"] == [
        "view", "create", "str_replace", "insert", "delete", "rename"]


def test_undo_of_a_memory_op(notes: gitspace.Workspace) -> None:
    one_op(notes, command="delete", path="/memories/notes.md")
    notes.call("undo")
    assert memories(notes)["memories/notes.md"].startswith("# Notes\n")
    assert_clean(notes.root)


@pytest.mark.parametrize("umask", [0o000, 0o022, 0o077])
def test_memories_are_owner_only_as_the_sdk_makes_them(ws: gitspace.Workspace, umask: int) -> None:
    def mode(rel: str) -> int:
        return (ws.root / rel).stat().st_mode & 0o777

    old = os.umask(umask)
    try:
        one_op(ws, command="create", path="/memories/projects/maze.md", file_text="one\n")
        assert (mode("memories"), mode("memories/projects")) == (0o700, 0o700)
        assert mode("memories/projects/maze.md") == 0o600
        (ws.root / "memories" / "projects" / "maze.md").chmod(0o644)  # a person's chmod, then
        one_op(ws, command="str_replace", path="/memories/projects/maze.md", old_str="one",
               new_str="two")  # the SDK's rewrite makes it owner-only again
        assert mode("memories/projects/maze.md") == 0o600
        one_op(ws, command="rename", old_path="/memories/projects/maze.md",
               new_path="/memories/done/maze.md")
        assert (mode("memories/done"), mode("memories/done/maze.md")) == (0o700, 0o600)
        ws.call("undo")  # whoever writes there: an undo puts it back owner-only too
        assert mode("memories/projects/maze.md") == 0o600
        assert ws.call("create", {"path": "notes/plain.md", "file_text": "x\n"}).ok
        assert (mode("notes"), mode("notes/plain.md")) == (0o777 & ~umask, 0o644)  # elsewhere: as before
    finally:
        os.umask(old)
    assert_clean(ws.root)


# -- the SDK's reference backend says the same ---------------------------------------------------


def test_same_strings_as_the_sdk_reference_backend(ws: gitspace.Workspace, tmp_path: Path) -> None:
    from anthropic.lib.tools import _beta_builtin_memory_tool as tools
    reference = tools.BetaLocalFilesystemMemoryTool(str(tmp_path / "reference"))
    script: list[dict[str, Any]] = [
        {"command": "create", "path": "/memories/a.md", "file_text": "one\ntwo\nthree\ntwo\n"},
        {"command": "create", "path": "/memories/a.md", "file_text": "again"},
        {"command": "create", "path": "/memories/sub/b.md", "file_text": "bee"},
        {"command": "view", "path": "/memories/a.md"},
        {"command": "view", "path": "/memories/a.md", "view_range": [2, 3]},
        {"command": "view", "path": "/memories/a.md", "view_range": [3, -1]},
        {"command": "view", "path": "/memories/a.md", "view_range": [0, 1]},
        {"command": "view", "path": "/memories/missing"},
        {"command": "str_replace", "path": "/memories/a.md", "old_str": "two", "new_str": "2"},
        {"command": "str_replace", "path": "/memories/a.md", "old_str": "four", "new_str": "4"},
        {"command": "str_replace", "path": "/memories/a.md", "old_str": "three", "new_str": "3\n3"},
        {"command": "str_replace", "path": "/memories/sub", "old_str": "a", "new_str": "b"},
        {"command": "insert", "path": "/memories/a.md", "insert_line": 0, "insert_text": "zero\n"},
        {"command": "insert", "path": "/memories/a.md", "insert_line": 7, "insert_text": "x"},
        {"command": "insert", "path": "/memories/a.md", "insert_line": 6, "insert_text": "end"},
        {"command": "view", "path": "/memories/a.md"},
        {"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/sub/b.md"},
        {"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/c/a.md"},
        {"command": "rename", "old_path": "/memories/gone", "new_path": "/memories/d"},
        {"command": "rename", "old_path": "/memories", "new_path": "/memories/d"},
        {"command": "delete", "path": "/memories/gone"},
        {"command": "delete", "path": "/memories"},
        {"command": "delete", "path": "/memories/sub"},
        {"command": "view", "path": "/memories/../x"},
        {"command": "view", "path": "/etc/passwd"},
        {"command": "view", "path": "/memories/c/a.md"},
    ]
    for command in script:
        try:
            expected = reference.call(command)
        except tools.ToolError as e:
            expected = str(e)
        assert memory(ws, **command).text == expected, command
    assert files(tmp_path / "reference" / "memories") == {
        k.removeprefix("memories/"): v for k, v in memories(ws).items()}
