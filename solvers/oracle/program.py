"""Distances and linear constraints that do not separate: an exact program, then the float32 grid.

What :func:`~veritas_dsl.solvers.oracle.relations.closest` cannot settle (a variable measured
against two partners, or a linear constraint) becomes a small linear program over the rationals
(:mod:`~veritas_dsl.solvers.oracle.rational`), integer columns for int and bool features. Its
exact solution is then moved onto the float32 grid: a coordinate that is already a float32 stays,
any other tries the float32 on either side, and every resulting point is checked exactly. When
none passes (a region thinner than the grid), the distances and inequalities are tightened a little
and the program solved again.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np

from veritas_dsl.float32 import as_float32, ceil32_exact, floor32_exact
from veritas_dsl.ir.evaluate import exact_distance, holds, reference_point
from veritas_dsl.ir.query import Ball, Linear, MinimizeDistance, Query
from veritas_dsl.solvers.base import UnsupportedQuery
from veritas_dsl.solvers.oracle.boxes import Region, Space
from veritas_dsl.solvers.oracle.rational import Program
from veritas_dsl.solvers.oracle.relations import default, is_box, pairs

#: The largest float32; no input lies beyond it.
FLT_MAX = float(np.finfo(np.float32).max)
#: Rounds of tightening when no float32 point meets the rounded constraints.
_REPAIRS = 4
#: Coordinates tried on both sides of the grid at most; beyond, each is rounded to the nearest.
_MAX_SIDES = 8


class GridError(RuntimeError):
    """The exact program has a solution, but no float32 point near it meets the constraints."""


def solve(query: Query, space: Space, region: Region, constraints, goal) -> tuple | None:
    """A float32 point (values of every variable of the space) meeting ``constraints`` (balls and
    linear constraints) in the region, the closest to the goal's partner among those tried, and a
    lower bound on the goal over the region (an exact rational); None when the region has none.

    Raises :class:`GridError` when the program's solution does not move onto the grid, and
    :class:`~veritas_dsl.solvers.base.UnsupportedQuery` for an ``l2`` distance: squared gaps
    make a quadratic program, which this linear one is not.
    """
    l2 = [c for c in (*constraints, goal) if isinstance(c, Ball | MinimizeDistance)]
    if any(c.norm == "l2" for c in l2):
        raise UnsupportedQuery(
            f"query {query.name}: the brute-force oracle measures an l2 distance only when each "
            "feature is measured against one partner and no linear constraint is left; this "
            "one would need a quadratic program"
        )
    first = None
    for attempt in range(_REPAIRS):
        squeeze = Fraction(0) if attempt == 0 else Fraction(1, 2 ** (26 - 6 * attempt))
        program = _build(query, space, region, constraints, goal, squeeze)
        solution = _settle(program, [default(*region.bounds(v)) for v in _columns(space, region)])
        if solution is None:
            if attempt == 0:
                return None  # exact: no real point, so no float32 point either
            break
        if first is None:
            first = _distance_bound(query, space, region, goal, solution)
        values = _onto_grid(query, space, region, constraints, goal, solution)
        if values is not None:
            return values, first
    raise GridError(
        "the oracle's exact program has a solution, but no float32 point near it meets the "
        "constraints; the region is thinner than the float32 grid"
    )


def _settle(program: Program, anchors: list[float]) -> list[Fraction] | None:
    """An optimal solution of ``program`` that is, among the optimal ones, the closest (L1) to
    ``anchors`` (values of its first columns, float32): an optimum is rarely unique, and one at
    plain values (0, box ends) lands on the float32 grid where one at 1.7e38 does not."""
    solution = program.solve()
    if solution is None:
        return None
    costs = {j: c for j, c in enumerate(program.cost) if c}
    if costs:  # keep the optimum: the cost may not exceed its optimal value
        program.row(None, sum((c * solution[j] for j, c in costs.items()), Fraction(0)), costs)
        program.cost = [Fraction(0)] * len(program.cost)
    for j, anchor in enumerate(anchors):
        d = program.column(0, 2 * Fraction(FLT_MAX), cost=1)
        program.row(anchor, None, {d: 1, j: 1})  # d >= anchor - x
        program.row(-anchor, None, {d: 1, j: -1})  # d >= x - anchor
    return program.solve()[: len(solution)]


def _columns(space: Space, region: Region) -> dict[int, int]:
    """Representative variable -> column; the columns come first, in variable order."""
    return {v: k for k, v in enumerate(sorted({region.find(v) for v in range(space.n_vars)}))}


def _build(query, space, region, constraints, goal, squeeze: Fraction) -> Program:
    """The program; distances and inequalities tightened by ``squeeze`` times their scale."""
    program = Program()
    column = _columns(space, region)
    for v in column:
        lo, hi = region.bounds(v)
        program.column(max(lo, -FLT_MAX), min(hi, FLT_MAX), bool(region.integral[v]))

    def tighten(bound: float) -> Fraction:
        return Fraction(bound) - squeeze * max(Fraction(1), abs(Fraction(bound)))

    def gaps(instance, reference, weights, cost=False) -> list[tuple[int, Fraction]]:
        """Columns ``d >= |x - partner|``, one per measured pair, with the pair's weight (its
        cost, with ``cost``)."""
        found = []
        for v, w, c, weight in pairs(query, space, region, instance, reference, weights):
            d = program.column(0, 2 * Fraction(FLT_MAX), cost=Fraction(weight) if cost else 0)
            x = {column[v]: 1}
            if w >= 0:
                x[column[w]] = -1
            shift = 0 if w >= 0 else Fraction(c)
            program.row(shift, None, {d: 1, **x})  # d + x - partner >= 0
            program.row(-shift, None, {d: 1, **{k: -a for k, a in x.items()}})
            found.append((d, Fraction(weight)))
        return found

    for c in constraints:
        if isinstance(c, Ball) and not is_box(c):
            if c.norm == "linf":  # between instances (around a row it is a box)
                radius = tighten(c.radius)
                for v, w, _, weight in pairs(query, space, region, c.instance, c.center, c.weights):
                    side = radius / Fraction(weight)
                    program.row(-side, side, {column[v]: 1, column[w]: -1})
            else:
                program.row(None, tighten(c.radius), dict(gaps(c.instance, c.center, c.weights)))
        elif isinstance(c, Linear):
            coefs: dict[int, Fraction] = {}
            for term in c.terms:
                k = column[region.find(space.of(query, term.instance, term.feature))]
                coefs[k] = coefs.get(k, Fraction(0)) + Fraction(term.coef)
            if c.op == "<=":
                program.row(None, tighten(c.rhs), coefs)
            elif c.op == ">=":
                program.row(-tighten(-c.rhs), None, coefs)
            else:
                program.row(c.rhs, c.rhs, coefs)
    if isinstance(goal, MinimizeDistance):
        if goal.norm == "l1":
            gaps(goal.instance, goal.center, goal.weights, cost=True)
        else:
            t = program.column(0, 2 * Fraction(FLT_MAX), cost=1)
            for d, weight in gaps(goal.instance, goal.center, goal.weights):
                program.row(0, None, {t: 1, d: -weight})
    return program


def _distance_bound(query, space, region, goal, solution) -> Fraction | None:
    """The goal's exact value at the program's (real) optimum: no float32 point does better."""
    if not isinstance(goal, MinimizeDistance):
        return None
    column = _columns(space, region)
    gaps = []
    for v, w, c, weight in pairs(query, space, region, goal.instance, goal.center, goal.weights):
        other = solution[column[w]] if w >= 0 else Fraction(c)
        gaps.append(abs(solution[column[v]] - other) * Fraction(weight))
    if goal.norm == "linf":
        return max(gaps, default=Fraction(0))
    return sum(gaps, Fraction(0))


def _onto_grid(query, space, region, constraints, goal, solution) -> np.ndarray | None:
    """The best float32 point among those next to the exact solution that meets the constraints."""
    column = _columns(space, region)
    reps = list(column)
    sides = []
    for v in reps:
        exact = solution[column[v]]
        near = as_float32(float(exact))
        if Fraction(near) == exact:
            sides.append((near,))
        else:
            sides.append((floor32_exact(exact), ceil32_exact(exact)))
    loose = [k for k, s in enumerate(sides) if len(s) > 1]
    for k in loose[_MAX_SIDES:]:  # too many to try both: the nearer side only
        exact = solution[column[reps[k]]]
        below, above = sides[k]
        sides[k] = (below,) if exact - Fraction(below) <= Fraction(above) - exact else (above,)
    best: tuple[float, np.ndarray] | None = None
    for choice in itertools.product(*sides):
        value_of = dict(zip(reps, choice, strict=True))
        values = np.array([value_of[region.find(v)] for v in range(space.n_vars)])
        inputs = {
            name: values[space.var[i]].astype(np.float32) for i, name in enumerate(query.instances)
        }
        if not all(holds(c, inputs, {}) for c in constraints):
            continue
        if not isinstance(goal, MinimizeDistance):
            return values
        score = _goal_value(goal, inputs)
        if best is None or score < best[0]:
            best = (score, values)
    return None if best is None else best[1]


def _goal_value(goal: MinimizeDistance, inputs) -> Fraction:
    center = reference_point(goal.center, inputs)
    return exact_distance(goal.norm, inputs[goal.instance], center, goal.weights)


def lower_bound(bound: Fraction | None) -> float | None:
    """The exact bound rounded down to a float64, so that it stays a bound."""
    if bound is None:
        return None
    value = float(bound)
    return value if Fraction(value) <= bound else math.nextafter(value, -math.inf)
