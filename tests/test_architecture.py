"""The layering rules, checked by parsing imports (a failure names the rule that broke)."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "gitspace"


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _rel(path: Path) -> str:
    return str(path.relative_to(PACKAGE))


def test_only_the_object_store_imports_gitpython() -> None:
    offenders = [_rel(p) for p in _modules() if "git" in _imports(p) and _rel(p) != "storage/objects.py"]
    assert not offenders, f"Only storage/objects.py may import GitPython (git); found in {offenders}"


def test_only_front_ends_import_typer_and_rich() -> None:
    offenders = [
        _rel(p) for p in _modules() if _imports(p) & {"typer", "rich"} and p.parent.name != "cli"
    ]
    assert not offenders, f"Only the cli package may import typer or rich; found in {offenders}"


def _nodes_where(match: Callable[[ast.AST], bool], skip: set[str]) -> list[str]:
    """file:line of every AST node in the package that ``match`` accepts, outside ``skip``
    (paths relative to the package; a folder name ending in / skips the whole folder)."""
    found = []
    for path in _modules():
        rel = _rel(path)
        if rel not in skip and not any(rel.startswith(s) for s in skip if s.endswith("/")):
            found += [f"{_rel(path)}:{getattr(n, 'lineno', 0)}"
                      for n in ast.walk(ast.parse(path.read_text())) if match(n)]
    return found


def test_only_config_reads_the_environment() -> None:
    offenders = _nodes_where(
        lambda n: isinstance(n, ast.Attribute) and n.attr in ("environ", "getenv", "putenv"),
        # tools/supervisor.py is a separate program (run by path, not imported): it hands the
        # script the environment the runner already scrubbed through config.
        {"config.py", "tools/supervisor.py"},
    )
    assert not offenders, f"Only config.py may read os.environ/os.getenv; found at {offenders}"


def test_library_never_prints() -> None:
    offenders = _nodes_where(
        lambda n: isinstance(n, ast.Call) and getattr(n.func, "id", None) == "print",
        {"cli/", "__main__.py"},
    )
    assert not offenders, f"The library never prints (return values instead); found {offenders}"


def test_heavy_integrations_are_imported_lazily() -> None:
    heavy = {"anthropic", "mcp", "watchdog"}
    offenders = []
    for path in _modules():
        tree = ast.parse(path.read_text())
        for node in tree.body:  # module level only: function-level imports are lazy
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = _imports_of(node)
                if names & heavy:
                    offenders.append(_rel(path))
    assert not offenders, f"anthropic/mcp/watchdog must be imported inside functions: {offenders}"


def _imports_of(node: ast.Import | ast.ImportFrom) -> set[str]:
    if isinstance(node, ast.Import):
        return {a.name.split(".")[0] for a in node.names}
    return {node.module.split(".")[0]} if node.module and node.level == 0 else set()


def test_plain_import_stays_light() -> None:
    import subprocess
    import sys

    heavy = "('anthropic', 'mcp', 'watchdog', 'rich', 'starlette', 'uvicorn', 'pygments')"
    code = f"import sys, gitspace.cli; print(','.join(m for m in {heavy} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"importing the CLI pulled in {out.stdout.strip()}"


def _absolute(path: Path, node: ast.ImportFrom) -> str:
    """The dotted module an ``import from`` names, relative ones resolved against ``path``."""
    if node.level == 0:
        return node.module or ""
    package = ["gitspace", *path.relative_to(PACKAGE).parent.parts]
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def test_the_web_stack_stays_inside_the_ui_package() -> None:
    """Starlette, uvicorn and Pygments load only with the web view: outside gitspace/ui/ they (and
    gitspace.ui itself) are imported inside functions only."""
    web = {"starlette", "uvicorn", "pygments"}
    inside = PACKAGE / "ui"
    offenders = []
    for path in _modules():
        if inside in path.parents:
            continue
        for node in ast.parse(path.read_text()).body:  # module level only
            if isinstance(node, ast.Import | ast.ImportFrom) and _imports_of(node) & web:
                offenders.append(_rel(path))
            if isinstance(node, ast.ImportFrom) and (
                    _absolute(path, node).startswith("gitspace.ui")
                    or (_absolute(path, node) == "gitspace" and any(a.name == "ui" for a in node.names))):
                offenders.append(_rel(path))
    assert not offenders, f"gitspace.ui and the web stack must be imported lazily: {offenders}"


def test_public_api_is_small() -> None:
    import gitspace

    assert sorted(gitspace.__all__) == ["GitspaceError", "Result", "Workspace", "init", "open"]


def test_only_the_front_door_imports_command_modules() -> None:
    """cli/__init__ (the front door) and cli/commands (the app built from the command modules)
    import command modules; those share cli/common and import neither the app nor each other
    (pre-commit's main.py and commands/*). The shared pieces are common, render, and what render
    and common build on (what a read needs without typer, the declared parameters, the global
    options, json output, lines, the pager, the progress of long jobs)."""
    shared = {"common", "render", "shared", "params", "options", "jsonout", "lines", "pager",
              "progressview"}
    offenders = []
    for path in sorted((PACKAGE / "cli").glob("*.py")):
        if path.name in ("__init__.py", "commands.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                names = {node.module} if node.module else {a.name for a in node.names}
                if not names <= shared:
                    offenders.append(f"cli/{path.name}:{node.lineno} imports {sorted(names)}")
            elif isinstance(node, ast.ImportFrom) and node.module and \
                    node.module.startswith("gitspace.cli"):
                offenders.append(f"cli/{path.name}:{node.lineno} imports {node.module}")
    assert not offenders, ("A command module imports only cli/common (and render), never the app "
                           f"or another command module: {offenders}")
