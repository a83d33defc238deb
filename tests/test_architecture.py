"""The architecture's rules, all of them in this one file, checked by parsing every import (in the
manner of dulwich's tests/test_source.py). A failure says which rule broke and where.

First the layers: every import counts, at module level, inside a function (lazy) or under
``TYPE_CHECKING``; a lazy import only hides a dependency, it does not remove it. An allowed
exception is listed with a one-line reason; an entry that no longer matches anything fails too,
so the lists only ever shrink. docs/architecture.md, which draws these layers, is checked against
the source too. Then what each package may import of the world (GitPython, typer and rich, the
environment, printing, the heavy integrations, the web stack) and what a plain import costs.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "gitspace"

# Lowest first. A module may import its own layer and the layers below it, never one above.
LAYERS: list[tuple[str, set[str]]] = [
    ("foundation", {"errors", "config", "faults", "extras", "progress", "http_guard"}),
    ("storage", {"storage"}),  # git itself: objects, refs, index, the ledger format
    ("core", {"core"}),  # the op: workspace, transaction, undo, checkpoints, branches, lookup
    # what a tool is, every built-in tool, constraint scripts; and recording the calls of another
    # harness (its hooks), in a workspace or in a person's own checkout: the two run beside each
    # other, on the core, and neither imports the other. Beside recording, what its record
    # proves once the person commits (provenance/: the notes under refs/notes/ai), which reads
    # recording's line and transcripts and which recording's hooks install and gc call on
    ("tools and recording", {"tools", "harness", "provenance"}),
    ("api", {"api", "__init__"}),  # gitspace.open/init: a workspace wired with the tools
    ("runtimes", {"agent", "replay", "team"}),  # what runs tools: agents, replay, many actors
    ("front ends", {"cli", "mcp_server", "ui", "__main__"}),
]

# (importer, imported) -> why this upward import is allowed. Keep it empty if you can.
ALLOWED_UPWARD: dict[tuple[str, str], str] = {}

# Modules that import each other in a loop, -> why. Keep it empty if you can.
ALLOWED_CYCLES: dict[frozenset[str], str] = {}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _layer(module: str) -> int:
    top = module.split(".")[1] if "." in module else "__init__"
    for number, (_, tops) in enumerate(LAYERS):
        if top in tops:
            return number
    return -1


def _imports(module: str) -> set[str]:
    """Every gitspace module ``module`` imports, anywhere in its source."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {_known(alias.name) for alias in node.names if alias.name.startswith("gitspace")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            elif node.module and node.module.startswith("gitspace"):
                target = node.module
            else:
                continue
            for alias in node.names:  # ``from . import x`` may name a module or an attribute
                name = f"{target}.{alias.name}"
                found.add(name if name in MODULES else _known(target))
    found.discard(module)
    return found


def _known(name: str) -> str:
    while name not in MODULES and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


GRAPH = {module: _imports(module) for module in MODULES}


def test_every_module_has_a_layer() -> None:
    lost = [m for m in MODULES if _layer(m) < 0]
    assert not lost, (f"{lost} belong to no layer: add their folder to LAYERS in "
                      "tests/test_architecture.py (and to docs/architecture.md).")


def test_lower_layers_never_import_higher_ones() -> None:
    upward = []
    for module, imported in GRAPH.items():
        if _layer(module) < 0:
            continue  # reported by test_every_module_has_a_layer
        for target in sorted(imported):
            if _layer(target) > _layer(module) and (module, target) not in ALLOWED_UPWARD:
                upward.append(f"{module} ({LAYERS[_layer(module)][0]}) imports {target} "
                              f"({LAYERS[_layer(target)][0]})")
    assert not upward, ("A lower layer imports a higher one (lazy and TYPE_CHECKING imports "
                        "count):\n  " + "\n  ".join(upward)
                        + "\nPass what it needs in from above, or list it in ALLOWED_UPWARD "
                        "with a reason.")
    stale = [pair for pair in ALLOWED_UPWARD if pair[1] not in GRAPH.get(pair[0], set())]
    assert not stale, f"ALLOWED_UPWARD lists imports that no longer exist: {stale}"


def _cycles() -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for module in GRAPH:
        if module not in index:
            visit(module)
    return found


def test_no_import_cycles() -> None:
    cycles = [sorted(c) for c in _cycles() if c not in ALLOWED_CYCLES]
    assert not cycles, ("These modules import each other in a loop (lazy imports count): "
                        f"{cycles}. Move what both need into a module below them, or pass it in.")
    stale = [c for c in ALLOWED_CYCLES if c not in _cycles()]
    assert not stale, f"ALLOWED_CYCLES lists loops that no longer exist: {stale}"


def test_the_core_never_imports_tools_or_runtimes() -> None:
    """Stated on its own because it is the rule the registry seam exists for."""
    reach = [f"{m} -> {t}" for m, ts in GRAPH.items() if m.startswith("gitspace.core")
             for t in ts if t.split(".")[1] in ("tools", "agent", "replay", "team", "api")]
    assert not reach, f"The core runs the tools it is given and imports none of them: {reach}"


# Modules that may name a built-in tool in a comparison, -> why.
NAMES_A_TOOL: dict[str, str] = {
    "gitspace/agent/demo.py": "the demo's summary counts what its scripted agents did",
}


def test_behaviour_that_depends_on_the_tool_asks_the_tool() -> None:
    """Outside tools/, nothing compares a tool's name with a built-in's (``tool == "restore"``):
    such behaviour is a property on Tool (read-only, idempotent, moves_refs, recover...)."""
    from gitspace.tools.builtins import BUILTINS

    offenders = []
    for module, path in MODULES.items():
        rel = path.relative_to(PACKAGE.parent).as_posix()
        if module.startswith(("gitspace.tools", "gitspace.agent.policies")) or rel in NAMES_A_TOOL:
            continue  # tools define themselves; scripted policies call tools by name
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare):
                values = [node.left, *node.comparators]
                names = {v.value for v in values if isinstance(v, ast.Constant)}
                for v in values:
                    if isinstance(v, ast.Tuple | ast.Set | ast.List):
                        names |= {e.value for e in v.elts if isinstance(e, ast.Constant)}
                if names & set(BUILTINS) and any(_is_a_tool_name(v) for v in values):
                    offenders.append(f"{rel}:{node.lineno}")
    assert not offenders, ("Behaviour keyed on a tool's name outside tools/: "
                           f"{offenders}. Give Tool a property and read it.")


def _is_a_tool_name(node: ast.expr) -> bool:
    """``tool``, ``name``, ``x.tool`` or ``tool.name``: an expression that holds a tool's name."""
    if isinstance(node, ast.Name):
        return node.id in ("tool", "tool_name", "name")
    if isinstance(node, ast.Attribute):
        return node.attr == "tool" or (node.attr == "name" and isinstance(node.value, ast.Name)
                                       and node.value.id == "tool")
    return False


# -- one writer --------------------------------------------------------------------------

WRITER = "gitspace/core/writer.py"
# What moves a ref, HEAD or an index: storage's compare-and-swap and ref transaction, HEAD, the
# index store (and the racy-entry settling that stores it), a private index's writes, a linked
# worktree made or removed (its HEAD and index), a bare remote's HEAD, and the git commands that
# do any of it (``push`` moves remote-tracking refs; ``worktree`` another checkout's HEAD).
MOVERS = {"cas_ref", "lock_ref", "ref_transaction", "set_head", "store", "settle", "replace",
          "set_entries", "skip_worktree", "rebuild", "add_worktree", "remove_worktree",
          "forget_worktree", "set_bare_head"}
MOVER_OWNERS = {"store": "gitindex", "settle": "racyindex", "replace": "lockfile",
                "set_entries": "privateindex", "skip_worktree": "privateindex",
                "rebuild": "privateindex"}
GIT_MOVERS = {"update-index", "update-ref", "read-tree", "symbolic-ref", "checkout-index",
              "push", "worktree"}

# Modules above storage/ that move a ref, HEAD or an index themselves, -> why. Each reason says
# why the thing moved is not this checkout's state that a Change would make whole.
ALLOWED_MOVERS: dict[str, str] = {
    "gitspace/team/merge.py": "a merge into the user's own checkout is git's 'read-tree -m -u' "
                              "(their filters, their index format) under the branch's ref lock",
    "gitspace/team/merge_journal.py": "it puts back such a merge that a crash cut short (git's "
                                      "'update-index' and 'checkout-index', the saved index)",
    "gitspace/core/unrecorded.py": "'gitspace diff' alone fills a throwaway copy of the index in a "
                                   "temporary folder, never the repository's own",
    "gitspace/harness/inplace/place.py": "the private index (storage/privateindex.py) is a "
                                          "cache of stat data, never a record: made afresh from "
                                          "the person's index whenever it is missing or stale",
    "gitspace/team/agent_worktrees.py": "an attached agent's or a delegated child's worktree is "
                                        "another checkout, of a branch the writer made first: "
                                        "'git worktree' makes and removes it whole, and a "
                                        "child's is filled by git's 'read-tree' and "
                                        "'checkout-index' there when it must be whole",
    "gitspace/team/remote.py": "'git push' moves the remote's refs (and git's remote-tracking "
                               "copies of them); a bare remote's HEAD is that repository's",
}


def _moves(path: Path) -> list[str]:
    """What ``path`` calls that moves a ref, HEAD or the index, as 'line: name'."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in MOVERS:
            owner = MOVER_OWNERS.get(func.attr)
            if owner is None or isinstance(func.value, ast.Name) and func.value.id == owner:
                found.append(f"{node.lineno}: {func.attr}")
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in ("git", "run_git", "_git", "_run"):  # a git command's first words
            found += [f"{node.lineno}: git {a.value}" for a in node.args[:4]
                      if isinstance(a, ast.Constant) and a.value in GIT_MOVERS]
    return found


def test_only_the_writer_moves_refs_head_or_the_index() -> None:
    """Every change to a ref, HEAD or the index is a ``Change`` that ``Writer.apply`` makes: its
    journal, rollback and crash recovery then hold for all of them. storage/ defines the moves;
    above it, only core/writer.py calls them."""
    offenders, used = [], set()
    for module, path in MODULES.items():
        rel = path.relative_to(PACKAGE.parent).as_posix()
        if module.startswith("gitspace.storage") or rel == WRITER:
            continue
        moves = _moves(path)
        if moves and rel in ALLOWED_MOVERS:
            used.add(rel)
        elif moves:
            offenders += [f"{rel}:{m}" for m in moves]
    assert not offenders, ("Only core/writer.py moves refs, HEAD or the index: "
                           f"{offenders}. Describe the change as a writer.Change and hand it to "
                           "Writer.apply, or list the module in ALLOWED_MOVERS with a reason.")
    stale = sorted(set(ALLOWED_MOVERS) - used)
    assert not stale, f"ALLOWED_MOVERS lists modules that no longer move anything: {stale}"


# The storage modules whose moves the writer makes (files, index, refs, its lock and state).
WRITERS_STORAGE = {"files", "gitindex", "racyindex", "lockfile", "statefiles", "refs", "objects"}


def _test_of(module: str) -> Path:
    """``tests/<layer folder>/test_<module>.py`` (a foundation module's: ``tests/test_<m>.py``)."""
    parts = module.split(".")
    return PACKAGE.parent.joinpath("tests", *parts[1:-1], f"test_{parts[-1]}.py")


def test_every_module_of_the_write_path_has_its_test_module() -> None:
    """The write path: the writer, every module that hands it a Change (imports it), and the
    storage modules it moves things through. Each has ``tests/<layer>/test_<module>.py``."""
    writer = "gitspace.core.writer"
    path = {writer, *(m for m, imported in GRAPH.items() if writer in imported),
            *(f"gitspace.storage.{m}" for m in WRITERS_STORAGE)}
    missing = sorted(str(_test_of(m).relative_to(PACKAGE.parent)) for m in path
                     if not _test_of(m).exists())
    assert not missing, f"Modules of the write path without a test module of their own: {missing}"


# Modules above storage/ that take a lock of a checkout's gitspace folder themselves, -> why.
ALLOWED_LOCKERS: dict[str, str] = {
    "gitspace/team/sync_state.py": "the sync lock (one sync at a time) is a lock of its own, held "
                                   "around many of the writer's changes, never the writer's",
}


def test_only_the_writer_takes_a_checkouts_lock() -> None:
    """``Writer.locked`` takes the checkout's lock and first finishes a change a crash cut short
    (its journal): a lock taken by hand skips that, and the next change overwrites the journal."""
    offenders, used = [], set()
    for module, path in MODULES.items():
        rel = path.relative_to(PACKAGE.parent).as_posix()
        if module.startswith("gitspace.storage") or rel == WRITER:
            continue
        calls = [node.lineno for node in ast.walk(ast.parse(path.read_text()))
                 if isinstance(node, ast.Call) and "flocked" in ast.unparse(node.func)]
        if calls and rel in ALLOWED_LOCKERS:
            used.add(rel)
        elif calls:
            offenders += [f"{rel}:{n}" for n in calls]
    assert not offenders, (f"A checkout's lock taken by hand: {offenders}. Hold "
                           "Writer.locked() instead, or list the module in ALLOWED_LOCKERS.")
    assert not sorted(set(ALLOWED_LOCKERS) - used), "ALLOWED_LOCKERS lists modules that lock nothing"


def test_an_ops_record_is_built_from_its_identity() -> None:
    """Every op's ledger record is ``Identity.op`` of the call's identity (core/identity.py): an
    ``Op(...)`` assembled anywhere else is identity spelled again, and misses a field added to
    both (a new trailer)."""
    offenders = []
    for module, path in MODULES.items():
        if module.startswith("gitspace.storage") or module == "gitspace.core.identity":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and ast.unparse(node.func) in ("Op", "ledger.Op"):
                offenders.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert not offenders, (f"An op's record built by hand: {offenders}. Build an Identity where "
                           "the call enters and use Identity.op (or identity.external_edit).")


IDENTITY_FIELDS = {"agent", "session", "clock", "rebased_from", "tool_use_id", "op_id", "person",
                   "parent_session", "parent_tool_use_id"}


def test_a_calls_identity_is_handed_down_never_set_on_the_workspace() -> None:
    """A call's identity (core/identity.py) is a value built where the call enters; setting
    ``ws.agent`` or ``sc.ws.clock`` so that something deeper reads it back is a hidden parameter."""
    offenders = []
    for path in MODULES.values():
        for node in ast.walk(ast.parse(path.read_text())):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if \
                isinstance(node, ast.AugAssign | ast.AnnAssign) else []
            for target in targets:
                for t in target.elts if isinstance(target, ast.Tuple) else [target]:
                    if isinstance(t, ast.Attribute) and t.attr in IDENTITY_FIELDS and (
                            isinstance(t.value, ast.Name) and t.value.id == "ws"
                            or isinstance(t.value, ast.Attribute) and t.value.attr == "ws"):
                        offenders.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert not offenders, ("A workspace's identity attribute is set to pass a call's identity "
                           f"down: {offenders}. Build an Identity and hand it to ws.call_as.")


# -- docs/architecture.md names real places --------------------------------------------------

DOC = PACKAGE.parent / "docs" / "architecture.md"


def _definitions() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """{module's last name: its top-level names} and {class name: its members}, from the source."""
    modules: dict[str, set[str]] = {}
    classes: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        names = modules.setdefault(module.rsplit(".", 1)[-1], set())
        for node in ast.parse(path.read_text()).body:
            names |= _bound(node)
            if isinstance(node, ast.ClassDef):
                classes.setdefault(node.name, set()).update(*(_bound(n) for n in node.body))
    return modules, classes


def _bound(node: ast.stmt) -> set[str]:
    """The names a statement binds (a def, a class, an assignment, an import)."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {node.name}
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return {node.target.id}
    if isinstance(node, ast.Assign):
        names = {t.id for t in node.targets if isinstance(t, ast.Name)}
        if names == {"__all__"} and isinstance(node.value, ast.List | ast.Tuple):
            names |= {e.value for e in node.value.elts if isinstance(e, ast.Constant)}
        return names
    if isinstance(node, ast.ImportFrom):
        return {alias.asname or alias.name for alias in node.names}
    return set()


def test_the_architecture_page_names_real_places() -> None:
    """Every file or folder docs/architecture.md names exists, and every ``Class.member``,
    ``module.name`` and CONSTANT it names is defined: a move or a rename updates the page."""
    modules, classes = _definitions()
    constants = set().union(*modules.values())
    missing = []
    for token in re.findall(r"`([^`\s]+)`", DOC.read_text()):
        if token.endswith((".py", "/")) and not token.startswith(".") and "<" not in token:
            folders = [PACKAGE, PACKAGE.parent, PACKAGE.parent / "tests",
                       *(p.parent for p in MODULES.values())]
            if not any(list(folder.glob(token.rstrip("/"))) for folder in folders):
                missing.append(token)
        elif re.fullmatch(r"[A-Za-z_]\w*\.[A-Za-z_]\w*", token) and not token.endswith(".md"):
            owner, name = token.split(".")
            owner = {"ws": "Workspace"}.get(owner, owner)  # the page's name for a workspace
            if name not in classes.get(owner, set()) | modules.get(owner, set()):
                missing.append(token)
        elif re.fullmatch(r"[A-Z][A-Z_]+", token) and token not in constants:
            missing.append(token)
    assert not missing, f"docs/architecture.md names what does not exist: {missing}"


def test_a_test_imports_helpers_not_tests_of_another_folder() -> None:
    """pytest puts a test's own folder on sys.path only when it collects it, so importing
    ``test_x`` of another folder works or fails by collection order. Shared helpers live in a
    helper module in tests/ (conftest, user_repo, fleet, hostile...)."""
    tests = PACKAGE.parent / "tests"
    where = {p.stem: p.parent for p in tests.rglob("test_*.py")}
    crossing = []
    for path in sorted(tests.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module] if isinstance(node, ast.ImportFrom) and node.module
                     else [])
            for name in names:
                if name in where and where[name] != path.parent:
                    crossing.append(f"{path.relative_to(tests)}:{node.lineno} imports {name}")
    assert not crossing, ("A test imports a test module of another folder: "
                          f"{crossing}. Move what it shares into a helper module in tests/.")


def test_no_module_imports_another_modules_private_names() -> None:
    """A name with a leading underscore is its module's own: a second user means it is shared, so
    it gets a public name in the module both can import (``tools/text.py`` holds what the file and
    memory tools share)."""
    borrowed = []
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith(
                    "gitspace")):
                borrowed += [f"{module}:{node.lineno} imports {alias.name}" for alias in node.names
                             if alias.name.startswith("_") and not alias.name.startswith("__")]
    assert not borrowed, f"Private names imported from another module: {borrowed}"


# -- what each package may import of the world -------------------------------------------

def _top_imports(path: Path) -> set[str]:
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
    offenders = [_rel(p) for p in _modules() if "git" in _top_imports(p) and _rel(p) != "storage/objects.py"]
    assert not offenders, f"Only storage/objects.py may import GitPython (git); found in {offenders}"


def test_only_front_ends_import_typer_and_rich() -> None:
    offenders = [
        _rel(p) for p in _modules() if _top_imports(p) & {"typer", "rich"} and p.parent.name != "cli"
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
