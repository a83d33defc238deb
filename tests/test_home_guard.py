"""The suite's guard of the real home folder watches what gitspace could write there, and only
that: another program on the machine writing into ``~/.cache`` fails no test."""

from __future__ import annotations

from pathlib import Path

from conftest import home_fingerprint


def test_the_guard_sees_gitspaces_places_and_not_the_rest_of_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".cache").mkdir(parents=True)
    (home / ".claude").mkdir()
    before = home_fingerprint(home)

    (home / ".cache" / "pip-wheel").write_text("another program's\n")
    (home / ".bash_history").write_text("ls\n")
    assert home_fingerprint(home) == before, "writes outside gitspace's places must not count"

    for planted in (home / ".claude" / "settings.json", home / ".codex" / "hooks.json",
                    home / ".config" / "gitspace" / "exclude", home / ".gitconfig",
                    home / ".claude" / "projects" / "-tmp-x" / "fork.jsonl"):
        planted.parent.mkdir(parents=True, exist_ok=True)
        planted.write_text("{}\n")
        after = home_fingerprint(home)
        assert after != before, f"a write of {planted} went unseen"
        before = after
