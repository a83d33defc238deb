"""What a replay checked, in sentences: the same words in the CLI, in ``replay --json``
(``summary``) and in the CI job summary (``ci/gitspace_ci.py`` prints these lines).

The counts, over the ``total`` commits of the range, oldest first:
- **checked**: the commits replay looked at and found as recorded, before it stopped: the ops
  it re-executed (each rebuilt its recorded files), the commits it applied as recorded (outside
  edits, shell commands, merges, plain commits: the reasons are named) and, with scripts off,
  the script ops it did not verify;
- at a divergence, the commit that differs is the next one (``checked + 1`` of ``total``), and
  the commits after it are **not checked**;
- a match says how many ops were re-executed; one that re-executed none says so instead of
  claiming a rebuild.

Invariant: built from ``Report.as_json()`` alone (every value it reads is there), so what the
JSON says and what the sentences say cannot disagree.
"""

from __future__ import annotations

from typing import Any


def sentences(data: dict[str, Any]) -> list[str]:
    """The summary of the replay ``data`` describes (``Report.as_json()``), one line each; the
    last is the verdict, starting with its word (``match``, ``diverged``, ``stopped``,
    ``created``, ``nothing re-executed``)."""
    total, checked = data["total"], data["checked"]
    base, tip, onto = data.get("base"), data["tip"], data.get("onto")
    span = f"{base[:12]}..{tip[:12]}" if base else f"the root commit..{tip[:12]}"
    lines = [f"Replayed {span}" + (f" onto {onto[:12]}" if onto else "")
             + f": {_count(total, 'commit')}."]
    why = ", ".join(f"{n} {k}" for k, n in sorted(data.get("recorded_why", {}).items()))
    parts = [f"{data['reexecuted']} re-executed",
             f"{data['as_recorded']} applied as recorded" + (f" ({why})" if why else "")]
    if data.get("unverified"):
        parts.append(f"{data['unverified']} script op(s) not verified (scripts disabled)")
    lines.append(f"Checked {checked} of them: " + ", ".join(parts) + ".")
    rest = total - checked - 1
    after = (f"; the {_count(rest, 'commit')} after it were not checked" if rest > 0 else
             "; it is the last one")
    if data.get("divergence") and onto:
        lines.append(f"stopped: commit {checked + 1} of {total} no longer applies on "
                     f"{onto[:12]}{after}. No branch was made; nothing was changed.")
    elif data.get("divergence"):
        lines.append(f"diverged: commit {checked + 1} of {total} differs from what was recorded "
                     f"(below){after}.")
    elif data.get("empty"):
        lines.append("nothing re-executed: "
                     + str(data["empty"]).removeprefix("it re-executed no op: "))
    elif onto:
        lines.append(f"created branch {data.get('branch')} at {str(data.get('created'))[:12]}: "
                     "every op applied on the new base.")
    elif data["reexecuted"]:
        lines.append(f"match: each of the {_count(data['reexecuted'], 'op')} re-executed "
                     "rebuilt its recorded files.")
    else:
        lines.append("match, with no op re-executed: nothing was rebuilt to compare "
                     "(--allow-empty).")
    return lines


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")
