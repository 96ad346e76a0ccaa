"""The input variables of the MILP and the binary predicates on them.

:class:`Predicates` numbers the variables (one per (instance, feature), tied ones shared), finds
which variables are related (ties, change counts and distances inside the query), gives each
variable its cuts and a predicate ``p_t = [x < t]`` per cut, and writes the ends of a variable's
segment as affine expressions of its predicates. The formulation's module doc
(:mod:`~veritas_dsl.solvers.milp.formulation`) says why each is exact.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from veritas_dsl.float32 import ball_interval, ceil32, floor32, nearest, next_down, next_up
from veritas_dsl.ir.query import (
    AnyOf,
    AtMostKChanged,
    Ball,
    Interval,
    Linear,
    MinimizeDistance,
    OneHot,
    Query,
    Row,
    Tie,
    weight_of,
)
from veritas_dsl.ir.reductions import variables_of
from veritas_dsl.solvers.base import Deadline, UnsupportedQuery
from veritas_dsl.solvers.milp.program import ONE, ZERO, Affine, Infeasible, ProgramBuilder

#: Splits read between two looks at the deadline while the cuts are gathered (one look costs as
#: much as a few splits; a forest of 400 trees of depth 8 has 100,000).
CHECK_EVERY = 1024


def ceil_int(value: float) -> float:
    """The smallest integer not below ``value`` (infinities stay)."""
    return value if math.isinf(value) else float(math.ceil(value))


def floor_int(value: float) -> float:
    """The largest integer not above ``value`` (infinities stay)."""
    return value if math.isinf(value) else float(math.floor(value))


@dataclass
class Var:
    """One input variable.

    ``lo``/``hi`` are its closed bounds (float32 values, integral when ``integral``); ``cuts``
    the sorted cut values inside ``(lo, hi]`` and ``cols`` the predicate column of each; ``x`` the
    value column, when one is needed.
    """

    feature: int
    integral: bool
    lo: float
    hi: float
    clamped: bool = False
    infinite: bool = False
    cuts: list[float] = field(default_factory=list)
    cols: list[int] = field(default_factory=list)
    x: int | None = None

    # An integral domain is the whole float32 values: beyond 2**24 float32 skips integers, so
    # its steps are the larger of 1 and the float32 step.

    def below(self, t: float) -> float:
        """The largest value of the domain under ``t`` (a value of the domain)."""
        return min(t - 1.0, next_down(t)) if self.integral else next_down(t)

    def after(self, value: float) -> float:
        """The smallest value of the domain above ``value`` (a value of the domain)."""
        return max(value + 1.0, next_up(value)) if self.integral else next_up(value)

    def cut_of(self, threshold: float) -> float:
        """The cut equivalent to the split ``x < threshold`` on this domain."""
        return self.lower_cut(threshold) if self.integral else float(threshold)

    def lower_cut(self, lo: float) -> float:
        """``c`` with ``x >= lo`` exactly when ``x >= c``."""
        return ceil32(ceil_int(lo)) if self.integral else ceil32(lo)

    def upper_cut(self, hi: float) -> float:
        """``c`` with ``x <= hi`` exactly when ``x < c``."""
        if self.integral:
            return self.after(floor32(floor_int(hi)))
        return next_up(floor32(hi))


class _UnionFind:
    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, a: int) -> int:
        while self.parent[a] != a:
            self.parent[a] = self.parent[self.parent[a]]
            a = self.parent[a]
        return a

    def union(self, a: int, b: int) -> None:
        self.parent[self.find(a)] = self.find(b)


class Predicates:
    """The variables, their cuts and predicates of one query's program (the first layer of the
    formulation's builder: :class:`~veritas_dsl.solvers.milp.trees.Trees` and
    :class:`~veritas_dsl.solvers.milp.constraints.Constraints` build on it)."""

    def __init__(self, query: Query, deadline: Deadline, pairs: list[tuple[str, str]]) -> None:
        self.query = query
        self.deadline = deadline
        self.p = ProgramBuilder()
        self.pairs = pairs
        self.constraints = query.constraints
        self.binaries: list[int] = []
        self.notes: list[str] = []

    # -- variables ---------------------------------------------------------------------------

    def number_vars(self) -> None:
        """The variables and their bounds, from the query's variable table
        (``ir.reductions.MergeTies`` and ``StaticBounds``)."""
        q = self.query
        table = variables_of(q)
        if table.empty:
            raise Infeasible
        self.var_of = table.var
        feature_of = np.zeros(table.n_vars, dtype=np.int64)
        feature_of[table.var] = np.arange(q.n_features)
        self.vars = [
            Var(
                feature=int(feature_of[v]),
                integral=bool(table.integral[v]),
                lo=float(table.lo[v]),
                hi=float(table.hi[v]),
            )
            for v in range(table.n_vars)
        ]

    def var(self, instance: str, f: int) -> int:
        return int(self.var_of[self.query.instances.index(instance), f])

    # -- relations between variables -----------------------------------------------------------

    def relations(self) -> None:
        """Partners, equality classes (which share cuts), and the variables needing a value
        column."""
        n = len(self.vars)
        self.partners: list[set] = [set() for _ in range(n)]
        equal = _UnionFind(n)
        linked = _UnionFind(n)
        needs_x: set[int] = set()
        self.extra_cuts: list[set[float]] = [set() for _ in range(n)]

        def pair(u: int, w: int, same_value: bool) -> None:
            if u == w:
                return
            self.partners[u].add(("var", w))
            self.partners[w].add(("var", u))
            linked.union(u, w)
            if same_value:
                equal.union(u, w)

        def row_partner(v: int, value: float) -> None:
            self.partners[v].add(("row", value))

        def interval_cuts(v: int, lo: float, hi: float) -> None:
            var = self.vars[v]
            for cut in (var.lower_cut(lo), var.upper_cut(hi)):
                if math.isfinite(cut):
                    self.extra_cuts[v].add(cut)

        for c, nested in _walk_nested(self.constraints):
            if isinstance(c, Tie) and nested:
                pair(self.var(c.first, c.feature), self.var(c.second, c.feature), True)
            elif isinstance(c, Interval) and nested:
                interval_cuts(self.var(c.instance, c.feature), c.lo, c.hi)
            elif isinstance(c, OneHot):
                for f in c.features:
                    self.extra_cuts[self.var(c.instance, f)].add(1.0)
            elif isinstance(c, AtMostKChanged):
                for f in range(self.query.n_features):
                    v = self.var(c.instance, f)
                    if isinstance(c.reference, Row):
                        r = c.reference.values[f]
                        row_partner(v, r)
                        interval_cuts(v, r, r)
                    else:
                        pair(v, self.var(c.reference, f), True)
            elif isinstance(c, Ball):
                for f in range(self.query.n_features):
                    v = self.var(c.instance, f)
                    if not isinstance(c.center, Row):
                        pair(v, self.var(c.center, f), False)
                    elif c.norm == "l1":
                        row_partner(v, c.center.values[f])
                    elif nested:
                        interval_cuts(
                            v, *ball_interval(c.center.values[f], c.radius, weight_of(c.weights, f))
                        )
            elif isinstance(c, Linear):
                needs_x.update(self.var(t.instance, t.feature) for t in c.terms)
        goal = self.query.goal
        if isinstance(goal, MinimizeDistance):
            for f in range(self.query.n_features):
                v = self.var(goal.instance, f)
                if isinstance(goal.center, Row):
                    row_partner(v, goal.center.values[f])
                else:
                    pair(v, self.var(goal.center, f), False)

        self.equality_classes(equal, linked, needs_x)

    def equality_classes(self, equal: _UnionFind, linked: _UnionFind, needs_x: set[int]) -> None:
        """The equality classes' shared cuts, and the variables needing a value column (every
        member of a linked component that has a linear constraint or two partners)."""
        n = len(self.vars)
        # Variables of one equality class share their cuts, so that equal patterns mean equal
        # segments; each member's bounds are cuts of the class, for the same reason.
        classes: dict[int, list[int]] = {}
        for v in range(n):
            classes.setdefault(equal.find(v), []).append(v)
        self.class_of = [equal.find(v) for v in range(n)]
        self.class_cuts: dict[int, set[float]] = {}
        for root, members in classes.items():
            cuts: set[float] = set()
            if len(members) > 1:
                for v in members:
                    var = self.vars[v]
                    cuts |= {var.lo, var.after(var.hi)}
            self.class_cuts[root] = cuts

        components: dict[int, list[int]] = {}
        for v in range(n):
            components.setdefault(linked.find(v), []).append(v)
        self.complex: set[int] = set()
        for members in components.values():
            if any(v in needs_x or len(self.partners[v]) > 1 for v in members):
                self.complex.update(members)
        for v in needs_x:
            if self.vars[v].clamped:
                self.notes.append(
                    f"linear constraints on feature "
                    f"{self.query.features[self.vars[v].feature].name}, whose range is wider "
                    f"than the constants need, are solved within |x| <= {self.hull:g}"
                )

    # -- cuts and predicates --------------------------------------------------------------------

    def make_predicates(self) -> None:
        cuts: list[set[float]] = [set(extra) for extra in self.extra_cuts]
        for model_name, instance in self.pairs:
            model = self.query.models[model_name]
            inner = model.feature >= 0
            # each split once: a forest tests the same thresholds again and again
            split = np.unique(np.stack([model.feature[inner], model.threshold[inner]]), axis=1)
            for i, (f, t) in enumerate(split.T):
                if i % CHECK_EVERY == 0:
                    self.deadline.check()
                v = self.var(instance, int(f))
                cuts[v].add(self.vars[v].cut_of(float(t)))
        for v in range(len(self.vars)):
            self.class_cuts[self.class_of[v]] |= cuts[v]
        for var, root in zip(self.vars, self.class_of, strict=True):
            self.deadline.check()
            var.cuts = sorted(t for t in self.class_cuts[root] if var.lo < t <= var.hi)
            var.cols = [self.binary() for _ in var.cuts]
            for a, b in zip(var.cols, var.cols[1:], strict=False):
                self.p.row(Affine({a: 1.0, b: -1.0}), upper=0.0)  # p_s <= p_t for s < t
        self.cut_index = [{t: i for i, t in enumerate(var.cuts)} for var in self.vars]

    def binary(self) -> int:
        col = self.p.binary()
        self.binaries.append(col)
        return col

    def pred(self, v: int, t: float) -> Affine:
        """``[x_v < t]`` as an expression: a column, or a constant outside the bounds."""
        var = self.vars[v]
        if t <= var.lo:
            return ZERO
        if t > var.hi:
            return ONE
        return Affine.column(var.cols[self.cut_index[v][t]])

    def lower_end(self, v: int, floor: float = -math.inf, cap: float = math.inf) -> Affine:
        """``min(cap, max(floor, lower end of v's segment))``, affine in v's predicates
        (``floor <= cap``)."""
        var = self.vars[v]
        base = min(cap, max(floor, var.lo))
        terms, const, prev = {}, base, base
        for t, col in zip(var.cuts, var.cols, strict=True):
            t = min(t, cap)
            if t > prev:
                step = t - prev
                const += step  # step * (1 - p_t)
                terms[col] = -step
                prev = t
        return Affine(terms, const)

    def upper_end(self, v: int, ceiling: float = math.inf, floor: float = -math.inf) -> Affine:
        """``max(floor, min(ceiling, upper end of v's segment))``, affine in v's predicates
        (``floor <= ceiling``)."""
        var = self.vars[v]
        top = max(floor, min(ceiling, var.hi))
        terms, prev = {}, top
        for t, col in zip(reversed(var.cuts), reversed(var.cols), strict=True):
            below = max(floor, var.below(t))
            if below < prev:
                terms[col] = -(prev - below)
                prev = below
        return Affine(terms, top)

    def squared_gap(self, v: int, c: float, scale: Fraction) -> Affine:
        """``scale`` times the squared gap from v's segment to the row value ``c`` (from the
        segment's value nearest ``c``), affine in v's predicates. The least segment's square is
        the constant; from it outward, each cut adds the growth of the square to the next
        segment: exact rationals rounded once each, all of one sign, so none cancel."""
        var = self.vars[v]
        self.finite(v)
        lows, highs = [var.lo, *var.cuts], [var.below(t) for t in var.cuts] + [var.hi]
        squares = [
            scale * (Fraction(nearest(c, lo, hi, var.integral)) - Fraction(c)) ** 2
            for lo, hi in zip(lows, highs, strict=True)
        ]
        least = min(range(len(squares)), key=squares.__getitem__)
        terms, const = {}, float(squares[least])
        for j in range(least + 1, len(squares)):  # at or above segment j: x >= cuts[j - 1]
            growth = float(squares[j] - squares[j - 1])
            const += growth  # growth * (1 - p)
            terms[var.cols[j - 1]] = -growth
        for j in range(least):  # at or below segment j: x < cuts[j]
            terms[var.cols[j]] = terms.get(var.cols[j], 0.0) + float(squares[j] - squares[j + 1])
        return Affine(terms, const)

    def finite(self, v: int) -> None:
        """Refuse a variable pinned to an infinity where its value enters a distance or a sum."""
        if self.vars[v].infinite:
            name = self.query.features[self.vars[v].feature].name
            raise UnsupportedQuery(
                f"query {self.query.name}: feature {name} can only be infinite, and the MILP "
                "engine does not measure distances or sums of infinite inputs"
            )

    def value_columns(self) -> None:
        for v in sorted(self.complex):
            var = self.vars[v]
            self.finite(v)
            var.x = self.p.column(var.lo, var.hi, integer=var.integral)
            x = Affine.column(var.x)
            self.p.row(x - self.lower_end(v), lower=0.0)
            self.p.row(x - self.upper_end(v), upper=0.0)


def _walk_nested(constraints, nested: bool = False):
    """Yield ``(constraint, nested)`` for every constraint, descending into disjunctions."""
    for c in constraints:
        yield c, nested
        if isinstance(c, AnyOf):
            for alternative in c.alternatives:
                yield from _walk_nested(alternative, True)
