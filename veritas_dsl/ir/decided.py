"""When bounds settle a check: the one rule the judge of ``expect`` and an engine's early stop
share.

An optimisation's objective has a true optimum ``M``. At any moment of a solve the engine knows
valid bounds ``lower <= M <= upper``, and whatever bounds it reports later lie between them: its
lower bound only rises, and stays at most ``M``; its upper bound only falls, and stays at least
``M``. So ``bound op c``, for either reported bound and a comparison ``op`` (``<``, ``<=``, ``>``,
``>=``, each monotone), is settled now when it comes out the same at both ends of ``[lower,
upper]``: more work cannot change it. ``expect upper <= 1000`` holds once ``upper <= 1000``, and
fails once ``lower > 1000`` (a witness shows the maximum above it); ``expect upper >= c`` is not
settled by ``upper >= c`` alone, since the upper bound may still fall below ``c``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from veritas_dsl.ir.logic import compare


def settled(op: str, value: float, lower: float, upper: float) -> bool | None:
    """Whether ``bound op value`` holds of every bound between ``lower`` and ``upper`` (True),
    of none (False), or is not settled yet (None)."""
    at_lower, at_upper = compare(lower, op, value), compare(upper, op, value)
    return at_lower if at_lower == at_upper else None


@dataclass(frozen=True)
class StopRule:
    """When an optimisation may stop before its optimum is proven: every ``(op, value)`` of
    ``settle`` is settled (:func:`settled`; none given, never), or the bounds are within the gap
    asked: ``upper - lower`` at most ``gap_abs``, or at most ``gap_rel`` of the larger of
    ``|lower|`` and ``|upper|``. Plain data: it travels in the engine's limits, to worker
    processes too."""

    settle: tuple[tuple[str, float], ...] = ()
    gap_abs: float | None = None
    gap_rel: float | None = None

    @classmethod
    def of(
        cls,
        checks: Sequence[tuple[str, float]],
        gap_abs: float | None = None,
        gap_rel: float | None = None,
    ) -> StopRule | None:
        """The rule that stops once ``checks`` are settled or the gap is reached; None when it
        would never stop anything."""
        if not checks and gap_abs is None and gap_rel is None:
            return None
        return cls(tuple(checks), gap_abs, gap_rel)

    def reached(self, lower: float | None, upper: float | None) -> bool:
        """Whether bounds ``lower``/``upper`` (in the original objective's sense) settle every
        check, or are within the gap."""
        return self.all_settled(lower, upper) or self.within_gap(lower, upper)

    def all_settled(self, lower: float | None, upper: float | None) -> bool:
        if not self.settle or lower is None or upper is None or lower > upper:
            return False
        return all(settled(op, value, lower, upper) is not None for op, value in self.settle)

    def within_gap(self, lower: float | None, upper: float | None) -> bool:
        if lower is None or upper is None or not lower <= upper:
            return False
        width = upper - lower
        if not math.isfinite(width):  # a side unknown: within no gap (inf <= 0.5 * inf)
            return False
        if self.gap_abs is not None and width <= self.gap_abs:
            return True
        return self.gap_rel is not None and width <= self.gap_rel * max(abs(lower), abs(upper))
