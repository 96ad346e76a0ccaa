"""A mixed-integer linear program as solver-neutral sparse arrays, and a builder for it.

The formulation (:mod:`~veritas_dsl.solvers.milp.formulation`) writes a :class:`Program`; each
driver (:mod:`~veritas_dsl.solvers.milp.highs`, :mod:`~veritas_dsl.solvers.milp.gurobi`) reads
one. A program always minimises; a maximisation is written with negated costs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np


@dataclass(frozen=True)
class Program:
    """``minimise cost @ x + offset`` subject to ``row_lower <= A x <= row_upper`` and column
    bounds, with ``x[j]`` integral where ``integer[j]``.

    Attributes
    ----------
    col_lower, col_upper, cost : float64 arrays, shape (n_cols,)
        Column bounds (finite for every column the formulation makes) and objective costs.
    integer : bool array, shape (n_cols,)
        Integral columns.
    offset : float
        Constant added to the objective.
    row_start : int64 array, shape (n_rows + 1,)
        CSR row pointers into ``row_index`` and ``row_value``.
    row_index : int32 array, shape (n_nonzeros,)
        Column of each nonzero.
    row_value : float64 array, shape (n_nonzeros,)
        Coefficient of each nonzero.
    row_lower, row_upper : float64 arrays, shape (n_rows,)
        Row bounds; ``-inf`` / ``inf`` for a one-sided row.
    """

    col_lower: np.ndarray
    col_upper: np.ndarray
    cost: np.ndarray
    integer: np.ndarray
    offset: float
    row_start: np.ndarray
    row_index: np.ndarray
    row_value: np.ndarray
    row_lower: np.ndarray
    row_upper: np.ndarray

    @property
    def n_cols(self) -> int:
        return len(self.col_lower)

    @property
    def n_rows(self) -> int:
        return len(self.row_lower)

    @property
    def n_nonzeros(self) -> int:
        return len(self.row_index)

    def with_rows(self, rows: list[tuple[dict[int, float], float, float]]) -> Program:
        """A copy with ``rows`` (``(coefficients, lower, upper)``) appended."""
        if not rows:
            return self
        starts, index, value = [], [], []
        count = int(self.row_start[-1])
        for coefs, _, _ in rows:
            index += list(coefs)
            value += list(coefs.values())
            count += len(coefs)
            starts.append(count)
        return replace(
            self,
            row_start=np.concatenate([self.row_start, np.array(starts, dtype=np.int64)]),
            row_index=np.concatenate([self.row_index, np.array(index, dtype=np.int32)]),
            row_value=np.concatenate([self.row_value, np.array(value, dtype=np.float64)]),
            row_lower=np.concatenate([self.row_lower, [lower for _, lower, _ in rows]]),
            row_upper=np.concatenate([self.row_upper, [upper for _, _, upper in rows]]),
        )

    def rows(self):
        """Yield ``(columns, coefficients, lower, upper)`` per row."""
        for r in range(self.n_rows):
            a, b = self.row_start[r], self.row_start[r + 1]
            yield self.row_index[a:b], self.row_value[a:b], self.row_lower[r], self.row_upper[r]


class Affine:
    """``const + sum(coef * column)``: the value of a predicate, a leaf sum or an indicator.

    Constants (a predicate fixed by the bounds, an always-active constraint) and columns mix
    freely; the builder folds constants into row bounds.
    """

    __slots__ = ("const", "terms")

    def __init__(self, terms: dict[int, float] | None = None, const: float = 0.0) -> None:
        self.terms = dict(terms or {})
        self.const = float(const)

    @classmethod
    def column(cls, col: int) -> Affine:
        return cls({col: 1.0})

    def __add__(self, other: Affine | float) -> Affine:
        if not isinstance(other, Affine):
            return Affine(self.terms, self.const + other)
        terms = dict(self.terms)
        for col, coef in other.terms.items():
            terms[col] = terms.get(col, 0.0) + coef
        return Affine(terms, self.const + other.const)

    __radd__ = __add__

    def __mul__(self, factor: float) -> Affine:
        return Affine({col: coef * factor for col, coef in self.terms.items()}, self.const * factor)

    __rmul__ = __mul__

    def __neg__(self) -> Affine:
        return self * -1.0

    def __sub__(self, other: Affine | float) -> Affine:
        return self + -other

    def __rsub__(self, other: float) -> Affine:
        return -self + other

    @property
    def is_constant(self) -> bool:
        return not any(self.terms.values())

    def value(self, x: np.ndarray) -> float:
        return self.const + sum(coef * float(x[col]) for col, coef in self.terms.items())

    def __repr__(self) -> str:
        return f"Affine({self.terms}, {self.const})"


ONE = Affine(const=1.0)
ZERO = Affine()


def power_of_two(value: float) -> float:
    """The largest power of two not above ``value`` (1 for 0 or an infinity): a unit to divide
    a row or an objective by, exactly."""
    if not 0.0 < value < math.inf:
        return 1.0
    return math.ldexp(1.0, math.frexp(value)[1] - 1)


class Infeasible(Exception):
    """A row that holds for no value of its columns: the whole program is infeasible."""


class ProgramBuilder:
    """Collects columns and rows, then freezes them into a :class:`Program`."""

    def __init__(self) -> None:
        self.col_lower: list[float] = []
        self.col_upper: list[float] = []
        self.cost: list[float] = []
        self.integer: list[bool] = []
        self.offset = 0.0
        self._starts = [0]
        self._index: list[int] = []
        self._value: list[float] = []
        self._lower: list[float] = []
        self._upper: list[float] = []

    @property
    def n_cols(self) -> int:
        return len(self.col_lower)

    def column(self, lower: float, upper: float, integer: bool = False) -> int:
        """A new column; bounds must be finite, so that every big-M derived from them is."""
        if not (math.isfinite(lower) and math.isfinite(upper)):
            raise ValueError(f"column bounds must be finite, got [{lower}, {upper}]")
        self.col_lower.append(float(lower))
        self.col_upper.append(float(upper))
        self.cost.append(0.0)
        self.integer.append(integer)
        return len(self.col_lower) - 1

    def binary(self) -> int:
        return self.column(0.0, 1.0, integer=True)

    def bounds(self, expr: Affine) -> tuple[float, float]:
        """Smallest and largest value of ``expr`` over the column bounds."""
        lo = hi = expr.const
        for col, coef in expr.terms.items():
            a, b = coef * self.col_lower[col], coef * self.col_upper[col]
            lo += min(a, b)
            hi += max(a, b)
        return lo, hi

    def row(self, expr: Affine, lower: float = -math.inf, upper: float = math.inf) -> None:
        """``lower <= expr <= upper``; raises :class:`Infeasible` if ``expr`` is a constant
        outside the range."""
        terms = {col: coef for col, coef in expr.terms.items() if coef != 0.0}
        lower, upper = lower - expr.const, upper - expr.const
        if not terms:
            if lower > 0.0 or upper < 0.0:
                raise Infeasible
            return
        if lower == -math.inf and upper == math.inf:
            return
        self._index += list(terms)
        self._value += list(terms.values())
        self._starts.append(len(self._index))
        self._lower.append(lower)
        self._upper.append(upper)

    def at_most(self, expr: Affine, upper: float, active: Affine = ONE) -> None:
        """``expr <= upper`` when ``active`` (a 0/1 expression) is 1; a big-M row from the
        column bounds otherwise."""
        if active.is_constant:
            if active.const >= 0.5:
                self.row(expr, upper=upper)
            return
        _, top = self.bounds(expr)
        if top <= upper:
            return
        # expr <= upper + (top - upper) * (1 - active)
        self.row(expr + (top - upper) * active, upper=top)

    def at_least(self, expr: Affine, lower: float, active: Affine = ONE) -> None:
        """``expr >= lower`` when ``active`` is 1."""
        self.at_most(-expr, -lower, active)

    def objective(self, expr: Affine, sense: float = 1.0) -> None:
        """Minimise ``sense * expr`` (``sense = -1`` maximises)."""
        for col, coef in expr.terms.items():
            self.cost[col] += sense * coef
        self.offset += sense * expr.const

    def freeze(self) -> Program:
        return Program(
            col_lower=np.array(self.col_lower, dtype=np.float64),
            col_upper=np.array(self.col_upper, dtype=np.float64),
            cost=np.array(self.cost, dtype=np.float64),
            integer=np.array(self.integer, dtype=bool),
            offset=self.offset,
            row_start=np.array(self._starts, dtype=np.int64),
            row_index=np.array(self._index, dtype=np.int32),
            row_value=np.array(self._value, dtype=np.float64),
            row_lower=np.array(self._lower, dtype=np.float64),
            row_upper=np.array(self._upper, dtype=np.float64),
        )
