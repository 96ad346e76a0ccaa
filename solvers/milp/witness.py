"""From a MILP solution to a float32 witness that satisfies the query exactly, or to cuts.

The solution's predicates pick a segment per variable (float32 ends, or integers). Variables
placed in closed form take the value of their segment closest to their partner: a row value
(a distance centre or a change reference), the nearest point of a partner's segment, or 0.
Variables with a value column take the solver's value, snapped onto the float32 grid: clamped
into the segment, moved onto an end or a row value within 1e-9, otherwise rounded toward the
first centre or partner it is measured against. That rounding can lengthen a distance, so a
distance goal over such variables is optimal only when the witness meets the solver's bound.

The witness is then checked exactly with :mod:`veritas_dsl.ir.evaluate` (outputs in float64 as
the semantics add them, distances and linear constraints in rationals). What fails becomes a cut:

* an output constraint: the leaf combination reached cannot satisfy it, whatever the inputs, so
  that combination is cut off (under the indicator of the alternative it belongs to);
* an input constraint (rounding broke a linear constraint or a distance): the pattern's value
  columns are re-solved as a small program with every linear constraint and radius tightened,
  then snapped again. If no tightening gives a float32 point, the query stays undecided: failing
  to find a point does not prove the pattern has none, so it is never cut off.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from veritas_dsl.float32 import as_float32, ball_interval, ceil32, floor32, nearest
from veritas_dsl.ir.evaluate import (
    distance,
    domain_violations,
    goal_value,
    holds,
    model_outputs,
    reference_point,
)
from veritas_dsl.ir.query import (
    Ball,
    Linear,
    MinimizeDistance,
    OutputConstraint,
    Query,
    Row,
    Tie,
    goal_terms,
    weight_of,
)
from veritas_dsl.result import Termination, Witness
from veritas_dsl.solvers.milp import highs
from veritas_dsl.solvers.milp.formulation import Formulation
from veritas_dsl.solvers.milp.program import Affine, Infeasible, ProgramBuilder

#: Relative tightenings of a broken linear constraint or radius, tried in turn.
SLACKS = (0.0, 1e-9, 1e-7, 1e-5)
#: A value this close (relative) to a segment end or a row value is moved onto it.
SNAP = 1e-9

Row_ = tuple[dict[int, float], float, float]


class WitnessBug(RuntimeError):
    """A witness left the domain or reached a leaf the formulation pruned: a bug, never a result."""


@dataclass
class Cuts:
    """Rows that remove a solution which could not be made a witness, and why.

    ``undecided``: no float32 point was found in the solution's 0/1 pattern, which does not prove
    that it has none, so nothing may be cut and the query stays undecided.
    """

    rows: list[Row_]
    reason: str
    undecided: bool = False


def read(query: Query, form: Formulation, solution: np.ndarray) -> Witness | Cuts:
    """The witness of ``solution``, or the cuts that remove it."""
    segments = _segments(form, solution)
    if segments is None:
        return Cuts([pattern_cut(form, solution)], "predicates out of order")
    raw = {v: float(solution[var.x]) for v, var in enumerate(form.vars) if var.x is not None}
    values, inputs, margins = _attempt(query, form, segments, raw)
    if _holds(form, inputs, margins):
        return _witness(query, inputs, margins)

    rows = _leaf_cuts(query, form, solution, inputs, margins)
    if rows:
        return Cuts(rows, "an output constraint fails on the leaves reached")
    rows = _ball_cuts(query, form, solution, inputs)
    if rows:
        return Cuts(rows, "a ball around a row fails at the segments' closest points")
    if form.complex:
        for slack in SLACKS:
            polished = _polish(query, form, segments, values, solution, slack)
            if polished is None:
                continue
            _, inputs, margins = _attempt(query, form, segments, polished)
            if _holds(form, inputs, margins):
                return _witness(query, inputs, margins)
    return Cuts([], "no float32 point found in a pattern the solver chose", undecided=True)


def _attempt(query: Query, form: Formulation, segments, raw: dict[int, float]):
    """Values placed in ``segments`` (value columns from ``raw``), the inputs they make, and
    the model outputs there."""
    values = _place(form, segments)
    _snap(form, segments, values, raw)
    inputs = _inputs(query, form, values)
    return values, inputs, _check_domain_and_outputs(query, inputs)


def pattern_cut(form: Formulation, solution: np.ndarray) -> Row_:
    """A row that every 0/1 pattern but this one satisfies."""
    ones = [b for b in form.binaries if solution[b] > 0.5]
    zeros = [b for b in form.binaries if solution[b] <= 0.5]
    coefs = dict.fromkeys(zeros, 1.0)
    coefs.update(dict.fromkeys(ones, -1.0))
    return coefs, 1.0 - len(ones), math.inf


# -- placing values ---------------------------------------------------------------------------


def _segments(form: Formulation, solution: np.ndarray) -> list[tuple[float, float]] | None:
    segments = []
    for var in form.vars:
        lo, hi = var.lo, var.hi
        for t, col in zip(var.cuts, var.cols, strict=True):
            if solution[col] > 0.5:
                hi = min(hi, var.below(t))
            else:
                lo = max(lo, t)
        if lo > hi:
            return None
        segments.append((lo, hi))
    return segments


def _place(form: Formulation, segments) -> np.ndarray:
    """Closed-form values of the variables without a value column."""
    values = np.zeros(len(form.vars))
    placed: set[int] = set()
    for v, var in enumerate(form.vars):
        if v in form.complex or v in placed:
            continue
        lo, hi = segments[v]
        rows = [value for kind, value in form.partners[v] if kind == "row"]
        others = [w for kind, w in form.partners[v] if kind == "var"]
        placed.add(v)
        if rows:
            values[v] = nearest(rows[0], lo, hi, var.integral)
        elif others:
            w = others[0]
            placed.add(w)
            values[v], values[w] = _nearest_pair(segments[v], segments[w], var.integral)
        else:
            values[v] = nearest(0.0, lo, hi, var.integral)
    return values


def _nearest_pair(first, second, integral: bool) -> tuple[float, float]:
    """Closest points of two segments (one shared value when they overlap)."""
    lo, hi = max(first[0], second[0]), min(first[1], second[1])
    if lo <= hi:
        value = nearest(0.0, lo, hi, integral)
        return value, value
    if first[1] < second[0]:
        return first[1], second[0]
    return first[0], second[1]


def _snap(form: Formulation, segments, values: np.ndarray, raw: dict[int, float]) -> None:
    """Values of the variables with a value column, from the solver's ``raw`` values."""
    for v in sorted(form.complex):
        var = form.vars[v]
        lo, hi = segments[v]
        s = min(max(raw[v], lo), hi)
        if var.integral:
            values[v] = nearest(s, lo, hi, True)
            continue
        rows = [value for kind, value in form.partners[v] if kind == "row"]
        others = [raw[w] for kind, w in form.partners[v] if kind == "var" and w in raw]
        targets = [t for t in (lo, hi, *rows) if lo <= t <= hi]
        close = [t for t in targets if abs(s - t) <= SNAP * max(1.0, abs(t))]
        if close:
            s = close[0]
        else:
            toward = rows[0] if rows else others[0] if others else None
            if toward is None:
                s = as_float32(s)
            elif s > toward:  # round toward what it is measured against
                s = floor32(s)
            else:
                s = ceil32(s)
        values[v] = min(max(s, lo), hi)
    for v in sorted(form.complex):
        for kind, w in form.partners[v]:
            if kind != "var":
                continue
            lo, hi = segments[w]
            same = abs(values[v] - values[w]) <= SNAP * max(1.0, abs(values[v]))
            if same and lo <= values[v] <= hi:
                values[w] = values[v]


def _inputs(query: Query, form: Formulation, values: np.ndarray) -> dict[str, np.ndarray]:
    return {
        name: values[form.var_of[i]].astype(np.float32) for i, name in enumerate(query.instances)
    }


# -- checking ---------------------------------------------------------------------------------


def _check_domain_and_outputs(query: Query, inputs):
    problems = domain_violations(query, inputs)
    if problems:
        raise WitnessBug(f"query {query.name}: MILP witness leaves the domain: {problems[0]}")
    return model_outputs(query, inputs)


def _holds(form: Formulation, inputs, margins) -> bool:
    return all(holds(c, inputs, margins) for c in form.constraints)


def _witness(query: Query, inputs, margins) -> Witness:
    goal = query.goal
    value = None
    if goal_terms(goal):
        value = goal_value(goal, margins)
    elif isinstance(goal, MinimizeDistance):
        center = reference_point(goal.center, inputs)
        value = distance(goal.norm, inputs[goal.instance], center, goal.weights)
    return Witness(inputs, value)


def _leaf_cuts(query: Query, form: Formulation, solution, inputs, margins) -> list[Row_]:
    rows = []
    for c, active in form.conditions:
        if not isinstance(c, OutputConstraint) or active.value(solution) < 0.5:
            continue
        if holds(c, inputs, margins):
            continue
        cols = []
        for model_name, instance in sorted({(a.model, a.instance) for a in c.term.atoms}):
            reached = query.models[model_name].leaves(inputs[instance][None, :])[0]
            for tree, node in enumerate(reached):
                try:
                    col = form.leaves[model_name, instance][tree].column(int(node))
                except KeyError:
                    raise WitnessBug(
                        f"query {query.name}: a witness reached leaf {node} of tree {tree} of "
                        f"{model_name}, which the formulation pruned as unreachable"
                    ) from None
                if col is not None:
                    cols.append(col)
        # sum(chosen leaves) + active <= len(chosen leaves): not all of them while active.
        # Trees of one shape share their leaf columns: each column counts once.
        cols = sorted(set(cols))
        expr = Affine(dict.fromkeys(cols, 1.0)) + active
        if not expr.terms:
            raise WitnessBug(f"query {query.name}: {c} fails on constants the program accepted")
        rows.append((expr.terms, -math.inf, len(cols) - expr.const))
    return rows


def _ball_cuts(query: Query, form: Formulation, solution, inputs) -> list[Row_]:
    """Cuts for balls around a row that fail although every variable of the ball sits at the
    point of its segment closest to the centre (placed in closed form, with the centre as its
    only partner). No point of those segments is closer, so the segments are cut off, under the
    ball's indicator. The program cannot see this itself: its distances are float64 sums, in
    which a segment ending at the subnormal below 0 lies exactly 1 from a centre at 1."""
    rows = []
    for c, active in form.conditions:
        if not isinstance(c, Ball) or not isinstance(c.center, Row):
            continue
        if active.value(solution) < 0.5 or holds(c, inputs, {}):
            continue
        index = query.instances.index(c.instance)
        own = [int(v) for v in form.var_of[index]]
        if any(
            v in form.complex or form.partners[v] != {("row", c.center.values[f])}
            for f, v in enumerate(own)
        ):
            continue
        cols = [col for v in sorted(set(own)) for col in form.vars[v].cols]
        ones = [col for col in cols if solution[col] > 0.5]
        # Not (these predicates as they are, and active): sum(zeros) - sum(ones) - active >=
        # -len(ones).
        expr = Affine({col: 1.0 if solution[col] <= 0.5 else -1.0 for col in cols}) - active
        rows.append((expr.terms, -len(ones) - expr.const, math.inf))
    return rows


# -- re-solving the value columns of one pattern ----------------------------------------------


def _polish(query: Query, form: Formulation, segments, values, solution, slack):
    """Values of the variables with a value column, re-solved inside the pattern's segments with
    linear constraints and radii tightened by ``slack`` (relative); None if none exist."""
    p = ProgramBuilder()
    cols = {v: p.column(*segments[v], integer=form.vars[v].integral) for v in sorted(form.complex)}

    def var(instance: str, f: int) -> int:
        return int(form.var_of[query.instances.index(instance), f])

    def value(v: int) -> Affine:
        return Affine.column(cols[v]) if v in cols else Affine(const=float(values[v]))

    def center(reference, f: int) -> Affine:
        if isinstance(reference, Row):
            return Affine(const=reference.values[f])
        return value(var(reference, f))

    def tight(rhs: float) -> float:
        return rhs - slack * max(1.0, abs(rhs))

    def distances(instance: str, reference, weights) -> list[Affine]:  # weighted gaps
        found = []
        for f in range(query.n_features):
            diff = value(var(instance, f)) - center(reference, f)
            if diff.is_constant:
                found.append(Affine(const=abs(diff.const) * weight_of(weights, f)))
                continue
            d = Affine.column(p.column(0.0, max(map(abs, p.bounds(diff)))))
            p.row(d - diff, lower=0.0)
            p.row(d + diff, lower=0.0)
            found.append(d * weight_of(weights, f))
        return found

    try:
        for c, active in form.conditions:
            if active.value(solution) < 0.5:
                continue
            if isinstance(c, Tie):
                p.row(value(var(c.first, c.feature)) - value(var(c.second, c.feature)), 0.0, 0.0)
            elif isinstance(c, Ball) and c.norm == "linf":
                for f in range(query.n_features):
                    x = value(var(c.instance, f))
                    if isinstance(c.center, Row):
                        p.row(
                            x, *ball_interval(c.center.values[f], c.radius, weight_of(c.weights, f))
                        )
                    else:
                        side = tight(c.radius) / weight_of(c.weights, f)
                        p.row(x - center(c.center, f), -side, side)
            elif isinstance(c, Ball):
                gaps = distances(c.instance, c.center, c.weights)
                p.row(sum(gaps, Affine()), upper=tight(c.radius))
            elif isinstance(c, Linear):
                terms = (t.coef * value(var(t.instance, t.feature)) for t in c.terms)
                expr = sum(terms, Affine())
                if c.op == "<=":
                    p.row(expr, upper=tight(c.rhs))
                elif c.op == ">=":
                    p.row(expr, lower=-tight(-c.rhs))
                else:
                    p.row(expr, c.rhs, c.rhs)
        for c, flags in form.changes:
            for f, flag in enumerate(flags):
                if flag.value(solution) < 0.5:
                    p.row(value(var(c.instance, f)) - center(c.reference, f), 0.0, 0.0)
        goal = query.goal
        if isinstance(goal, MinimizeDistance):
            found = distances(goal.instance, goal.center, goal.weights)
            if goal.norm == "l1":
                for d in found:
                    p.objective(d)
            else:
                top = max([0.0] + [p.bounds(d)[1] for d in found])
                t = Affine.column(p.column(0.0, top))
                for d in found:
                    p.row(t - d, lower=0.0)
                p.objective(t)
    except Infeasible:
        return None
    outcome = highs.solve(p.freeze())
    if outcome.status is not Termination.OPTIMAL or outcome.solution is None:
        return None
    return {v: float(outcome.solution[col]) for v, col in cols.items()}
