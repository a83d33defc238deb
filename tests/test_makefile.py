"""The Makefile's set-up on a fresh machine: the Debian packages the tests drive (chromium, npm,
lighttpd) are installed before anything else when they are missing, or named in one sentence
when they cannot be. ``apt-get`` and ``id`` are fakes found first on PATH (the door make itself
uses to find them), so no package is installed here."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from conftest import REPO


def fakes(tmp_path: Path, uid: int) -> dict[str, str]:
    """An environment whose ``id -u`` says ``uid`` and whose ``apt-get`` logs its arguments and
    'installs' a package by creating the file it was missing."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "id").write_text(f"#!/bin/sh\necho {uid}\n")
    (bin_dir / "apt-get").write_text(
        f'#!/bin/sh\necho "$@" >> {tmp_path}/apt.log\n'
        f'[ "$1" = install ] && for p in "$@"; do touch {tmp_path}/installed-$p; done\nexit 0\n')
    for tool in ("id", "apt-get"):
        (bin_dir / tool).chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}


def debian_packages(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    wanted = f"{tmp_path}/installed-chromium:chromium /bin/sh:dash"
    return subprocess.run(["make", "-s", "-C", str(REPO), "debian-packages",
                           f"DEB_PACKAGES={wanted}"], env=env, capture_output=True, text=True,
                          timeout=60)


def test_as_root_a_missing_package_is_installed_and_a_present_one_left(tmp_path: Path) -> None:
    done = debian_packages(tmp_path, fakes(tmp_path, 0))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "apt.log").read_text().splitlines() == ["install -y -qq chromium"]
    assert (tmp_path / "installed-chromium").exists()


def test_without_root_one_sentence_says_what_to_install_and_nothing_is_run(tmp_path: Path) -> None:
    done = debian_packages(tmp_path, fakes(tmp_path, 1000))
    assert done.returncode == 0, done.stderr
    assert done.stdout == (f"The tests need Debian's chromium ({tmp_path}/installed-chromium); "
                           "install it with 'sudo apt-get install chromium' (its tests fail "
                           "without it).\n")
    assert not (tmp_path / "apt.log").exists()


def test_make_test_sets_up_the_browser_before_anything_else() -> None:
    planned = subprocess.run(["make", "-n", "-C", str(REPO), "test", "-W", "pyproject.toml"],
                             capture_output=True, text=True, timeout=60)
    assert planned.returncode == 0, planned.stderr
    first = [line for line in planned.stdout.splitlines() if not line.startswith("make")][0]
    assert first.startswith("for need in") and "/usr/bin/chromium:chromium" in first
    assert "/usr/bin/npm:npm" in first  # node and npm too, which the npm installs need
