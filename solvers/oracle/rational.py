"""Exact linear programs over the rationals, for the oracle's point search.

The programs are tiny (tens of columns), so a dense bounded-variable simplex in
:class:`~fractions.Fraction` arithmetic with Bland's rule, and depth-first branch and bound for the
integer columns, answer them exactly: no tolerance anywhere, so a program is infeasible exactly
when no real point meets it, at any magnitude (1e-45 and 3e38 alike). The oracle shares no solver
with the engines it checks.
"""

from __future__ import annotations

import heapq
import itertools
import math
from dataclasses import dataclass, field
from fractions import Fraction

#: Branch-and-bound nodes before the oracle gives up on one program.
MAX_NODES = 2_000
#: Simplex pivots before a program is declared broken (Bland's rule never cycles; a guard).
_MAX_PIVOTS = 100_000


class ProgramError(RuntimeError):
    """An exact program the oracle could not finish (too many branch-and-bound nodes)."""


@dataclass
class Program:
    """Columns with finite bounds, integrality and costs; rows ``lower <= a x <= upper`` (either
    end None when absent). :meth:`solve` minimises the cost."""

    lo: list[Fraction] = field(default_factory=list)
    hi: list[Fraction] = field(default_factory=list)
    integer: list[bool] = field(default_factory=list)
    cost: list[Fraction] = field(default_factory=list)
    rows: list[tuple[dict[int, Fraction], Fraction | None, Fraction | None]] = field(
        default_factory=list
    )

    def column(self, lo, hi, integer: bool = False, cost=0) -> int:
        """A new column with finite bounds ``lo <= x <= hi``; returns its index."""
        self.lo.append(Fraction(lo))
        self.hi.append(Fraction(hi))
        self.integer.append(integer)
        self.cost.append(Fraction(cost))
        return len(self.lo) - 1

    def row(self, lower, upper, coefs: dict[int, float | Fraction]) -> None:
        """``lower <= sum(coef * x) <= upper``; None (or an infinity) for an absent end."""
        self.rows.append(
            ({j: Fraction(a) for j, a in coefs.items() if a}, _end(lower), _end(upper))
        )

    def solve(self) -> list[Fraction] | None:
        """A point minimising the cost (integer columns integral), or None when none exists.

        Best-first branch and bound: the open node with the lowest relaxation goes next (the
        deepest among equal ones), so the first integral relaxation is an optimum. Depth-first
        search could walk a staircase forever: with integer columns near 1e30, each "up" branch
        left another column fractional at a slightly higher cost, never integral (pinned in
        tests/solvers/test_oracle.py). Raises :class:`ProgramError` after :data:`MAX_NODES`
        relaxations.
        """
        heap: list[tuple[Fraction, int, int, list[Fraction], list[Fraction], list[Fraction]]] = []
        order = itertools.count()
        nodes = 0

        def relax(lo: list[Fraction], hi: list[Fraction], depth: int) -> None:
            nonlocal nodes
            nodes += 1
            if nodes > MAX_NODES:
                raise ProgramError(
                    f"the oracle's branch and bound gave up after {MAX_NODES} nodes on a "
                    f"{len(lo)}-column program"
                )
            x = _simplex(lo, hi, self.cost, self.rows)
            if x is not None:
                value = sum((c * v for c, v in zip(self.cost, x, strict=True)), Fraction(0))
                heapq.heappush(heap, (value, -depth, next(order), lo, hi, x))

        relax(list(self.lo), list(self.hi), 0)
        while heap:
            _, depth, _, lo, hi, x = heapq.heappop(heap)
            split = next(
                (j for j, v in enumerate(x) if self.integer[j] and v.denominator != 1), None
            )
            if split is None:
                return x
            down = list(hi)
            down[split] = Fraction(math.floor(x[split]))
            up = list(lo)
            up[split] = Fraction(math.ceil(x[split]))
            relax(lo, down, 1 - depth)
            relax(up, hi, 1 - depth)
        return None


def _end(value) -> Fraction | None:
    if value is None or (isinstance(value, float) and math.isinf(value)):
        return None
    return Fraction(value)


def _simplex(lo, hi, cost, rows) -> list[Fraction] | None:
    """The bounded-variable primal simplex, exact; None when the rows and bounds conflict.

    Row ``i`` becomes ``a x - s_i = 0`` with a slack ``lower <= s_i <= upper``. Structural
    columns start at their lower bound; a row whose slack would leave its range gets an
    artificial column, and phase one drives the artificials to 0.
    """
    n, m = len(lo), len(rows)
    if any(a > b for a, b in zip(lo, hi, strict=True)):
        return None
    low: list[Fraction | None] = list(lo)
    high: list[Fraction | None] = list(hi)
    x: list[Fraction] = list(lo)
    table: list[list[Fraction]] = []
    basis: list[int] = []
    artificials = []
    zero = Fraction(0)
    for coefs, lower, upper in rows:
        if lower is not None and upper is not None and lower > upper:
            return None
        activity = sum((a * x[j] for j, a in coefs.items()), zero)
        line = [zero] * n
        for j, a in coefs.items():
            line[j] = a
        table.append(line)
        low.append(lower)
        high.append(upper)
        if (lower is None or lower <= activity) and (upper is None or activity <= upper):
            x.append(activity)  # the slack is basic and within its range
            basis.append(len(x) - 1)
            continue
        target = lower if lower is not None and activity < lower else upper
        x.append(target)  # the slack sits at the end it missed; an artificial covers the gap
        artificials.append(len(table) - 1)
        basis.append(-1)
    # Columns: structural 0..n-1, slacks n..n+m-1, artificials after.
    width = n + m + len(artificials)
    for i, line in enumerate(table):
        line.extend([zero] * (width - n))
        line[n + i] = Fraction(-1)
    for k, i in enumerate(artificials):
        col = n + m + k
        gap = x[n + i] - sum((a * x[j] for j, a in enumerate(table[i][:n])), zero)
        sign = Fraction(1) if gap > 0 else Fraction(-1)
        table[i][col] = sign  # a x - s + sign * art = 0, art = |gap| >= 0
        x.append(abs(gap))
        low.append(zero)
        high.append(None)
        basis[i] = col
    for i, b in enumerate(basis):  # divide each row by its basic column's coefficient
        pivot = table[i][b]
        if pivot != 1:
            table[i] = [v / pivot for v in table[i]]
    if artificials:
        phase_one = [zero] * (n + m) + [Fraction(1)] * len(artificials)
        _iterate(table, basis, x, low, high, phase_one)
        if any(x[n + m + k] != 0 for k in range(len(artificials))):
            return None
        for k in range(len(artificials)):
            high[n + m + k] = zero
    _iterate(table, basis, x, low, high, list(cost) + [zero] * (width - n))
    return x[:n]


def _iterate(table, basis, x, low, high, cost) -> None:
    """Pivot until no column improves ``cost``; Bland's rule (lowest index) throughout."""
    width = len(x)
    for _ in range(_MAX_PIVOTS):
        in_basis = set(basis)
        entering, direction = -1, 0
        for j in range(width):
            if j in in_basis:
                continue
            reduced = cost[j] - sum(
                (cost[b] * table[i][j] for i, b in enumerate(basis) if table[i][j]), Fraction(0)
            )
            if reduced < 0 and (high[j] is None or x[j] < high[j]):
                entering, direction = j, 1
                break
            if reduced > 0 and (low[j] is None or x[j] > low[j]):
                entering, direction = j, -1
                break
        if entering < 0:
            return
        j = entering
        # Moving x_j by direction * t moves basic i by -table[i][j] * direction * t.
        limit = None if low[j] is None or high[j] is None else high[j] - low[j]
        leaving = -1
        for i, b in enumerate(basis):
            rate = -table[i][j] * direction
            if rate > 0 and high[b] is not None:
                room = (high[b] - x[b]) / rate
            elif rate < 0 and low[b] is not None:
                room = (low[b] - x[b]) / rate
            else:
                continue
            if (
                limit is None
                or room < limit
                or (room == limit and leaving >= 0 and b < basis[leaving])
            ):
                limit, leaving = room, i
        if limit is None:
            raise ProgramError("an exact program is unbounded; its columns must be bounded")
        for i, b in enumerate(basis):
            if table[i][j]:
                x[b] -= table[i][j] * direction * limit
        x[j] += direction * limit
        if leaving < 0:
            continue  # x_j moved to its other bound
        b = basis[leaving]
        x[b] = high[b] if -table[leaving][j] * direction > 0 else low[b]  # exactly on its end
        row = table[leaving]
        pivot = row[j]
        row = [v / pivot for v in row]
        table[leaving] = row
        for i in range(len(table)):
            if i != leaving and table[i][j]:
                factor = table[i][j]
                table[i] = [u - factor * v for u, v in zip(table[i], row, strict=True)]
        basis[leaving] = j
    raise ProgramError("an exact program did not finish within the pivot guard")
