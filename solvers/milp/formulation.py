"""A query as a mixed-integer linear program: the formulation of Kantchelian et al. (2016),
extended to every construct of the query IR.

Input variables
    Each (instance, feature) pair is one variable, except that pairs tied by a top-level
    :class:`Tie` share one. Its bounds are the feature's range narrowed by top-level intervals and
    balls around rows, on the float32 grid (integral for int and bool; the query's variable table,
    ``ir.reductions.StaticBounds``), and clamped to a hull
    ``[-H, H]`` holding every constant of the query. Clamping an input into the hull changes no
    split, interval, equality or change count and lengthens no distance, so no answer is lost;
    linear constraints are the one exception, noted in the result.

Cuts and predicates
    A variable has a sorted set of cuts ``t`` (every threshold the models test it against, and the
    ends of intervals, balls and reference values that sit inside a disjunction or a change
    count), and a binary predicate ``p_t = [x < t]`` per cut inside its bounds. Predicates of one
    variable are ordered (``p_s <= p_t`` for ``s < t``), so a 0/1 pattern picks one *segment*
    ``[t_j, below(t_{j+1})]``, where ``below(t)`` is the largest value of the domain under ``t``
    (``next_down(t)`` in float32, ``t - 1`` for integers). This is how ``x < t`` is made exact:
    the two sides of a cut are the float32 sets ``x <= below(t)`` and ``x >= t``.

Trees (Kantchelian)
    One leaf variable per reachable leaf (its path is consistent with the bounds), exactly one
    per tree; at each internal node whose both sides are reachable, the leaves under the left
    child sum to at most its predicate and those under the right child to at most one minus it.

Distances without rounding
    The lower and upper ends of a segment are affine in the predicates (a telescoping sum over the
    cuts, :meth:`Formulation.lower_end`), so the exact distance from a segment to a float32 centre,
    or between two segments, is the largest of a few affine expressions. Balls, change counts,
    ties and one-hot groups are written on predicates in the same way, with no big-M and no
    rounding. Only linear constraints, and variables sharing distances with two or more partners,
    get a value column ``x`` as well, tied to the segment by ``lower_end <= x <= upper_end``.

Output constraints
    A model output is ``base + sum(value * leaf)``, so a term takes finitely many values, one per
    leaf combination, and all of them (and the right-hand side) are integer multiples of
    ``g = 2**E``, with ``E`` the lowest set bit of any leaf value, coefficient, constant or
    right-hand side involved. ``term < rhs`` is therefore ``term <= rhs - g/2`` and
    ``term <= rhs`` is ``term <= rhs + g/2``: each row sits half a grid step from every value a
    term can take, which is as far from the solver's tolerance as possible. The witness is then
    re-checked on the model in float64 (the semantics); a leaf combination that fails is cut off
    and the program solved again.

Disjunctions
    One indicator per alternative, at least one of them 1, and every constraint of an
    alternative written as a big-M row that binds only when its indicator is 1 (the big-M from
    column bounds, or per tree for output terms).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from veritas_dsl.float32 import ball_interval, ceil32, floor32, next_down, next_up
from veritas_dsl.ir.query import (
    AnyOf,
    AtMostKChanged,
    Ball,
    Constraint,
    Find,
    Interval,
    Linear,
    Maximize,
    MinimizeDistance,
    OneHot,
    OutputConstraint,
    OutputTerm,
    Query,
    Row,
    Tie,
    output_terms,
    walk,
)
from veritas_dsl.ir.reductions import variables_of
from veritas_dsl.solvers.base import Deadline, UnsupportedQuery
from veritas_dsl.solvers.milp.program import ONE, ZERO, Affine, Infeasible, Program, ProgramBuilder


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


@dataclass(frozen=True)
class TreeLeaves:
    """The reachable leaves of one tree for one (model, instance): node ids and their columns.

    ``cols`` is None when a single leaf is reachable (its value is a constant).
    """

    nodes: np.ndarray
    cols: np.ndarray | None

    def column(self, node: int) -> int | None:
        """The column of leaf ``node`` (None for a constant tree); KeyError if it was pruned."""
        if self.cols is None:
            return None
        hit = np.nonzero(self.nodes == node)[0]
        if len(hit) == 0:
            raise KeyError(node)
        return int(self.cols[hit[0]])


@dataclass
class Formulation:
    """The program of a query and what is needed to read its solutions back.

    Attributes
    ----------
    program : Program
        The MILP (minimisation; ``sense`` tells how its objective maps to the goal's).
    constraints : tuple of Constraint
        What a witness must satisfy: the query's constraints, and for prove the negated
        conclusion.
    sense : float
        1 when the program's objective is the goal's value, -1 when it is its negation, 0 for
        find and prove.
    vars : list of Var
    var_of : int array, shape (n_instances, n_features)
        The variable of each (instance, feature).
    leaves : dict
        ``{(model, instance): [TreeLeaves per tree]}``.
    conditions : list of (Constraint, Affine)
        Every constraint below the top level of disjunctions, with the indicator under which it
        must hold (``ONE`` at the top level).
    changes : list of (AtMostKChanged, list of Affine)
        The change indicator of every feature of every change count (the indicator of the
        feature's unit).
    partners : list of set
        Per variable: ``("row", value)`` and ``("var", index)`` it shares a distance, change
        count or tie with; witnesses pick values close to their partners.
    complex : set of int
        Variables whose value comes from their ``x`` column (linear constraints, or distances to
        two partners); the others are placed in closed form from their segment.
    binaries : list of int
        Predicate, indicator and change columns: a 0/1 pattern of these fixes everything.
    hull : float
        ``H`` of the hull ``[-H, H]``.
    step : float or None
        For a distance goal, a power of two that divides every distance the goal can take (all
        segment ends and centre values are multiples of it): two distances that differ, differ
        by at least this much.
    notes : list of str
        Caveats to report (a linear constraint on a feature the hull bounded).
    """

    program: Program
    constraints: tuple[Constraint, ...]
    sense: float
    vars: list[Var]
    var_of: np.ndarray
    leaves: dict[tuple[str, str], list[TreeLeaves]]
    conditions: list[tuple[Constraint, Affine]]
    changes: list[tuple[AtMostKChanged, list[Affine]]]
    partners: list[set]
    complex: set[int]
    binaries: list[int]
    hull: float
    notes: list[str]
    step: float | None = None


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


def lowest_bit(values) -> int | None:
    """The exponent of the lowest set bit over nonzero finite float64 ``values`` (None if none)."""
    x = np.asarray(values, dtype=np.float64).ravel()
    x = x[np.isfinite(x) & (x != 0)]
    if len(x) == 0:
        return None
    mantissa, exponent = np.frexp(np.abs(x))
    digits = (mantissa * 2.0**53).astype(np.int64)  # exact: 53-bit integers
    low = digits & -digits
    return int(np.min(exponent - 53 + np.log2(low).astype(np.int64)))


def used_pairs(query: Query) -> list[tuple[str, str]]:
    """The (model, instance) pairs whose outputs the query reads, in a stable order."""
    return sorted({(a.model, a.instance) for t in output_terms(query) for a in t.atoms})


#: The largest hull the solvers represent: HiGHS reads bounds from 1e20 on as infinite, and far
#: below that a float64 program can no longer tell the hull's end from the float32 steps near it.
MAX_HULL = 2.0**60


def hull_size(query: Query, pairs, constraints: tuple[Constraint, ...]) -> float:
    """A power of two ``H`` beyond four times every constant of the query.

    Bounds past :data:`MAX_HULL` (a domain such as ``int in [-1e308, 1e308]``) are left out: the
    hull clamps such a variable like an unbounded one. Any other constant past it (a threshold, a
    row value, a radius or a linear constraint) is refused: the program could not hold it.
    """
    bounds = []
    magnitudes = [1.0]
    for model_name, _ in pairs:
        model = query.models[model_name]
        inner = model.feature >= 0
        if inner.any():
            magnitudes.append(float(np.abs(model.threshold[inner]).max()))
    for feature in query.features:
        bounds += [feature.lo, feature.hi]
    goal = query.goal
    for c in walk(constraints):
        if isinstance(c, Interval):
            bounds += [c.lo, c.hi]
        reference = c.center if isinstance(c, Ball) else getattr(c, "reference", None)
        if isinstance(reference, Row):
            magnitudes += [abs(v) for v in reference.values if math.isfinite(v)]
        if isinstance(c, Ball) and math.isfinite(c.radius):
            magnitudes.append(abs(c.radius))
        if isinstance(c, Linear):
            smallest = min((abs(t.coef) for t in c.terms if t.coef), default=1.0)
            magnitudes.append(abs(c.rhs) / smallest)
    if isinstance(goal, MinimizeDistance) and isinstance(goal.center, Row):
        magnitudes += [abs(v) for v in goal.center.values if math.isfinite(v)]
    magnitudes += [abs(b) for b in bounds if abs(b) <= MAX_HULL]
    largest = max(magnitudes)
    if not largest <= MAX_HULL / 8:
        raise UnsupportedQuery(
            f"query {query.name}: the MILP engine cannot hold a constant of magnitude "
            f"{largest:g} (at most {MAX_HULL / 8:g}); the astar, sat and oracle engines can"
        )
    return 2.0 ** math.ceil(math.log2(4.0 * largest + 16.0))


class _Builder:
    """Builds a :class:`Formulation`; one instance per query."""

    def __init__(self, query: Query, deadline: Deadline) -> None:
        self.query = query
        self.deadline = deadline
        self.p = ProgramBuilder()
        self.pairs = used_pairs(query)
        self.constraints = query.constraints
        self.conditions: list[tuple[Constraint, Affine]] = []
        self.changes: list[tuple[AtMostKChanged, list[Affine]]] = []
        self.binaries: list[int] = []
        self.notes: list[str] = []
        self.leaves: dict[tuple[str, str], list[TreeLeaves]] = {}

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
                        interval_cuts(v, *ball_interval(c.center.values[f], c.radius))
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
            inner = np.nonzero(model.feature >= 0)[0]
            for f, t in zip(model.feature[inner], model.threshold[inner], strict=True):
                v = self.var(instance, int(f))
                cuts[v].add(self.vars[v].cut_of(float(t)))
        for v in range(len(self.vars)):
            self.class_cuts[self.class_of[v]] |= cuts[v]
        for var, root in zip(self.vars, self.class_of, strict=True):
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

    def lower_end(self, v: int, floor: float = -math.inf) -> Affine:
        """``max(floor, lower end of v's segment)``, affine in v's predicates."""
        var = self.vars[v]
        base = max(floor, var.lo)
        terms, const, prev = {}, base, base
        for t, col in zip(var.cuts, var.cols, strict=True):
            if t > prev:
                step = t - prev
                const += step  # step * (1 - p_t)
                terms[col] = -step
                prev = t
        return Affine(terms, const)

    def upper_end(self, v: int, ceiling: float = math.inf) -> Affine:
        """``min(ceiling, upper end of v's segment)``, affine in v's predicates."""
        var = self.vars[v]
        top = min(ceiling, var.hi)
        terms, prev = {}, top
        for t, col in zip(reversed(var.cuts), reversed(var.cols), strict=True):
            below = var.below(t)
            if below < prev:
                terms[col] = -(prev - below)
                prev = below
        return Affine(terms, top)

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

    # -- trees --------------------------------------------------------------------------------

    def make_leaves(self) -> None:
        """Leaf columns per tree and (model, instance). A tree whose split features are the same
        variables for two instances (tied at the top level) reaches the same leaf for both, so
        both share its columns: in a fairness query, where two instances differ in one feature,
        only the trees that test that feature are left in the objective."""
        shared: dict[tuple[str, int, tuple[int, ...]], TreeLeaves] = {}
        for model_name, instance in self.pairs:
            model = self.query.models[model_name]
            trees = []
            var_of = self.var_of[self.query.instances.index(instance)]
            for tree in range(model.n_trees):
                self.deadline.check()
                nodes = slice(model.tree_offsets[tree], model.tree_offsets[tree + 1])
                tested = sorted({int(f) for f in model.feature[nodes] if f >= 0})
                key = (model_name, tree, tuple(int(var_of[f]) for f in tested))
                if key not in shared:
                    shared[key] = self.tree(model, var_of, int(model.roots[tree]))
                trees.append(shared[key])
            self.leaves[model_name, instance] = trees

    def tree(self, model, var_of: np.ndarray, root: int) -> TreeLeaves:
        splits: list[tuple[int, float, list[int], list[int]]] = []

        def descend(node: int, bounds: dict[int, tuple[float, float]]) -> list[int]:
            f = int(model.feature[node])
            if f < 0:
                return [node]
            v = int(var_of[f])
            var = self.vars[v]
            t = var.cut_of(float(model.threshold[node]))
            lo, hi = bounds.get(v, (var.lo, var.hi))
            left = right = []
            if lo < t:
                left = descend(int(model.left[node]), {**bounds, v: (lo, min(hi, var.below(t)))})
            if hi >= t:
                right = descend(int(model.right[node]), {**bounds, v: (max(lo, t), hi)})
            if left and right:
                splits.append((v, t, left, right))
            return left + right

        reachable = descend(root, {})
        if len(reachable) == 1:
            return TreeLeaves(np.array(reachable), None)
        cols = {node: self.p.column(0.0, 1.0) for node in reachable}
        self.p.row(Affine(dict.fromkeys(cols.values(), 1.0)), 1.0, 1.0)
        for v, t, left, right in splits:
            p = self.pred(v, t)
            self.p.row(Affine({cols[n]: 1.0 for n in left}) - p, upper=0.0)
            self.p.row(Affine({cols[n]: 1.0 for n in right}) + p, upper=1.0)
        return TreeLeaves(np.array(reachable), np.array([cols[n] for n in reachable]))

    def term(self, term: OutputTerm) -> tuple[Affine, float, float]:
        """The term as an affine expression of leaf columns, and its smallest and largest value
        (per tree, since exactly one leaf of a tree is chosen)."""
        terms: dict[int, float] = {}
        const = lo = hi = float(term.constant)
        for atom in term.atoms:
            model = self.query.models[atom.model]
            base = atom.coef * float(model.base_score[atom.output])
            const, lo, hi = const + base, lo + base, hi + base
            for leaves in self.leaves[atom.model, atom.instance]:
                values = atom.coef * model.value[leaves.nodes, atom.output]
                lo, hi = lo + float(values.min()), hi + float(values.max())
                if leaves.cols is None:
                    const += float(values[0])
                    continue
                for col, value in zip(leaves.cols, values, strict=True):
                    terms[int(col)] = terms.get(int(col), 0.0) + float(value)
        return Affine(terms, const), lo, hi

    def grid_margin(self, constraint: OutputConstraint) -> float:
        """Half the grid step of the values ``constraint.term - rhs`` can take (see module doc)."""
        term = constraint.term
        bits = [lowest_bit([term.constant, constraint.rhs])]
        for atom in term.atoms:
            model = self.query.models[atom.model]
            values = [model.base_score[atom.output]]
            for leaves in self.leaves[atom.model, atom.instance]:
                values.append(model.value[leaves.nodes, atom.output])
            low = lowest_bit(np.concatenate([np.ravel(v) for v in values]))
            coef = lowest_bit([atom.coef])
            if low is not None and coef is not None:
                bits.append(low + coef)
        bits = [b for b in bits if b is not None]
        return 2.0 ** (min(bits) - 1) if bits else 0.5

    # -- constraints ----------------------------------------------------------------------------

    def forbid(self, active: Affine) -> None:
        """``active`` must be 0 (raises Infeasible at the top level)."""
        self.p.row(active, upper=0.0)

    def at_most(self, expr: Affine, upper: float, active: Affine, top: float | None = None):
        if top is not None and not active.is_constant:
            if top <= upper:
                return
            self.p.row(expr + (top - upper) * active, upper=top)
            return
        self.p.at_most(expr, upper, active)

    def at_least(self, expr: Affine, lower: float, active: Affine, bottom: float | None = None):
        top = None if bottom is None else -bottom
        self.at_most(-expr, -lower, active, top)

    def require_range(self, v: int, lo: float, hi: float, active: Affine) -> None:
        """``lo <= x_v <= hi`` when ``active``, on predicates (the cuts exist by construction)."""
        var = self.vars[v]
        low, high = var.lower_cut(lo), var.upper_cut(hi)
        if low > var.hi or high <= var.lo or low >= high:
            self.forbid(active)
            return
        self.at_most(self.pred(v, low), 0.0, active)  # x >= low
        self.at_least(self.pred(v, high), 1.0, active)  # x < high
        if var.x is not None:
            x = Affine.column(var.x)
            self.at_least(x, low, active)
            self.at_most(x, var.below(high), active)

    def pieces(self, v: int, center: float | int, is_row: bool) -> list[Affine]:
        """Affine expressions whose maximum (with 0) is the exact distance from ``v``'s segment
        to a row value, or to the segment of variable ``center``."""
        var = self.vars[v]
        self.finite(v)
        if is_row:
            c = float(center)
            found = [self.lower_end(v, c) - c, c - self.upper_end(v, c)]
            if var.integral and c != math.floor(c):
                gap = min(c - math.floor(c), math.ceil(c) - c)
                found.append(Affine(const=gap))
            if var.x is not None:
                found += [Affine.column(var.x) - c, c - Affine.column(var.x)]
            return found
        w = int(center)
        if w == v:
            return []
        self.finite(w)
        found = [self.pair_gap(v, w), self.pair_gap(w, v)]
        if var.x is not None and self.vars[w].x is not None:
            diff = Affine({var.x: 1.0, self.vars[w].x: -1.0})
            found += [diff, -diff]
        return found

    def pair_gap(self, u: int, w: int) -> Affine:
        """How far the segment of ``w`` lies above that of ``u``: ``a_w - b_u`` (lower end of
        w's, upper end of u's) when positive, at most 0 otherwise.

        Written exactly as ``lower_end(w) - upper_end(u)`` it would carry the hull's size in its
        coefficients, which costs the solver precision; the ends are clipped instead, to values
        that leave every positive gap intact: the lower end of w at no more than u's smallest
        upper end can take (a w-segment reaching below that has no gap above u), and the upper
        end of u at no less than w's largest lower end.
        """
        hi_u = self.vars[u].hi
        lo_w = self.vars[w].lo
        cuts_u, cuts_w = self.vars[u].cuts, self.vars[w].cuts
        least_upper_u = min(hi_u, self.vars[u].below(cuts_u[0])) if cuts_u else hi_u
        most_lower_w = max(lo_w, cuts_w[-1]) if cuts_w else lo_w
        first_w = cuts_w[0] if cuts_w else lo_w  # without cuts, the ends are exact constants
        last_upper_u = self.vars[u].below(cuts_u[-1]) if cuts_u else hi_u
        floor = max(lo_w, min(least_upper_u, first_w))
        ceiling = min(hi_u, max(most_lower_w, last_upper_u))
        return self.lower_end(w, floor) - self.upper_end(u, ceiling)

    def ball_between(self, u: int, w: int, radius: float, active: Affine) -> None:
        """``|x_u - x_w| <= radius`` when ``active``, as exclusions between predicates.

        For each upper end ``b`` that u's segment can have, the smallest lower end ``a`` of w's
        with ``a - b > radius`` (decided in rationals) is excluded together with it; larger lower
        ends imply that one. Coefficients are 0 and 1, so no tolerance can blur a float32 step.
        """
        if u == w:
            return
        bound = Fraction(radius)
        for a, b in ((u, w), (w, u)):
            first, second = self.vars[a], self.vars[b]
            uppers = [(Fraction(first.below(s)), self.pred(a, s)) for s in first.cuts]
            uppers.append((Fraction(first.hi), ONE))
            lowers = [(Fraction(second.lo), ONE)]
            lowers += [(Fraction(t), ONE - self.pred(b, t)) for t in second.cuts]
            for upper, below_it in uppers:
                for lower, above_it in lowers:
                    if lower - upper > bound:
                        self.at_most(below_it + above_it, 1.0, active)
                        break
        xu, xw = self.vars[u].x, self.vars[w].x
        if xu is not None and xw is not None:
            diff = Affine({xu: 1.0, xw: -1.0})
            self.at_most(diff, radius, active)
            self.at_least(diff, -radius, active)

    def distance_column(self, pieces: list[Affine]) -> Affine:
        """A column ``d >= max(0, pieces)``; the solver keeps it at the maximum when it helps."""
        top = max([0.0] + [self.p.bounds(piece)[1] for piece in pieces])
        d = Affine.column(self.p.column(0.0, top))
        for piece in pieces:
            self.p.row(d - piece, lower=0.0)
        return d

    def feature_pieces(self, instance: str, center) -> list[list[Affine]]:
        result = []
        for f in range(self.query.n_features):
            v = self.var(instance, f)
            if isinstance(center, Row):
                result.append(self.pieces(v, center.values[f], True))
            else:
                result.append(self.pieces(v, self.var(center, f), False))
        return result

    def constraint(self, c: Constraint, active: Affine, top_level: bool) -> None:
        if isinstance(c, AnyOf):
            self.any_of(c, active)
            return
        self.conditions.append((c, active))
        if isinstance(c, Interval):
            if not top_level:
                self.require_range(self.var(c.instance, c.feature), c.lo, c.hi, active)
        elif isinstance(c, Tie):
            if not top_level:
                self.equal(self.var(c.first, c.feature), self.var(c.second, c.feature), active)
        elif isinstance(c, OneHot):
            total = Affine()
            for f in c.features:
                total = total + (ONE - self.pred(self.var(c.instance, f), 1.0))
            self.at_most(total, 1.0, active)
            self.at_least(total, 1.0, active)
        elif isinstance(c, AtMostKChanged):
            self.changed(c, active)
        elif isinstance(c, Ball):
            self.ball(c, active, top_level)
        elif isinstance(c, Linear):
            expr = Affine()
            for t in c.terms:
                expr = expr + t.coef * Affine.column(self.vars[self.var(t.instance, t.feature)].x)
            if c.op in ("<=", "=="):
                self.at_most(expr, c.rhs, active)
            if c.op in (">=", "=="):
                self.at_least(expr, c.rhs, active)
        elif isinstance(c, OutputConstraint):
            expr, lo, hi = self.term(c.term)
            margin = self.grid_margin(c)
            if c.op in ("<", "<="):
                self.at_most(expr, c.rhs + (margin if c.op == "<=" else -margin), active, hi)
            else:
                self.at_least(expr, c.rhs + (margin if c.op == ">" else -margin), active, lo)
        else:
            raise TypeError(f"unknown constraint {c!r}")

    def any_of(self, c: AnyOf, active: Affine) -> None:
        if not c.alternatives:
            self.forbid(active)
            return
        if len(c.alternatives) == 1:
            indicators = [active]
        else:
            indicators = [Affine.column(self.binary()) for _ in c.alternatives]
            total = Affine()
            for z in indicators:
                total = total + z
            self.p.row(total - active, lower=0.0)
        for alternative, z in zip(c.alternatives, indicators, strict=True):
            for inner in alternative:
                self.constraint(inner, z, False)

    def equal(self, u: int, w: int, active: Affine) -> None:
        """``x_u == x_w`` when ``active``: the same predicate on every cut of their class."""
        if u == w:
            return
        for t in sorted(set(self.vars[u].cuts) | set(self.vars[w].cuts)):
            diff = self.pred(u, t) - self.pred(w, t)
            self.at_most(diff, 0.0, active)
            self.at_least(diff, 0.0, active)
        xu, xw = self.vars[u].x, self.vars[w].x
        if xu is not None and xw is not None:
            diff = Affine({xu: 1.0, xw: -1.0})
            self.at_most(diff, 0.0, active)
            self.at_least(diff, 0.0, active)

    def changed(self, c: AtMostKChanged, active: Affine) -> None:
        """``active -> at most k units change``: one indicator per unit, off only when every
        member keeps its reference value (``ONE`` when a member cannot, ``ZERO`` when none can
        move); the members of a unit share their unit's indicator."""
        flags: list[Affine] = [ZERO] * self.query.n_features
        total = Affine()
        for unit in c.units:
            movable = []
            forced = False
            for f in unit:
                v = self.var(c.instance, f)
                var = self.vars[v]
                if isinstance(c.reference, Row):
                    r = c.reference.values[f]
                    if not var.lo <= r <= var.hi or (var.integral and r != math.floor(r)):
                        forced = True
                    elif var.lo != var.hi:
                        movable.append((v, r))
                else:
                    w = self.var(c.reference, f)
                    if w != v:
                        movable.append((v, w))
            flag = ONE if forced else ZERO
            if not forced and movable:
                flag = Affine.column(self.binary())
                for v, r in movable:
                    if isinstance(c.reference, Row):
                        self.equal_to_row(v, r, ONE - flag)
                    else:
                        self.equal(v, r, ONE - flag)
            for f in unit:
                flags[f] = flag
            total = total + flag
        self.changes.append((c, flags))
        if c.k < 0:
            self.forbid(active)
            return
        self.at_most(total, float(c.k), active)

    def equal_to_row(self, v: int, r: float, active: Affine) -> None:
        var = self.vars[v]
        self.at_most(self.pred(v, r), 0.0, active)  # x >= r
        self.at_least(self.pred(v, var.after(r)), 1.0, active)  # x < after(r)
        if var.x is not None:
            self.at_most(Affine.column(var.x), r, active)
            self.at_least(Affine.column(var.x), r, active)

    def ball(self, c: Ball, active: Affine, top_level: bool) -> None:
        if c.radius < 0:
            self.forbid(active)
            return
        if c.norm == "linf" and isinstance(c.center, Row):
            if not top_level:
                for f, center in enumerate(c.center.values):
                    self.require_range(
                        self.var(c.instance, f), *ball_interval(center, c.radius), active
                    )
            return
        if math.isinf(c.radius):
            return
        if c.norm == "linf":  # between instances
            for f in range(self.query.n_features):
                u, w = self.var(c.instance, f), self.var(c.center, f)
                if u != w:
                    self.finite(u)
                    self.finite(w)
                self.ball_between(u, w, c.radius, active)
            return
        per_feature = self.feature_pieces(c.instance, c.center)
        total = Affine()
        for pieces in per_feature:
            if pieces:
                total = total + self.distance_column(pieces)
        self.at_most(total, c.radius, active)

    # -- goal ---------------------------------------------------------------------------------

    def distance_step(self, goal: MinimizeDistance) -> float:
        values: list[float] = []
        for f in range(self.query.n_features):
            values += _distance_values(self.vars[self.var(goal.instance, f)])
            if isinstance(goal.center, Row):
                values.append(goal.center.values[f])
            else:
                values += _distance_values(self.vars[self.var(goal.center, f)])
        low = lowest_bit([v for v in values if math.isfinite(v)])
        return 2.0**low if low is not None else 1.0

    def goal(self) -> float:
        goal = self.query.goal
        if isinstance(goal, Maximize):
            expr, _, _ = self.term(goal.term)
            self.p.objective(expr, -1.0)
            return -1.0
        if isinstance(goal, MinimizeDistance):
            self.step = self.distance_step(goal)
            per_feature = [p for p in self.feature_pieces(goal.instance, goal.center) if p]
            if goal.norm == "l1":
                total = Affine()
                for pieces in per_feature:
                    total = total + self.distance_column(pieces)
                self.p.objective(total)
            else:
                everything = [piece for pieces in per_feature for piece in pieces]
                self.p.objective(self.distance_column(everything))
            return 1.0
        if isinstance(goal, Find):
            return 0.0
        raise TypeError(f"unknown goal {goal!r}")


def _distance_values(var: Var) -> list[float]:
    return [var.lo, var.hi, *var.cuts, *(var.below(t) for t in var.cuts)]


def formulate(query: Query, deadline: Deadline | None = None) -> Formulation:
    """The MILP of ``query``; raises :class:`Infeasible` when the bounds alone are empty or a
    top-level constraint fails on constants, and :class:`OutOfTime` once ``deadline`` passes."""
    deadline = deadline or Deadline()
    b = _Builder(query, deadline)
    b.number_vars()
    b.hull = hull_size(query, b.pairs, b.constraints)
    for var in b.vars:
        if var.lo == var.hi and math.isinf(var.lo):
            var.infinite = True  # its one value is an infinity, outside every hull
            continue
        var.clamped = var.lo < -b.hull or var.hi > b.hull
        var.lo, var.hi = max(var.lo, -b.hull), min(var.hi, b.hull)
        if var.lo > var.hi:
            # A domain wholly beyond the hull: only past MAX_HULL, whose bounds it leaves out.
            raise UnsupportedQuery(
                f"query {query.name}: feature {query.features[var.feature].name} lies wholly "
                f"beyond {b.hull:g}, which the MILP engine cannot hold"
            )
    b.relations()
    b.make_predicates()
    b.value_columns()
    b.make_leaves()
    for c in b.constraints:
        deadline.check()
        b.constraint(c, ONE, True)
    b.step = None
    sense = b.goal()
    deadline.check()
    return Formulation(
        program=b.p.freeze(),
        constraints=b.constraints,
        sense=sense,
        vars=b.vars,
        var_of=b.var_of,
        leaves=b.leaves,
        conditions=b.conditions,
        changes=b.changes,
        partners=b.partners,
        complex=b.complex,
        binaries=b.binaries,
        hull=b.hull,
        notes=sorted(set(b.notes)),
        step=b.step,
    )


def _walk_nested(constraints, nested: bool = False):
    """Yield ``(constraint, nested)`` for every constraint, descending into disjunctions."""
    for c in constraints:
        yield c, nested
        if isinstance(c, AnyOf):
            for alternative in c.alternatives:
                yield from _walk_nested(alternative, True)
