"""What the benchmarks share: a hermetic git environment, progress lines on stderr, and how a
report ends (the table, or JSON with the table on stderr; the work folder removed or kept)."""

from __future__ import annotations

import compileall
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "gitspace"


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def hermetic(root: Path, **extra: str) -> Path:
    """Point HOME and git's config lookups into ``root``; drop inherited GIT_* variables.

    ``extra`` sets more variables (e.g. GITSPACE_PACK_THRESHOLD="0"). Returns the new HOME.
    """
    home = root / "home"
    home.mkdir()
    for name in [k for k in os.environ if k.startswith("GIT_")]:
        del os.environ[name]
    os.environ.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"),
                      GIT_CONFIG_NOSYSTEM="1", GIT_TERMINAL_PROMPT="0", **extra)
    return home


def emit(table: str, report: object, as_json: bool) -> None:
    """The report: the table on stdout, or JSON on stdout and the table on stderr."""
    if as_json:
        log(table)
        print(json.dumps(report, indent=2))
    else:
        print(table)


def finish(work: Path, keep: bool) -> None:
    """Remove the benchmark's work folder, or say where it was kept."""
    if keep:
        log(f"kept {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)


SCRIPT = """#!{python}
import sys
from gitspace.__main__ import main
if __name__ == "__main__":
    sys.exit(main())
"""


def install_like_a_wheel(folder: Path) -> Path:
    """A virtual environment holding a byte-compiled copy of the package and its console script,
    as a wheel install leaves them (dependencies from this interpreter's site-packages, through
    a ``.pth`` line, which does not run their ``.pth`` files: no editable finder). Its python."""
    venv = folder / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next(venv.glob("lib/python*/site-packages"))
    deps = [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]
    (site / "gitspace-bench-deps.pth").write_text("\n".join(deps) + "\n")
    shutil.copytree(PACKAGE, site / "gitspace", ignore=shutil.ignore_patterns("__pycache__"))
    if not compileall.compile_dir(site / "gitspace", quiet=1):
        raise SystemExit("could not byte-compile the package copy")
    python = venv / "bin" / "python"
    script = venv / "bin" / "gitspace"
    script.write_text(SCRIPT.format(python=python))
    script.chmod(0o755)
    return python
