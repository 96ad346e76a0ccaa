"""The query as CNF: the order encoding of the inputs, the trees, and the input constraints.

Variables
    One per (instance, feature), except that instances tied by a top-level :class:`Tie` share
    one (the query's variable table, ``ir.reductions.MergeTies``). A variable's value is known
    only up to its *cell* (:mod:`.grid`): literal ``k`` of a variable means ``x >= c_k``, and
    literal ``k + 1`` implies literal ``k``.
Trees (:mod:`.trees`)
    One literal per leaf, for every tree of every (model, instance) pair the query reads.
Input constraints (:mod:`.constraints`)
    Cut points, comparisons of cells, cardinality constraints and selector literals, each
    guarded by a literal.
Decoding (:mod:`.decode`)
    A model of the clauses fixes a cell per variable; :meth:`Encoding.witness` picks float32
    values in those cells that satisfy every input constraint.

Output constraints are recorded with their guard and encoded by the engine (:mod:`.linear`),
which owns the rounding. Everything here is exact. This module holds what the three parts share:
the variables, their literals and clauses, and the cut points of every feature.
"""

from __future__ import annotations

import itertools

import numpy as np

from veritas_dsl.float32 import ball_interval
from veritas_dsl.ir.query import (
    AtMostKChanged,
    Ball,
    Constraint,
    Interval,
    MinimizeDistance,
    OneHot,
    Query,
    Reference,
    Row,
    output_terms,
    walk,
    weight_of,
)
from veritas_dsl.ir.reductions import variables_of
from veritas_dsl.solvers.base import Deadline
from veritas_dsl.solvers.sat.constraints import GuardedOutput, InputConstraints
from veritas_dsl.solvers.sat.decode import Decoding
from veritas_dsl.solvers.sat.grid import Domain, Grid, GridBuilder
from veritas_dsl.solvers.sat.trees import TreeClauses


class Encoding(TreeClauses, InputConstraints, Decoding):
    """The clauses of a query, the literals they use, and the way back to float32 inputs.

    Building it raises :class:`~veritas_dsl.solvers.base.OutOfTime` once ``deadline`` passes.

    Attributes
    ----------
    clauses : list of list of int
        DIMACS clauses produced so far; the engine moves them into the solver.
    true : int
        A literal fixed to true (constant conditions become ``true`` or ``-true``).
    var : int array, shape (n_instances, n_features)
        The variable of each (instance, feature).
    grids : list of Grid
        One per feature.
    order : list of list of int
        ``order[v][k - 1]`` is the literal ``x_v >= grids[f].cuts[k - 1]``.
    leaves : dict of (model, instance) to int array, shape (n_nodes,)
        The literal of every leaf of that model on that instance (0 at inner nodes).
    outputs : list of GuardedOutput
        Output constraints left for the engine to encode.
    pairs : set of (int, int)
        Variables the witness must place at the closest points of their cells (ties, change
        counts and distances between instances).
    preference : list of float
        The value each variable takes when its cell allows (a distance's center, a change
        count's reference, else 0).
    """

    def __init__(self, query: Query, deadline: Deadline | None = None) -> None:
        self.query = query
        self.deadline = deadline or Deadline()
        self.constraints = query.constraints
        self.top = 0
        self.clauses: list[list[int]] = []
        self.true = self.new_var()
        self.clauses.append([self.true])
        table = variables_of(query, bounds=False)
        self.var = table.var
        self.n_vars = table.n_vars
        feature_of = np.zeros(self.n_vars, dtype=np.int64)
        feature_of[table.var] = np.arange(query.n_features)
        self.feature_of = feature_of.tolist()
        self.grids = _grids(query, self.constraints)
        self.order = [self._order_literals(v) for v in range(self.n_vars)]
        self.leaves: dict[tuple[str, str], np.ndarray] = {}
        self._boxes: dict[tuple[str, int], list] = {}
        self.outputs: list[GuardedOutput] = []
        self.pairs: set[tuple[int, int]] = set()
        self.preference = _preferences(query, self.constraints, self.var, self.n_vars)
        for model_name, instance in sorted(
            {(a.model, a.instance) for term in output_terms(query) for a in term.atoms}
        ):
            self.encode_trees(model_name, instance)
        for constraint in self.constraints:
            self.deadline.check()
            self.encode(constraint, 0)
        goal = query.goal
        if isinstance(goal, MinimizeDistance) and not isinstance(goal.center, Row):
            # The distance between two instances is searched over the gaps of their cells, so
            # every witness must sit at the closest points of its cells.
            first, second = (query.instances.index(n) for n in (goal.instance, goal.center))
            for a, b in zip(self.var[first], self.var[second], strict=True):
                if a != b:
                    self.pairs.add((int(min(a, b)), int(max(a, b))))

    # -- literals and clauses ----------------------------------------------------------------

    def new_var(self) -> int:
        self.top += 1
        return self.top

    def clause(self, literals, guard: int = 0) -> None:
        """Add ``guard -> (l1 or l2 or ...)``; constant literals are simplified away."""
        kept = []
        for literal in literals:
            if literal == self.true:
                return
            if literal != -self.true:
                kept.append(literal)
        if guard:
            kept.append(-guard)
        self.clauses.append(kept or [-self.true])

    def constant(self, value: bool) -> int:
        return self.true if value else -self.true

    def _order_literals(self, v: int) -> list[int]:
        literals = [self.new_var() for _ in self.grids[self.feature_of[v]].cuts]
        for lower, upper in itertools.pairwise(literals):
            self.clauses.append([-upper, lower])
        if self.grids[self.feature_of[v]].domain.empty:
            self.clauses.append([-self.true])
        return literals

    def ge(self, v: int, value: float) -> int:
        """The literal of ``x_v >= value``."""
        grid = self.grids[self.feature_of[v]]
        cut = grid.domain.ge(value)
        if isinstance(cut, bool):
            return self.constant(cut)
        return self.order[v][grid.index(cut) - 1]

    def le(self, v: int, value: float) -> int:
        """The literal of ``x_v <= value``."""
        grid = self.grids[self.feature_of[v]]
        cut = grid.domain.le(value)
        if isinstance(cut, bool):
            return self.constant(not cut)
        return -self.order[v][grid.index(cut) - 1]

    def variable(self, instance: str, feature: int) -> int:
        return int(self.var[self.query.instances.index(instance), feature])


def _grids(query: Query, constraints: tuple[Constraint, ...]) -> list[Grid]:
    """The cut points of every feature: splits, bounds, balls and references."""
    builders = [GridBuilder(Domain.of(feature)) for feature in query.features]
    for model in query.models.values():
        for f, t in zip(model.feature, model.threshold, strict=True):
            if f >= 0:
                builders[f].ge(float(t))
    for c in walk(constraints):
        if isinstance(c, OneHot):
            for f in c.features:
                builders[f].ge(1.0)
        elif isinstance(c, Interval):
            builders[c.feature].ge(c.lo)
            builders[c.feature].le(c.hi)
        elif isinstance(c, AtMostKChanged) and isinstance(c.reference, Row):
            for f, r in enumerate(c.reference.values):
                builders[f].ge(r)
                builders[f].le(r)
        elif isinstance(c, Ball) and c.norm == "linf" and isinstance(c.center, Row):
            for f, center in enumerate(c.center.values):
                lo, hi = ball_interval(center, c.radius, weight_of(c.weights, f))
                if lo <= hi:
                    builders[f].ge(lo)
                    builders[f].le(hi)
    return [builder.build() for builder in builders]


def _preferences(query: Query, constraints, var: np.ndarray, n_vars: int) -> list[float]:
    """The value each variable prefers inside its cell: the center of the goal's distance, else
    of a ball, else the reference of a change count, else 0."""
    preferred: list[float | None] = [None] * n_vars
    sources: list[tuple[str, Reference]] = []
    goal = query.goal
    if isinstance(goal, MinimizeDistance):
        sources.append((goal.instance, goal.center))
    sources += [(c.instance, c.center) for c in walk(constraints) if isinstance(c, Ball)]
    sources += [
        (c.instance, c.reference) for c in walk(constraints) if isinstance(c, AtMostKChanged)
    ]
    for instance, reference in sources:
        if not isinstance(reference, Row):
            continue
        i = query.instances.index(instance)
        for f, r in enumerate(reference.values):
            v = int(var[i, f])
            if preferred[v] is None:
                preferred[v] = r
    return [0.0 if p is None else p for p in preferred]
