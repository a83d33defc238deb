"""``python -m gitspace`` and the ``gitspace`` command.

A harness runs ``gitspace hook ...`` on every tool call, so those (and ``gitspace record``) go
straight to ``harness.hook`` without loading the CLI (typer, rich, every command module).
"""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:2] in (["hook"], ["record"]):
        from gitspace.harness.hook import main as hook_main

        sys.exit(hook_main(sys.argv[1:]))
    from gitspace.cli import main as cli_main

    cli_main(process=True)


if __name__ == "__main__":
    main()
