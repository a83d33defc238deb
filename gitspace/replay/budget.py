"""What re-doing another harness's op may cost: a bound set by what the op itself recorded.

Invariant: replay's re-execution of a harness's file edit (``harness_ops``, ``edits``,
``apply_patch``) does at most ``FACTOR`` times the work of reading what the op recorded once, plus
``FLOOR``: the bytes of its arguments and of the files it names, before and after. Work is counted
in bytes read, copied, searched or hashed, and in lines compared; no text is built larger than
the bound either. An op whose re-doing would cost more is reported as a divergence (it cannot be
checked), never a MemoryError or a replay that runs for minutes: a forged op's cost is what
replay allows, not what its forger chooses.

A real harness call costs a few times its files: one pass to find an edit, one to apply it, one
hash to recover an omitted string. ``FACTOR`` leaves room for many times that.
"""

from __future__ import annotations

FACTOR = 16
FLOOR = 4 << 20  # a small op may still do a little work past its size


class OverBudget(Exception):  # noqa: N818 (a reason, shown in the divergence)
    """Re-doing the op would cost more than its budget (the message says how much it had)."""


class Budget:
    """Work left for re-doing one op (see the module docstring)."""

    def __init__(self, recorded: int) -> None:
        self.recorded = recorded
        self.limit = FACTOR * recorded + FLOOR
        self.left = self.limit

    def spend(self, units: int) -> None:
        """Count ``units`` of work; OverBudget once the op has spent more than its limit."""
        self.left -= units
        if self.left < 0:
            raise OverBudget(self._said())

    def holds(self, size: int) -> None:
        """A text of ``size`` bytes (or characters) may be built; OverBudget if it is past the
        limit (nothing is built that large, whatever it would be for)."""
        if size > self.limit:
            raise OverBudget(self._said())

    def _said(self) -> str:
        return (f"re-doing it would take more than {self.limit:,} units of work, {FACTOR} times "
                f"the {self.recorded:,} bytes of input and files it recorded (and {FLOOR:,} "
                "more), which no call of the harness needs")
