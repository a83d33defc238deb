"""Shared fixtures: hermetic real-git workspaces in temporary folders.

Every test runs with HOME pointing at an empty temporary folder and no global or system git config,
and any attempt by this process to write under the real home directory fails the test. Git is never
mocked: helpers here run the real ``git`` CLI against the repositories gitspace made.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

import gitspace
from gitspace.storage.ledger import LedgerError, Op, parse_message

# A shell starts a background job ('make test &' in a script) with Ctrl-C ignored, and a child
# inherits an ignored signal: the tests that press Ctrl-C on a gitspace process would then see it
# carry on. Children of this process start with Ctrl-C as a terminal would deliver it.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# No resident recorder unless a test asks for one (GITSPACE_RESIDENT=on in its environment): a
# hook then records in its own process and leaves no server running, in every fixture, module
# and session wide ones too (``hermetic`` sets it again for each test).
os.environ["GITSPACE_RESIDENT"] = "off"

REPO = Path(__file__).resolve().parent.parent  # the checkout: tests/<layer>/ files ask here
SAMPLE = REPO / "sample_workspace"
REAL_HOME = Path(os.path.expanduser("~")).resolve()
_guard = {"on": False}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_WRITE_EVENTS = {"os.mkdir", "os.remove", "os.rmdir", "os.rename", "os.symlink", "os.link",
                 "os.chmod", "os.truncate", "os.utime", "shutil.rmtree", "shutil.move"}


class WroteToRealHome(AssertionError):
    """A test tried to write under the real $HOME."""


def _under_home(path: object) -> bool:
    if isinstance(path, int) or path is None:
        return False
    try:
        full = Path(os.fsdecode(path)).absolute()  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    return full == REAL_HOME or REAL_HOME in full.parents


def _audit(event: str, args: tuple[object, ...]) -> None:
    if not _guard["on"]:
        return
    if event == "open":
        path, mode, flags = (tuple(args) + (None, None, None))[:3]
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            isinstance(flags, int) and flags & _WRITE_FLAGS
        )
        if writing and _under_home(path):
            raise WroteToRealHome(f"a test tried to write {path} under the real HOME")
    elif event in _WRITE_EVENTS and args and any(_under_home(a) for a in args[:2]):
        raise WroteToRealHome(f"a test tried {event} on {args[:2]} under the real HOME")


sys.addaudithook(_audit)


def gitspace_places(home: Path = REAL_HOME) -> list[Path]:
    """What gitspace (or a harness it drives) could write under the real home: each harness's
    user-wide settings file and folder (from the one harness list), Claude Code's transcripts
    (a fork writes one), gitspace's own settings, the git config, and what ``make install`` puts
    under ~/.local. Not the home folder itself: anything else on the machine may write there
    (pip, npm and editors touch ``~/.cache``), and that is no test's doing."""
    from gitspace.harness.adapters import specs

    places = {home / ".gitconfig", home / ".config" / "git", home / ".config" / "gitspace",
              home / ".claude" / "projects", home / ".local" / "share" / "gitspace",
              home / ".local" / "bin" / "gitspace"}
    for spec in specs().values():
        for _, where in spec.files:
            if where.startswith("~/"):
                settings = home / where[2:]
                places |= {settings, settings.parent}
    return sorted(places)


def home_fingerprint(home: Path = REAL_HOME) -> dict[str, tuple[int, int]]:
    """mtime and size of every place gitspace could write under the real home, and of what each
    folder among them holds (two levels down)."""
    out = {}
    for place in gitspace_places(home):
        found = [place]
        if place.is_dir() and not place.is_symlink():
            found += list(place.iterdir())
            found += [q for p in found[1:] if p.is_dir() and not p.is_symlink()
                      for q in p.iterdir()]
        for p in found:
            try:
                st = p.lstat()
            except OSError:
                continue
            out[str(p)] = (st.st_mtime_ns, st.st_size)
    return out


@pytest.fixture(autouse=True)
def hermetic(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """HOME is an empty tmp folder, git reads no global/system config, real HOME is untouched."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    # No background repack unless a test asks for one: git fsck run while a repack prunes loose
    # objects reports them missing. tests/storage/test_packing.py turns it on and waits for it.
    monkeypatch.setenv("GITSPACE_PACK_THRESHOLD", "0")
    # No resident recorder unless a test asks for one (tests/harness/resident/): a hook called
    # in a test's own process then records there, and leaves no server running.
    monkeypatch.setenv("GITSPACE_RESIDENT", "off")
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
                 "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CEILING_DIRECTORIES", "GITSPACE_AGENT"):
        monkeypatch.delenv(name, raising=False)
    before = home_fingerprint()
    _guard["on"] = True
    try:
        yield home
    finally:
        _guard["on"] = False
    after = home_fingerprint()
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    assert not changed, f"something wrote where gitspace keeps things under the real home: {changed}"


# -- helpers ---------------------------------------------------------------------------------


def git_env() -> dict[str, str]:
    """The environment our own git CLI calls use: no inherited GIT_* redirection, fixed identity."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1",
               GIT_AUTHOR_NAME="Test Human", GIT_AUTHOR_EMAIL="human@example.com",
               GIT_COMMITTER_NAME="Test Human", GIT_COMMITTER_EMAIL="human@example.com")
    return env


def git_run(root: Path | str, *args: str, input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", *args], cwd=root, env=git_env(), input=input, capture_output=True)


def git(root: Path | str, *args: str, input: bytes | None = None) -> str:
    """Run the real git CLI in ``root`` and return stdout; fail the test on a non-zero exit."""
    proc = git_run(root, *args, input=input)
    assert proc.returncode == 0, f"git {' '.join(args)} failed: {proc.stderr.decode()}"
    return proc.stdout.decode("utf-8", "surrogateescape")


def clean_copy(target: Path) -> None:
    """The files of this checkout a clone would have (tracked, and new ones not ignored)."""
    listed = git(REPO, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    for rel in sorted(set(p for p in listed.split("\0") if p)):
        source = REPO / rel
        if not source.exists() or source.is_dir():
            continue  # deleted in the work tree but not yet in the index, or a submodule
        (target / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target / rel, follow_symlinks=False)


def assert_clean(root: Path | str) -> None:
    """Nothing pending in ``git status`` and ``git fsck --strict`` accepts the repository."""
    status = git(root, "status", "--porcelain", "--untracked-files=all")
    assert status == "", f"git status is not clean:\n{status}"
    fsck = git_run(root, "fsck", "--strict", "--no-progress")
    assert fsck.returncode == 0, f"git fsck failed:\n{fsck.stdout.decode()}{fsck.stderr.decode()}"
    assert not lock_files(root), f"a .lock file was left behind: {lock_files(root)}"
    assert not Path(root, ".git", "gitspace", "journal.json").exists(), "a journal was left behind"


def ops(root: Path | str, rev: str = "HEAD", first_parent: bool = True) -> list[Op]:
    """The ops on ``rev`` according to plain ``git log``, oldest first (non-op commits skipped)."""
    args = ["log", "-z", "--format=%B", "--reverse"]
    if first_parent:
        args.append("--first-parent")
    out = git(root, *args, rev, "--")
    found = []
    for message in out.split("\0"):
        if message.strip():
            op = parse_message(message.lstrip("\n"))
            if op is not None:
                found.append(op)
    return found


def op_ids(root: Path | str, rev: str = "HEAD") -> list[str]:
    return [op.op_id for op in ops(root, rev)]


def head(root: Path | str, rev: str = "HEAD") -> str:
    return git(root, "rev-parse", rev).strip()


def message_of(root: Path | str, rev: str = "HEAD") -> str:
    return git(root, "log", "-1", "--format=%B", rev)


def changed_files(root: Path | str, rev: str = "HEAD") -> list[str]:
    """Paths a commit changes relative to its first parent."""
    out = git(root, "diff-tree", "-r", "--no-commit-id", "--name-only", "-z", f"{rev}^", rev)
    return sorted(p for p in out.split("\0") if p)


def work_tree_files(root: Path | str) -> list[Path]:
    """Every non-folder entry of the work tree, never descending into .git.

    A background repack may be changing .git/objects while a test looks, so .git is pruned from
    the walk rather than filtered out afterwards.
    """
    found = []
    for folder, dirs, names in os.walk(root):
        if Path(folder) == Path(root) and ".git" in dirs:
            dirs.remove(".git")
        found += [Path(folder, n) for n in names]
    return sorted(found)


def lock_files(root: Path | str) -> list[str]:
    """Names of *.lock files anywhere under .git (tolerant of a concurrent repack)."""
    return [n for _, _, names in os.walk(Path(root, ".git")) for n in names if n.endswith(".lock")]


def files(root: Path | str) -> dict[str, str]:
    """Every work-tree file outside .git as {relative path: text}."""
    base = Path(root)
    return {
        p.relative_to(base).as_posix(): p.read_bytes().decode("utf-8", "surrogateescape")
        if not p.is_symlink() else "-> " + os.readlink(p)
        for p in work_tree_files(base)
    }


def state(root: Path | str) -> tuple[str, str, bytes, dict[str, str]]:
    """(branch ref, HEAD target, index bytes, files): everything a failed op must leave alone."""
    base = Path(root)
    index = base / ".git" / "index"
    return (
        git(root, "symbolic-ref", "HEAD").strip(),
        head(root),
        index.read_bytes() if index.exists() else b"",
        files(root),
    )


def parse_or_error(message: str) -> Op | None | LedgerError:
    try:
        return parse_message(message)
    except LedgerError as e:
        return e


# -- fixtures --------------------------------------------------------------------------------


@pytest.fixture
def ws_root(tmp_path: Path) -> Path:
    return tmp_path / "ws"


@pytest.fixture
def ws(ws_root: Path) -> Iterator[gitspace.Workspace]:
    """A freshly initialised workspace for agent "tester", closed afterwards."""
    workspace = gitspace.init(ws_root, agent="tester")
    try:
        yield workspace
    finally:
        workspace.close()


@pytest.fixture
def scratch_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Replay's temporary folders go here, and none may be left afterwards. Tests that replay
    use it for every test: ``pytestmark = pytest.mark.usefixtures("scratch_dirs")``."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    monkeypatch.setenv("GITSPACE_SCRATCH_DIR", str(folder))  # not the RAM folder replay prefers
    yield folder
    assert not any(n.startswith("gitspace-replay-") for n in os.listdir(folder))


def call_ok(ws: gitspace.Workspace, tool: str, args: Mapping[str, Any] | None = None) -> gitspace.Result:
    """Call a tool that must succeed and return its result."""
    result = ws.call(tool, dict(args or {}))
    assert result.ok, f"{tool} {args} failed: {result.text}"
    return result


def gitspace_cli(cwd: Path | str, *args: str, env: Mapping[str, str] | None = None,
                 input: str | None = None) -> subprocess.CompletedProcess[str]:
    """``gitspace -C cwd ARGS`` as a person runs it: a new process, no inherited agent or key."""
    base = {k: v for k, v in os.environ.items()
            if k not in ("GITSPACE_AGENT", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "NO_COLOR")}
    return subprocess.run([sys.executable, "-m", "gitspace", "-C", str(cwd), *args],
                          capture_output=True, text=True, env={**base, **(env or {})},
                          input=input, timeout=120)


def call_refused(ws: gitspace.Workspace, tool: str, args: Mapping[str, Any], kind: type,
                 says: str) -> None:
    """Call a tool that must be refused with ``kind`` saying ``says``, changing nothing."""
    before = state(ws.root)
    result = ws.call(tool, dict(args))
    assert not result.ok and isinstance(result.error, kind), result.text
    assert says in result.text, result.text
    assert state(ws.root) == before


def write_script(folder: Path, name: str, mutates: bool, body: str) -> None:
    """A small shell constraint script taking {"path": ...}, for tests of the script seam."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(
        "#!/bin/sh\n# ---gitspace---\n"
        f"# name: {name}\n# description: test script {name}; use it in tests.\n"
        '# example: {"path": "a.txt"}\n'
        f"# mutates: {'true' if mutates else 'false'}\n"
        '# args: {"type": "object", "properties": {"path": {"type": "string"}}, '
        '"required": ["path"], "additionalProperties": false}\n'
        "# timeout: 5\n# ---\n" + body)
    (folder / name).chmod(0o755)


from browser import browser, page, screenshot  # noqa: E402,F401  (one Chromium per session)
from claude_code import claude_code  # noqa: E402,F401  (the real Claude Code CLI fixture)
from codex_cli import codex  # noqa: E402,F401  (the real Codex CLI fixture)
from fake_anthropic import fake_api  # noqa: E402,F401  (the fake Messages API fixture)
from fake_gemini import fake_gemini  # noqa: E402,F401  (the fake Gemini API fixture)
from fake_responses import fake_responses  # noqa: E402,F401  (the fake Responses API fixture)
from gemini_cli import gemini  # noqa: E402,F401  (the real Gemini CLI fixture)
from gitserver import any_server, git_server, http_server  # noqa: E402,F401  (real git servers on 127.0.0.1)
from hostile import neighbour, outside  # noqa: E402,F401  (the folders the hostile corpus guards)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Browser tests run last. Playwright's sync API keeps an asyncio loop marked running on this
    thread while the browser is up, so any later test that calls asyncio.run would fail."""
    items.sort(key=lambda item: "browser" in getattr(item, "fixturenames", ()))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    import browser as browser_artifacts

    line = browser_artifacts.summary_line()
    if line:
        terminalreporter.write_line(line)
