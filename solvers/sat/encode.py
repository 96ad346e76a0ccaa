"""The query as CNF: the order encoding of the inputs, the trees, and the input constraints.

Variables
    One per (instance, feature), except that instances tied by a top-level :class:`Tie` share
    one (the query's variable table, ``ir.reductions.MergeTies``). A variable's value is known
    only up to its *cell* (:mod:`.grid`): literal ``k`` of a variable means ``x >= c_k``, and
    literal ``k + 1`` implies literal ``k``.
Trees
    One literal per leaf, for every tree of every (model, instance) pair the query reads. A leaf
    holds exactly when the conditions on its path hold (``x < t`` is the negation of ``x >= t``);
    one leaf per tree holds, since two leaves disagree on the split where their paths part.
Input constraints
    Intervals and L-inf balls around a row are cut points; ties and L-inf balls between
    instances compare cells; one-hot groups and change counts are cardinality constraints;
    :class:`AnyOf` picks an alternative with selector literals, and every constraint inside an
    alternative is guarded by its selector. Hard votes (:class:`VoteMargin`) are cardinality
    constraints over one vote literal per tree.

Output constraints are recorded here with their guard and encoded by the engine
(:mod:`.linear`), which owns the rounding. Everything here is exact: a model of the clauses
fixes a cell per variable, and :meth:`Encoding.witness` picks float32 values in those cells that
satisfy every input constraint.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from pysat.card import CardEnc, EncType

from veritas_dsl.float32 import ball_interval
from veritas_dsl.ir.evaluate import leaf_votes
from veritas_dsl.ir.query import (
    AnyOf,
    AtMostKChanged,
    Ball,
    Constraint,
    Interval,
    MinimizeDistance,
    OneHot,
    OutputConstraint,
    Query,
    Reference,
    Row,
    Tie,
    VoteMargin,
    output_terms,
    walk,
)
from veritas_dsl.ir.reductions import variables_of
from veritas_dsl.solvers.base import Deadline, UnsupportedQuery
from veritas_dsl.solvers.sat.grid import Domain, Grid, GridBuilder


@dataclass(frozen=True)
class GuardedOutput:
    """An output constraint that must hold when ``guard`` is true (``guard`` 0: always)."""

    constraint: OutputConstraint
    guard: int


class Encoding:
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

    # -- trees -------------------------------------------------------------------------------

    def encode_trees(self, model_name: str, instance: str) -> np.ndarray:
        """Leaf literals of every tree of ``model_name`` on ``instance`` (encoded once)."""
        key = (model_name, instance)
        if key in self.leaves:
            return self.leaves[key]
        model = self.query.models[model_name]
        i = self.query.instances.index(instance)
        literal = np.zeros(model.n_nodes, dtype=np.int64)
        for root in model.roots:
            self.deadline.check()
            in_tree = []
            stack: list[tuple[int, tuple[int, ...]]] = [(int(root), ())]
            while stack:
                node, path = stack.pop()
                f = int(model.feature[node])
                if f < 0:
                    leaf = self.new_var()
                    literal[node] = leaf
                    in_tree.append(leaf)
                    for condition in path:
                        self.clause([-leaf, condition])
                    self.clause([leaf, *(-c for c in path)])
                    continue
                split = self.ge(int(self.var[i, f]), float(model.threshold[node]))
                stack.append((int(model.right[node]), (*path, split)))
                stack.append((int(model.left[node]), (*path, -split)))
            self.clause(in_tree)
        self.leaves[key] = literal
        return literal

    def leaf_boxes(
        self, model_name: str, tree: int
    ) -> list[tuple[int, dict[int, tuple[int, int]]]]:
        """The leaves of one tree with the cells their paths allow: ``(node, {feature: (first
        cell, last cell)})``; an unreachable leaf has an empty range."""
        key = (model_name, tree)
        if key not in self._boxes:
            model = self.query.models[model_name]
            boxes = []
            stack: list[tuple[int, dict[int, tuple[int, int]]]] = [(int(model.roots[tree]), {})]
            while stack:
                node, box = stack.pop()
                f = int(model.feature[node])
                if f < 0:
                    boxes.append((node, box))
                    continue
                grid = self.grids[f]
                cut = grid.domain.ge(float(model.threshold[node]))
                k = grid.n_cells if cut is False else 0 if cut is True else grid.index(cut)
                lo, hi = box.get(f, (0, grid.n_cells - 1))
                stack.append((int(model.right[node]), {**box, f: (max(lo, k), hi)}))
                stack.append((int(model.left[node]), {**box, f: (lo, min(hi, k - 1))}))
            self._boxes[key] = boxes
        return self._boxes[key]

    def leaf_pairs(self, model_name: str, tree: int, first: str, second: str, limit: int):
        """Literals ``p <-> leaf_a on first and leaf_b on second`` for the pairs of leaves of one
        tree that can hold together (on a variable the two instances share, their cells meet):
        ``[(p, node_a, node_b)]``, or None when there are more than ``limit``.

        Exactly one pair holds in every model. For two instances tied on most features, a tree
        that does not split on the others has only the pairs ``(a, a)``.
        """
        boxes = self.leaf_boxes(model_name, tree)
        shared = (
            self.var[self.query.instances.index(first)]
            == self.var[self.query.instances.index(second)]
        )
        leaves = self.leaves
        pairs = []
        for node_a, box_a in boxes:
            for node_b, box_b in boxes:
                if all(
                    max(box_a[f][0], box_b[f][0]) <= min(box_a[f][1], box_b[f][1])
                    for f in box_a.keys() & box_b.keys()
                    if shared[f]
                ):
                    pairs.append((node_a, node_b))
                    if len(pairs) > limit:
                        return None
        la, lb = leaves[model_name, first], leaves[model_name, second]
        result = []
        for node_a, node_b in pairs:
            a, b = int(la[node_a]), int(lb[node_b])
            p = self.new_var()
            self.clauses += [[-p, a], [-p, b], [-a, -b, p]]
            result.append((p, node_a, node_b))
        self.clause([p for p, _, _ in result])
        return result

    # -- input constraints -------------------------------------------------------------------

    def encode(self, c: Constraint, guard: int) -> None:
        """Add ``guard -> c`` (``guard`` 0: ``c`` holds)."""
        if isinstance(c, Interval):
            v = self.variable(c.instance, c.feature)
            self.clause([self.ge(v, c.lo)], guard)
            self.clause([self.le(v, c.hi)], guard)
        elif isinstance(c, Tie):
            self.equal_cells(c.feature, c.first, c.second, guard)
        elif isinstance(c, OneHot):
            hot = [self.ge(self.variable(c.instance, f), 1.0) for f in c.features]
            self.cardinality(hot, 1, guard, exactly=True)
        elif isinstance(c, AtMostKChanged):
            self.changed(c, guard)
        elif isinstance(c, Ball) and c.norm == "linf":
            self.linf_ball(c.instance, c.center, c.radius, guard)
        elif isinstance(c, OutputConstraint):
            self.outputs.append(GuardedOutput(c, guard))
        elif isinstance(c, AnyOf):
            selectors = [self.new_var() for _ in c.alternatives]
            self.clause(selectors, guard)
            for selector, alternative in zip(selectors, c.alternatives, strict=True):
                for inner in alternative:
                    self.encode(inner, selector)
        elif isinstance(c, VoteMargin):
            self.vote_margin(c, guard)
        else:
            raise TypeError(f"unknown constraint {c!r}")

    def equal_cells(self, feature: int, first: str, second: str, guard: int) -> None:
        """Add ``guard -> x_first and x_second lie in one cell``; the witness then gives both
        one value."""
        a, b = self.variable(first, feature), self.variable(second, feature)
        if a == b:
            return
        self.pairs.add((min(a, b), max(a, b)))
        for la, lb in zip(self.order[a], self.order[b], strict=True):
            self.clause([-la, lb], guard)
            self.clause([la, -lb], guard)

    def cardinality(self, literals: list[int], k: int, guard: int, exactly: bool = False) -> None:
        """``guard -> sum(literals) <= k`` (``== k`` when ``exactly``)."""
        k -= sum(1 for literal in literals if literal == self.true)
        free = [literal for literal in literals if abs(literal) != self.true]
        if k < 0 or (exactly and k > len(free)):
            self.clause([], guard)
            return
        if exactly:
            encoded = CardEnc.equals(free, k, top_id=self.top, encoding=EncType.seqcounter)
        elif k >= len(free):
            return
        else:
            encoded = CardEnc.atmost(free, k, top_id=self.top, encoding=EncType.seqcounter)
        self.top = max(self.top, encoded.nv)
        for clause in encoded.clauses:
            self.clause(clause, guard)

    def vote_margin(self, c: VoteMargin, guard: int) -> None:
        """``guard -> votes[label] - votes[other] >= k`` as ``sum over trees of [votes label] +
        [does not vote other] >= n_trees + k``: a cardinality constraint. A tree's flag for
        ``label`` implies one of its leaves that vote so, and a leaf voting ``other`` implies
        that flag, so the count is never above the true one."""
        model = self.query.models[c.model]
        literal = self.encode_trees(c.model, c.instance)
        label = leaf_votes(model)
        counted = []
        for t in range(model.n_trees):
            nodes = range(model.tree_offsets[t], model.tree_offsets[t + 1])
            leaves = [n for n in nodes if model.feature[n] < 0]
            votes_label, votes_other = self.new_var(), self.new_var()
            self.clause([-votes_label, *(int(literal[n]) for n in leaves if label[n] == c.label)])
            for n in leaves:
                if label[n] == c.other:
                    self.clause([-int(literal[n]), votes_other])
            counted += [votes_label, -votes_other]
        # at least n + k of the 2n literals: at most n - k of their negations
        self.cardinality([-lit for lit in counted], model.n_trees - c.k, guard)

    def changed(self, c: AtMostKChanged, guard: int) -> None:
        """``guard -> at most k units of c.instance differ from c.reference``.

        A flag per unit is forced on when any member moves off the reference (off the
        reference's singleton cell for a row, off the other instance's cell for an instance);
        a flag left on by the solver only over-counts, so the count stays exact.
        """
        flags = []
        for unit in c.units:
            flag = self.new_var()
            used = False
            for f in unit:
                a = self.variable(c.instance, f)
                if isinstance(c.reference, Row):
                    r = c.reference.values[f]
                    self.clause([flag, self.ge(a, r)])
                    self.clause([flag, self.le(a, r)])
                else:
                    b = self.variable(c.reference, f)
                    if a == b:
                        continue
                    self.pairs.add((min(a, b), max(a, b)))
                    for la, lb in zip(self.order[a], self.order[b], strict=True):
                        self.clause([flag, -la, lb])
                        self.clause([flag, la, -lb])
                used = True
            if used:
                flags.append(flag)
        self.cardinality(flags, c.k, guard)

    def linf_ball(self, instance: str, center: Reference, radius: float, guard: int) -> None:
        """``guard -> linf(instance, center) <= radius``, exactly on the float32 grid."""
        if radius == math.inf:
            return
        for f in range(self.query.n_features):
            a = self.variable(instance, f)
            if isinstance(center, Row):
                lo, hi = ball_interval(center.values[f], radius)
                if lo > hi:
                    self.clause([], guard)
                    return
                self.clause([self.ge(a, lo)], guard)
                self.clause([self.le(a, hi)], guard)
            else:
                self.cell_gap_at_most(f, a, self.variable(center, f), Fraction(radius), guard)

    def cell_gap_at_most(self, f: int, a: int, b: int, radius: Fraction, guard: int) -> None:
        """``guard -> the cells of x_a and x_b lie within radius of each other``.

        For each cut ``c_k`` of ``b``: if ``x_b >= c_k`` then ``x_a`` must reach ``c_k - radius``,
        so ``x_a`` lies in a cell whose high end is at least that: a cell from ``j*`` on, which
        is the literal ``x_a >= c_(j*)``. With the same clauses the other way round, the closest
        points of the two cells lie within ``radius``; the witness picks them (exact rationals).
        """
        if a == b:
            return
        if radius < 0:
            self.clause([], guard)
            return
        self.pairs.add((min(a, b), max(a, b)))
        grid = self.grids[f]
        highs = [grid.cell(j)[1] for j in range(grid.n_cells)]
        for first, second in ((a, b), (b, a)):
            for k, cut in enumerate(grid.cuts, start=1):
                j = _first_cell_reaching(highs, cut, radius)
                if j == 0:
                    continue
                target = self.order[second][j - 1] if j < grid.n_cells else -self.true
                self.clause([-self.order[first][k - 1], target], guard)

    def check_pairs(self) -> None:
        """Refuse what the witness cannot satisfy exactly: a feature compared between more than
        two variables (three instances), where closest points of cells need not chain."""
        per_feature: dict[int, set[tuple[int, int]]] = {}
        for a, b in self.pairs:
            per_feature.setdefault(self.feature_of[a], set()).add((a, b))
        for f, pairs in per_feature.items():
            if len(pairs) > 1:
                raise UnsupportedQuery(
                    f"query {self.query.name}: engine sat compares feature "
                    f"{self.query.features[f].name} between at most two instances"
                )

    # -- from a model back to inputs ---------------------------------------------------------

    def truth(self, model: list[int]) -> np.ndarray:
        """A solver model as a bool array indexed by variable (variables beyond it are false)."""
        truth = np.zeros(self.top + 1, dtype=bool)
        signed = np.asarray(model, dtype=np.int64)
        positive = signed[(signed > 0) & (signed <= self.top)]
        truth[positive] = True
        return truth

    def cells(self, truth: np.ndarray) -> list[int]:
        """The cell of every variable under ``truth`` (from :meth:`truth`)."""
        return [int(truth[literals].sum()) if literals else 0 for literals in self.order]

    def witness(self, truth: np.ndarray) -> dict[str, np.ndarray]:
        """Float32 inputs in the model's cells that satisfy every input constraint.

        Each variable takes the value of its cell closest to its preferred value (the center of
        a distance or the reference of a change count, else 0). Two related variables (a tie,
        a change count or a distance between instances) in one cell take one value; in
        different cells, the closest ends of their cells, so every distance between them is the
        gap of their cells.
        """
        cells = self.cells(truth)
        value = [0.0] * self.n_vars
        for v in range(self.n_vars):
            value[v] = self.grids[self.feature_of[v]].closest(cells[v], self.preference[v])
        for a, b in sorted(self.pairs):
            if cells[a] == cells[b]:
                value[b] = value[a]
            elif cells[a] < cells[b]:
                value[a], value[b] = self._cell(a, cells)[1], self._cell(b, cells)[0]
            else:
                value[a], value[b] = self._cell(a, cells)[0], self._cell(b, cells)[1]
        return {
            name: np.array([value[v] for v in self.var[i]], dtype=np.float32)
            for i, name in enumerate(self.query.instances)
        }

    def _cell(self, v: int, cells: list[int]) -> tuple[float, float]:
        return self.grids[self.feature_of[v]].cell(cells[v])

    def _integral(self, v: int) -> bool:
        return self.grids[self.feature_of[v]].domain.integral


def _first_cell_reaching(highs: list[float], cut: float, radius: Fraction) -> int:
    """The first cell whose high end is at least ``cut - radius`` (``len(highs)`` if none).

    ``highs`` rise with the cell index, so this is a binary search; comparisons are exact.
    """
    lo, hi = 0, len(highs)
    while lo < hi:
        mid = (lo + hi) // 2
        if _reaches(highs[mid], cut, radius):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _reaches(high: float, cut: float, radius: Fraction) -> bool:
    """``high >= cut - radius`` in exact arithmetic (``cut`` is a cut point: above -inf)."""
    if high == math.inf:
        return True
    if high == -math.inf or cut == math.inf:
        return False
    return Fraction(high) >= Fraction(cut) - radius


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
                lo, hi = ball_interval(center, c.radius)
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
