"""What a packager and a wheel user get: the sdist and the wheel built from a clean copy of this
checkout (offline, ``python -m build --no-isolation``: the sdist first, the wheel from the
sdist, as ``build`` does), their metadata, and a wheel installed away from any source tree that
runs ``gitspace demo`` in a folder of its own.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
from conftest import clean_copy


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("source")
    out = tmp_path_factory.mktemp("dist")
    clean_copy(source)
    built = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out),
                            str(source)], capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    assert "SetuptoolsDeprecationWarning" not in built.stdout + built.stderr
    return out


def _one(folder: Path, pattern: str) -> Path:
    [found] = folder.glob(pattern)
    return found


def test_the_wheel_carries_the_data_and_the_metadata(dist: Path) -> None:
    with zipfile.ZipFile(_one(dist, "gitspace-*.whl")) as wheel:
        names = set(wheel.namelist())
        metadata = Parser().parsestr(wheel.read(_one_name(names, ".dist-info/METADATA")).decode())
    for wanted in ("gitspace/_sample/maze/maze.bin", "gitspace/_sample/journal/worklog.jsonl",
                   "gitspace/_sample/constraints/look", "gitspace/_sample/README.md",
                   "gitspace/_constraints/peek", "gitspace/ui/static/live.js",
                   "gitspace/py.typed", "gitspace/__main__.py"):
        assert wanted in names, (wanted, sorted(n for n in names if "gitspace/_" in n))
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert not any(n.startswith(("tests/", "benchmarks/", "sample_workspace/")) for n in names)
    assert metadata["License-Expression"] == "MIT"
    classifiers = metadata.get_all("Classifier") or []
    assert "Operating System :: POSIX" in classifiers
    assert not any(c.startswith("License ::") for c in classifiers)  # the SPDX field says it
    assert {u.split(",")[0] for u in metadata.get_all("Project-URL") or []} >= {
        "Homepage", "Source", "Issues"}
    assert metadata["Requires-Python"] == ">=3.11"
    extras = set(metadata.get_all("Provides-Extra") or [])
    assert {"agent", "mcp", "watch", "ui", "all"} <= extras


def _one_name(names: set[str], suffix: str) -> str:
    [found] = [n for n in names if n.endswith(suffix)]
    return found


def test_the_sdist_carries_docs_tests_and_what_make_needs(dist: Path) -> None:
    with tarfile.open(_one(dist, "gitspace-*.tar.gz")) as sdist:
        names = {n.split("/", 1)[1] for n in sdist.getnames() if "/" in n}
    for wanted in ("LICENSE", "README.md", "Makefile", "pyproject.toml", "docs/json.md",
                   "docs/architecture.md", "tests/conftest.py", "tests/test_packaging.py",
                   "benchmarks/cli.py", "examples/sdk_runner.py", "sample_workspace/maze/maze.bin",
                   "constraints/peek"):
        assert wanted in names, wanted
    assert not any("__pycache__" in n for n in names)


def test_a_wheel_install_runs_the_demo_anywhere(dist: Path, tmp_path: Path) -> None:
    """The wheel alone (its dependencies come from this environment, so no network is needed),
    run from a folder far from this checkout: the demo finds its sample workspace in the wheel."""
    target = tmp_path / "site"
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
         "--target", str(target), str(_one(dist, "gitspace-*.whl"))],
        capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(target)}
    where = subprocess.run([sys.executable, "-c", "import gitspace; print(gitspace.__file__)"],
                           cwd=elsewhere, env=env, capture_output=True, text=True, timeout=60)
    assert where.stdout.strip() == str(target / "gitspace" / "__init__.py"), where
    launcher = target / "bin" / "gitspace"
    version = subprocess.run([str(launcher), "--version"], cwd=elsewhere, env=env,
                             capture_output=True, text=True, timeout=60)
    assert version.returncode == 0 and version.stdout.startswith("gitspace "), version
    demo = subprocess.run([str(launcher), "demo", "--dir", "demo"], cwd=elsewhere, env=env,
                          capture_output=True, text=True, timeout=600)
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    assert (elsewhere / "demo" / "maze" / "maze.bin").is_file()
    sessions = subprocess.run([str(launcher), "-C", "demo", "sessions", "--json"], cwd=elsewhere,
                              env=env, capture_output=True, text=True, timeout=60)
    assert sessions.returncode == 0 and '"status": "done"' in sessions.stdout, sessions


def test_the_wheel_holds_every_package(dist: Path) -> None:
    # (A package left out of pyproject's list works in the editable install the tests use, and
    # is missing from every wheel: 'gitspace hooks install' then fails for each user.)
    source = Path(__file__).resolve().parent.parent / "gitspace"
    wanted = {p.parent.relative_to(source.parent).as_posix() + "/__init__.py"
              for p in source.rglob("__init__.py") if "__pycache__" not in p.parts}
    wheel = next(dist.glob("*.whl"))
    with zipfile.ZipFile(wheel) as z:
        held = set(z.namelist())
    assert wanted <= held, sorted(wanted - held)
