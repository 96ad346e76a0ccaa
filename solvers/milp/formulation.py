"""A query as a mixed-integer linear program: the formulation of Kantchelian et al. (2016),
extended to every construct of the query IR.

This module holds the hull, the goal and :func:`formulate`; the builder's layers below it write the
rest: :mod:`~veritas_dsl.solvers.milp.predicates` (input variables, cuts and predicates),
:mod:`~veritas_dsl.solvers.milp.trees` (leaf columns and output terms) and
:mod:`~veritas_dsl.solvers.milp.constraints` (one writer per constraint class).

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
    An ``l2`` distance is minimised as its square: per segment an exact rational constant, on
    the predicates too (:meth:`Predicates.squared_gap`), rounded once per coefficient.

Output constraints
    A model output is ``base + sum(value * leaf)``, so a term takes finitely many values, one per
    leaf combination, and all of them (and the right-hand side) are integer multiples of
    ``g = 2**E``, with ``E`` the lowest set bit of any leaf value, coefficient, constant or
    right-hand side involved. ``term < rhs`` is therefore ``term <= rhs - g/2`` and
    ``term <= rhs`` is ``term <= rhs + g/2``: each row sits half a grid step from every value a
    term can take, which is as far from the solver's tolerance as possible, unless the float64
    sum of the semantics can lie further from the real sum (``Trees.rounding``): the row then
    accepts that far beyond ``rhs``. The witness is then re-checked on the model in float64 (the
    semantics); a leaf combination that fails is cut off and the program solved again.

Disjunctions
    One indicator per alternative, at least one of them 1, and every constraint of an
    alternative written as a big-M row that binds only when its indicator is 1 (the big-M from
    column bounds, or per tree for output terms).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from veritas_dsl.ir.query import (
    AtMostKChanged,
    Ball,
    Constraint,
    Find,
    Interval,
    Linear,
    Maximize,
    MaximizeMin,
    MinimizeDistance,
    Query,
    Row,
    output_terms,
    walk,
    weight_of,
)
from veritas_dsl.solvers.base import Deadline, UnsupportedQuery
from veritas_dsl.solvers.milp.constraints import Constraints
from veritas_dsl.solvers.milp.predicates import Var
from veritas_dsl.solvers.milp.program import ONE, Affine, Program, power_of_two
from veritas_dsl.solvers.milp.trees import TreeLeaves, lowest_bit


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
    squared : bool
        Whether the objective is the square of the goal's value (an ``l2`` distance): the
        solver's objectives and bounds are squares, the witnesses' values distances.
    notes : list of str
        Caveats to report (a linear constraint on a feature the hull bounded).
    unit : float
        The goal value one unit of the program's objective stands for: a power of two, so that
        the objective is the goal's value (times ``sense``) divided by it exactly. The solvers'
        tolerances are absolute (1e-9), so the objective is written in units of the goal's own
        magnitude (:meth:`_Builder.distance_unit`, :meth:`_Builder.terms_in_units`).
    rounding : float
        For an output goal, how far the semantics' float64 value of a point may lie from the
        real value the program gives it (:meth:`Trees.rounding`): when a term's trees nearly
        cancel (a forest before and after a deletion), the two differ by more than its unit.
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
    squared: bool = False
    unit: float = 1.0
    rounding: float = 0.0


def used_pairs(query: Query) -> list[tuple[str, str]]:
    """The (model, instance) pairs whose outputs the query reads, in a stable order."""
    return sorted({(a.model, a.instance) for t in output_terms(query) for a in t.atoms})


#: The largest hull the solvers represent: HiGHS reads bounds from 1e20 on as infinite, and far
#: below that a float64 program can no longer tell the hull's end from the float32 steps near it.
MAX_HULL = 2.0**60


def hull_size(query: Query, pairs, constraints: tuple[Constraint, ...]) -> float:
    """A power of two ``H`` beyond four times every constant of the query.

    Bounds past :data:`MAX_HULL` (a domain such as ``int in [-1e308, 1e308]``) are left out: the
    hull clamps such a variable like an unbounded one, and so are a ball's reaches past it (its
    radius over a feature's weight). Any other constant past it (a threshold, a row value or a
    linear constraint) is refused: the program could not hold it.
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
            # How far the ball reaches along each feature; past MAX_HULL it is left out, as
            # bounds are: within the hull it then bounds nothing (a closest-example box grows
            # that far along a feature of weight 1e-16 long before the others need it).
            reach = [abs(c.radius) / w for w in (c.weights or (1.0,))]
            bounds += [r for r in reach if r <= MAX_HULL / 8]
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


#: The distance weights (1 / scale) the program holds. Written in units of the goal's own
#: magnitude (``Formulation.unit``), a feature's weight divided by that unit must stay a float64
#: with room for the hull's size: past about 2**500 apart the products overflow (weights of
#: 5.7e289 and 3.8e-137 made a row of NaN). Within these, scales from 1e-100 to 1e100 were
#: answered as the oracle answers them.
WEIGHT_RANGE = (2.0**-300, 2.0**300)


def check_weights(query: Query) -> None:
    """Refuse distance weights outside :data:`WEIGHT_RANGE`."""
    found = [c.weights for c in walk(query.constraints) if isinstance(c, Ball)]
    if isinstance(query.goal, MinimizeDistance):
        found.append(query.goal.weights)
    lo, hi = WEIGHT_RANGE
    for weights in found:
        if weights is not None and not all(lo <= w <= hi for w in weights):
            raise UnsupportedQuery(
                f"query {query.name}: the MILP engine takes distance scales within "
                f"[{1 / hi:g}, {1 / lo:g}] (weights 2**-300 to 2**300): past them its "
                "program cannot hold the weighted distances"
            )


class _Builder(Constraints):
    """Builds a :class:`Formulation`; one instance per query. The variables, trees and
    constraints are written by its bases; the goal here."""

    def distance_step(self, goal: MinimizeDistance) -> float:
        values: list[float] = []
        for f in range(self.query.n_features):
            values += _distance_values(self.vars[self.var(goal.instance, f)])
            if isinstance(goal.center, Row):
                values.append(goal.center.values[f])
            else:
                values += _distance_values(self.vars[self.var(goal.center, f)])
        low = lowest_bit([v for v in values if math.isfinite(v)])
        # Weighted, the distances leave the grid; a step of one coordinate is still the least
        # by which the solver may stop short (see highs.OPTIONS).
        return (2.0**low if low is not None else 1.0) * min(goal.weights or (1.0,))

    def distance_unit(self, goal: MinimizeDistance) -> float:
        """The power of two the distance is measured in: distances far below the solvers'
        absolute tolerances (a scale of 1e13, features in tiny units) would otherwise all look
        alike to them, and far above them (a scale of 1e-13) cost them their precision.

        Around a row, it is the largest weighted distance one feature can contribute within the
        variables' bounds: inside a box of a closest-example search, about the box's radius,
        which the optimum exceeds a quarter of. Between two instances nothing tells the
        optimum's size ahead (two points a float32 step apart are common), so the weights alone
        are divided out, leaving the features' own units.
        """
        if not isinstance(goal.center, Row):
            return power_of_two(max(goal.weights or (1.0,)))
        largest = 0.0
        for f, c in enumerate(goal.center.values):
            var = self.vars[self.var(goal.instance, f)]
            extent = max(abs(var.hi - c), abs(c - var.lo))
            if math.isfinite(extent):
                largest = max(largest, extent * weight_of(goal.weights, f))
        return power_of_two(largest)

    def objective_l2(self, goal: MinimizeDistance) -> None:
        """The squared distance (:attr:`Formulation.squared`), in units of the square of the
        distance's unit: per feature, its squared-gap constants on the predicates. Without a
        grid step (:attr:`Formulation.step` None): squares of distances a float32 step apart
        differ below the solver's resolution, so the optimum is the solver's to it and its
        bound stays the lower one (``Progress.result``)."""
        own = self.var_of[self.query.instances.index(goal.instance)]
        if self.complex.intersection(map(int, own)):
            raise UnsupportedQuery(
                f"query {self.query.name}: the MILP engine measures an l2 distance only on "
                "features no linear constraint or second partner gives a value column"
            )
        self.unit = self.distance_unit(goal) ** 2
        self.squared = True
        total = Affine()
        for f, c in enumerate(goal.center.values):
            scale = Fraction(weight_of(goal.weights, f)) ** 2 / Fraction(self.unit)
            total = total + self.squared_gap(self.var(goal.instance, f), c, scale)
        self.p.objective(total)

    def epigraph(self, terms: list[tuple[Affine, float, float]]) -> Affine:
        """A column ``t <= term`` for every term (expression, bottom, top): maximised, ``t`` is
        the least term's value. Its bounds, the terms' least bottom and least top, widened by far
        more than the rounding of those sums, never cut a value ``t`` can take."""
        lo = min(bottom for _, bottom, _ in terms)
        hi = min(top for _, _, top in terms)
        t = Affine.column(self.p.column(lo - 1e-6 * (1 + abs(lo)), hi + 1e-6 * (1 + abs(hi))))
        for expr, _, _ in terms:
            self.p.row(t - expr, upper=0.0)
        return t

    def terms_in_units(self, terms) -> list[tuple[Affine, float, float]]:
        """Output terms (expression, bottom, top) divided by :attr:`unit`, a power of two near
        their largest leaf value, for the reason :meth:`distance_unit` gives."""
        exprs = [self.term(term) for term in terms]
        self.goal_rounding = max(self.rounding(term) for term in terms)
        coefs = [abs(c) for expr, _, _ in exprs for c in expr.terms.values()]
        self.unit = power_of_two(max(coefs, default=0.0))
        scale = 1.0 / self.unit
        return [(expr * scale, lo * scale, hi * scale) for expr, lo, hi in exprs]

    def goal(self) -> float:
        """The objective (in units of :attr:`unit`) and its sense."""
        goal = self.query.goal
        self.unit, self.goal_rounding = 1.0, 0.0
        if isinstance(goal, Maximize):
            ((expr, _, _),) = self.terms_in_units([goal.term])
            self.p.objective(expr, -1.0)
            return -1.0
        if isinstance(goal, MaximizeMin):
            self.p.objective(self.epigraph(self.terms_in_units(goal.terms)), -1.0)
            return -1.0
        if isinstance(goal, MinimizeDistance) and goal.norm == "l2":
            self.objective_l2(goal)
            return 1.0
        if isinstance(goal, MinimizeDistance):
            self.step = self.distance_step(goal)
            self.unit = self.distance_unit(goal)
            per_feature = [
                [piece * (weight_of(goal.weights, f) / self.unit) for piece in pieces]
                for f, pieces in enumerate(self.feature_pieces(goal.instance, goal.center))
                if pieces
            ]
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
    deadline.check()
    b = _Builder(query, deadline, used_pairs(query))
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
    b.step, b.squared = None, False
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
        squared=b.squared,
        unit=b.unit,
        rounding=b.goal_rounding,
    )
