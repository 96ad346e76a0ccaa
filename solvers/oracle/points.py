"""A float32 input inside a box that satisfies the remaining input constraints.

Boxes alone, with at most a distance to minimise, have a closed-form answer. Everything else
(one-hot groups, change counts, L1 balls, balls between instances, linear constraints, ties inside a
disjunction) goes to a small mixed-integer program over the box, solved by HiGHS; its solution is
moved onto the float32 grid and then checked exactly, so the oracle never returns a witness that
does not satisfy the query.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from veritas_dsl.ir.evaluate import distance, holds, reference_point
from veritas_dsl.ir.float32 import as_float32, ball_interval, ceil32, floor32
from veritas_dsl.ir.query import (
    AnyOf,
    AtMostKChanged,
    Ball,
    Constraint,
    Interval,
    Linear,
    MinimizeDistance,
    OneHot,
    OutputConstraint,
    Query,
    Row,
    Tie,
    VoteMargin,
    walk,
)
from veritas_dsl.solvers.oracle.boxes import Space, narrow

#: Attempts at tightening linear constraints when rounding to float32 breaks one.
_REPAIRS = 4
#: Relative distance within which a solution value is moved onto a box end or reference value.
#: Moving onto a reference only shortens distances and change counts, and every point is
#: re-checked exactly afterwards, so a generous radius is safe.
_SNAP = 1e-5


class WitnessError(RuntimeError):
    """The oracle found a real solution but could not move it onto the float32 grid."""


@dataclass
class Point:
    """Inputs per instance (float32 vectors) and, for a distance goal, their distance."""

    inputs: dict[str, np.ndarray]
    value: float | None


def branches(constraints: tuple[Constraint, ...], margins, votes) -> list[list[Constraint]]:
    """The disjunctive normal form of ``constraints`` over input constraints only.

    Output and vote constraints are decided by the combination's ``margins`` and ``votes``;
    branches they falsify are dropped.
    """
    result: list[list[Constraint]] = [[]]
    for c in constraints:
        if isinstance(c, OutputConstraint | VoteMargin):
            if not holds(c, {}, margins, votes):
                return []
        elif isinstance(c, AnyOf):
            options = [b for alt in c.alternatives for b in branches(alt, margins, votes)]
            result = [r + b for r in result for b in options]
            if not result:
                return []
        else:
            result = [[*r, c] for r in result]
    return result


def find_point(
    query: Query,
    space: Space,
    lo: np.ndarray,
    hi: np.ndarray,
    constraints: tuple[Constraint, ...],
    margins,
    votes,
    goal: MinimizeDistance | None,
) -> Point | None:
    """A point in the box satisfying ``constraints``; the closest one when ``goal`` is given."""
    best: Point | None = None
    for branch in branches(constraints, margins, votes):
        point = _solve_branch(query, space, lo.copy(), hi.copy(), branch, goal)
        if point is None:
            continue
        if goal is None:
            return point
        if best is None or point.value < best.value:
            best = point
    return best


def _solve_branch(query, space, lo, hi, branch, goal) -> Point | None:
    special = []
    for c in branch:
        if isinstance(c, Interval):
            v = space.of(query, c.instance, c.feature)
            if not narrow(lo, hi, v, c.lo, c.hi, bool(space.integral[v])):
                return None
        elif isinstance(c, Ball) and c.norm == "linf" and isinstance(c.center, Row):
            for f, center in enumerate(c.center.values):
                v = space.of(query, c.instance, f)
                if not narrow(lo, hi, v, *ball_interval(center, c.radius), bool(space.integral[v])):
                    return None
        elif isinstance(c, Tie) and space.of(query, c.first, c.feature) == space.of(
            query, c.second, c.feature
        ):
            continue
        else:
            special.append(c)
    if not special:
        values = _closed_form(query, space, lo, hi, goal)
        return _point(query, space, values, goal)
    return _solve_milp(query, space, lo, hi, branch, special, goal)


def _default(lo: float, hi: float) -> float:
    """A plain value in ``[lo, hi]``: 0 when inside, else the nearer end."""
    return min(max(0.0, lo), hi)


def _nearest(target: float, lo: float, hi: float, integral: bool) -> float:
    """The value of ``[lo, hi]`` (integral if asked) closest to ``target``."""
    if integral:
        candidates = [math.floor(target), math.ceil(target)]
        return min((min(max(c, lo), hi) for c in candidates), key=lambda c: (abs(c - target), c))
    return min(max(target, lo), hi)


def _closed_form(query, space, lo, hi, goal) -> np.ndarray:
    values = np.array([_default(a, b) for a, b in zip(lo, hi, strict=True)])
    if goal is None:
        return values
    a = query.instances.index(goal.instance)
    for f in range(query.n_features):
        va = space.var[a, f]
        if isinstance(goal.center, Row):
            c = goal.center.values[f]
            values[va] = _nearest(c, lo[va], hi[va], bool(space.integral[va]))
            continue
        vb = space.var[query.instances.index(goal.center), f]
        if va == vb:
            continue
        if max(lo[va], lo[vb]) <= min(hi[va], hi[vb]):  # overlapping: both take one value
            values[va] = values[vb] = _default(max(lo[va], lo[vb]), min(hi[va], hi[vb]))
        elif hi[va] < lo[vb]:
            values[va], values[vb] = hi[va], lo[vb]
        else:
            values[va], values[vb] = lo[va], hi[vb]
    return values


def _point(query, space, values, goal) -> Point:
    inputs = {
        name: values[space.var[i]].astype(np.float32) for i, name in enumerate(query.instances)
    }
    if goal is None:
        return Point(inputs, None)
    center = reference_point(goal.center, inputs)
    return Point(inputs, distance(goal.norm, inputs[goal.instance], center))


# -- the mixed-integer program ----------------------------------------------------------------


@dataclass
class _Program:
    """Columns with bounds, integrality and costs, and rows ``lower <= a x <= upper``."""

    col_lo: list[float] = field(default_factory=list)
    col_hi: list[float] = field(default_factory=list)
    integer: list[bool] = field(default_factory=list)
    cost: list[float] = field(default_factory=list)
    rows: list[tuple[float, float, list[int], list[float]]] = field(default_factory=list)

    def column(self, lo: float, hi: float, integer: bool = False, cost: float = 0.0) -> int:
        self.col_lo.append(lo)
        self.col_hi.append(hi)
        self.integer.append(integer)
        self.cost.append(cost)
        return len(self.col_lo) - 1

    def row(self, lower: float, upper: float, coefs: dict[int, float]) -> None:
        self.rows.append((lower, upper, list(coefs), list(coefs.values())))

    def solve(self) -> np.ndarray | None:
        import highspy

        from veritas_dsl.solvers.milp.highs import silent_highs

        h = silent_highs()
        h.setOptionValue("mip_rel_gap", 0.0)
        h.setOptionValue("mip_abs_gap", 0.0)
        # Box ends one float32 step apart must stay apart: tolerances far below a step.
        h.setOptionValue("primal_feasibility_tolerance", 1e-10)
        h.setOptionValue("mip_feasibility_tolerance", 1e-10)
        n = len(self.col_lo)
        h.addVars(n, np.array(self.col_lo), np.array(self.col_hi))
        h.changeColsCost(n, np.arange(n, dtype=np.int32), np.array(self.cost))
        ints = np.nonzero(self.integer)[0].astype(np.int32)
        if len(ints):
            kinds = np.array([highspy.HighsVarType.kInteger] * len(ints))
            h.changeColsIntegrality(len(ints), ints, kinds)
        for lower, upper, index, coef in self.rows:
            h.addRow(lower, upper, len(index), np.array(index, dtype=np.int32), np.array(coef))
        h.run()
        status = h.getModelStatus()
        if status == highspy.HighsModelStatus.kOptimal:
            return np.array(h.getSolution().col_value[:n])
        if status in (
            highspy.HighsModelStatus.kInfeasible,
            highspy.HighsModelStatus.kUnboundedOrInfeasible,
        ):
            return None
        raise WitnessError(f"HiGHS stopped with status {h.modelStatusToString(status)}")


def _hull(query: Query) -> float:
    """A bound on |x| beyond which nothing in the query changes (linear constraints included)."""
    magnitudes = [1.0]
    for model in query.models.values():
        inner = model.feature >= 0
        if inner.any():
            magnitudes.append(float(np.abs(model.threshold[inner]).max()))
    for feature in query.features:
        magnitudes += [abs(b) for b in (feature.lo, feature.hi) if math.isfinite(b)]
    for c in walk(query.constraints):
        if isinstance(c, Interval):
            magnitudes += [abs(b) for b in (c.lo, c.hi) if math.isfinite(b)]
        reference = getattr(c, "center", None) or getattr(c, "reference", None)
        if isinstance(reference, Row):
            magnitudes += [abs(v) for v in reference.values]
        if isinstance(c, Ball) and math.isfinite(c.radius):
            magnitudes.append(c.radius)
        if isinstance(c, Linear):
            smallest = min((abs(t.coef) for t in c.terms if t.coef), default=1.0)
            magnitudes.append(abs(c.rhs) / smallest)
    goal_center = getattr(query.goal, "center", None)
    if isinstance(goal_center, Row):
        magnitudes += [abs(v) for v in goal_center.values]
    return 4.0 * max(magnitudes) + 16.0


def _box_rules_out(query, space, lo, hi, special) -> bool:
    """Exact necessary conditions on the box alone: ties and distances that the box already
    violates. HiGHS would accept a violation within its tolerance as feasible."""

    def gap(a: int, b: int) -> Fraction:
        low, high = max(lo[a], lo[b]), min(hi[a], hi[b])
        return Fraction(low) - Fraction(high) if low > high else Fraction(0)

    for c in special:
        if isinstance(c, Tie):
            a, b = space.of(query, c.first, c.feature), space.of(query, c.second, c.feature)
            if gap(a, b) > 0:
                return True
        elif isinstance(c, Ball) and math.isfinite(c.radius):
            gaps = []
            for f in range(query.n_features):
                a = space.of(query, c.instance, f)
                if isinstance(c.center, Row):
                    r = c.center.values[f]
                    gaps.append(max(Fraction(0), _diff(lo[a], r), _diff(r, hi[a])))
                else:
                    gaps.append(gap(a, space.of(query, c.center, f)))
            total = max(gaps, default=Fraction(0)) if c.norm == "linf" else sum(gaps, Fraction(0))
            if total > Fraction(c.radius):
                return True
    return False


def _diff(a: float, b: float) -> Fraction:
    return Fraction(a) - Fraction(b) if math.isfinite(a) and math.isfinite(b) else Fraction(0)


def _solve_milp(query, space, lo, hi, branch, special, goal) -> Point | None:
    if _box_rules_out(query, space, lo, hi, special):
        return None
    slack = 0.0
    for _ in range(_REPAIRS):
        solution = _build_and_solve(query, space, lo, hi, special, goal, slack)
        if solution is None:
            return None
        values = _snap(query, space, lo, hi, special, goal, solution)
        point = _point(query, space, values, goal)
        broken = [c for c in branch if not holds(c, point.inputs, {})]
        if not broken:
            return point
        if not all(isinstance(c, Linear | Ball) for c in broken):
            raise WitnessError(f"rounding to float32 broke {broken[0]!r}")
        slack = max(1e-7, slack * 100)
    raise WitnessError("no float32 point satisfies the rounded constraints; the region is too thin")


def _build_and_solve(query, space, lo, hi, special, goal, slack) -> np.ndarray | None:
    hull = _hull(query)
    program = _Program()
    for v in range(space.n_vars):
        program.column(max(lo[v], -hull), min(hi[v], hull), bool(space.integral[v]))
    width = 2 * hull

    def var(instance: str, f: int) -> int:
        return space.of(query, instance, f)

    def tighten(rhs: float) -> float:
        return rhs - slack * max(1.0, abs(rhs))

    def distance_columns(instance, center, cost) -> list[int]:
        """Columns d_f >= |x_f - center_f| for every feature."""
        cols = []
        for f in range(query.n_features):
            d = program.column(0.0, math.inf, cost=cost)
            x = var(instance, f)
            if isinstance(center, Row):
                c = center.values[f]
                program.row(c, math.inf, {d: 1.0, x: 1.0})  # d >= c - x
                program.row(-c, math.inf, {d: 1.0, x: -1.0})  # d >= x - c
            else:
                y = var(center, f)
                if x == y:
                    program.row(0.0, 0.0, {d: 1.0})
                    cols.append(d)
                    continue
                program.row(0.0, math.inf, {d: 1.0, x: -1.0, y: 1.0})
                program.row(0.0, math.inf, {d: 1.0, x: 1.0, y: -1.0})
            cols.append(d)
        return cols

    for c in special:
        if isinstance(c, Tie):
            program.row(0.0, 0.0, {var(c.first, c.feature): 1.0, var(c.second, c.feature): -1.0})
        elif isinstance(c, OneHot):
            program.row(1.0, 1.0, {var(c.instance, f): 1.0 for f in c.features})
        elif isinstance(c, AtMostKChanged):
            # A feature whose box excludes the reference must change: counted exactly here, as
            # HiGHS would accept a value a tolerance away from the reference as equal to it.
            flags: dict[int, float] = {}
            forced = 0
            for f in range(query.n_features):
                x = var(c.instance, f)
                if isinstance(c.reference, Row):
                    r = c.reference.values[f]
                    if not lo[x] <= r <= hi[x] or (space.integral[x] and not r.is_integer()):
                        forced += 1
                        continue
                    z = program.column(0.0, 1.0, integer=True)
                    program.row(-math.inf, r, {x: 1.0, z: -width})  # x - r <= M z
                    program.row(r, math.inf, {x: 1.0, z: width})  # r - x <= M z
                else:
                    y = var(c.reference, f)
                    if x == y:
                        continue
                    if max(lo[x], lo[y]) > min(hi[x], hi[y]):
                        forced += 1
                        continue
                    z = program.column(0.0, 1.0, integer=True)
                    program.row(-math.inf, 0.0, {x: 1.0, y: -1.0, z: -width})
                    program.row(0.0, math.inf, {x: 1.0, y: -1.0, z: width})
                flags[z] = 1.0
            if forced > c.k:
                return None
            if flags:
                program.row(-math.inf, c.k - forced, flags)
        elif isinstance(c, Ball) and c.norm == "linf":  # between instances; rows are boxes
            for f in range(query.n_features):
                x = var(c.instance, f)
                if x != var(c.center, f):
                    program.row(
                        -tighten(c.radius), tighten(c.radius), {x: 1.0, var(c.center, f): -1.0}
                    )
        elif isinstance(c, Ball):
            cols = distance_columns(c.instance, c.center, 0.0)
            program.row(-math.inf, tighten(c.radius), dict.fromkeys(cols, 1.0))
        elif isinstance(c, Linear):
            coefs: dict[int, float] = {}
            for term in c.terms:
                x = var(term.instance, term.feature)
                coefs[x] = coefs.get(x, 0.0) + term.coef
            if c.op == "<=":
                program.row(-math.inf, tighten(c.rhs), coefs)
            elif c.op == ">=":
                program.row(-tighten(-c.rhs), math.inf, coefs)
            else:
                program.row(c.rhs, c.rhs, coefs)
    if goal is not None:
        if goal.norm == "l1":
            distance_columns(goal.instance, goal.center, 1.0)
        else:
            cols = distance_columns(goal.instance, goal.center, 0.0)
            t = program.column(0.0, math.inf, cost=1.0)
            for d in cols:
                program.row(0.0, math.inf, {t: 1.0, d: -1.0})
    solution = program.solve()
    return None if solution is None else solution[: space.n_vars]


def _snap(query, space, lo, hi, special, goal, solution) -> np.ndarray:
    """Move a real solution onto the float32 grid, keeping it in the box.

    A value within ``_SNAP`` of a box end or of a reference value takes that value exactly (HiGHS
    meets big-M rows only within its tolerances); otherwise
    it rounds toward the center of a distance it is part of, which never lengthens the distance.
    """
    attract: dict[int, set[float]] = {v: set() for v in range(space.n_vars)}
    toward: dict[int, float] = {}
    pairs: list[tuple[int, int]] = []
    references = [(c.instance, c.center) for c in special if isinstance(c, Ball)]
    references += [(c.instance, c.reference) for c in special if isinstance(c, AtMostKChanged)]
    if goal is not None:
        references.append((goal.instance, goal.center))
    for instance, reference in references:
        for f in range(query.n_features):
            v = space.of(query, instance, f)
            if isinstance(reference, Row):
                attract[v].add(reference.values[f])
                toward[v] = reference.values[f]
            else:
                pairs.append((v, space.of(query, reference, f)))
    for c in special:
        if isinstance(c, Tie):
            pairs.append(
                (space.of(query, c.first, c.feature), space.of(query, c.second, c.feature))
            )

    values = np.empty(space.n_vars)
    for v in range(space.n_vars):
        s = min(max(float(solution[v]), lo[v]), hi[v])
        if space.integral[v]:
            values[v] = min(max(float(round(s)), lo[v]), hi[v])
            continue
        candidates = {b for b in (lo[v], hi[v]) if math.isfinite(b)} | attract[v]
        close = [
            a for a in candidates if abs(s - a) <= _SNAP * max(1.0, abs(a)) and lo[v] <= a <= hi[v]
        ]
        if close:
            values[v] = close[0]
        elif v in toward:
            values[v] = floor32(s) if s > toward[v] else ceil32(s)
        else:
            values[v] = as_float32(s)
        values[v] = min(max(values[v], lo[v]), hi[v])
    for a, b in pairs:
        if (
            abs(values[a] - values[b]) <= _SNAP * max(1.0, abs(values[a]))
            and lo[b] <= values[a] <= hi[b]
        ):
            values[b] = values[a]
    return values
