"""One conjunction of a query, turned into the flat arrays the kernels read.

The steps, in order, each in the module named (this one runs them, :func:`build_problem`):

1. **Variables** and 2. **static box**: read from the conjunction's variable table
   (``ir.reductions.MergeTies`` and ``StaticBounds``): pairs tied by a :class:`Tie` share a
   variable, and each variable has a closed float32 interval.
3. **Terms** (:mod:`.terms`). The objective (a maximisation) and every output constraint
   (normalised to ``term >= c`` or ``term > c``) are terms ``k = 0..K-1``. Each (model, instance,
   tree) the terms read becomes a search tree whose leaf carries the vector of its contributions
   ``coef * leaf_value[output]`` to every term; trees that contribute nothing are dropped. On a
   query of one instance, trees of the same shape that no term reads together become one search
   tree (:mod:`.sharing`): the variants of a deletion family share their unmoved trees.
4. **Cells** (:mod:`.cells`). A variable's thresholds (rounded up to integers for int and bool
   variables, where ``x < t`` means ``x < ceil(t)``) and its static bounds cut its line into
   cells; splits become integer ranks.
5. **Compaction** (:mod:`.trees`). Every tree is copied with the splits the static box decides
   removed, so each remaining path is feasible. A tree read on two instances with tied features
   becomes one product tree: the second copy hangs under each leaf of the first, where the tied
   splits are already decided, so ``T(x2) - T(x1)`` of a tree whose features are all tied is 0,
   not ``max - min``.
6. **Units** (:mod:`.trees`). Leaf contributions are scaled by ``2**q`` to int64. ``q`` is chosen
   so that the scaling is exact and sums cannot overflow; when no such ``q`` exists (leaf values
   spanning more than ~60 binary orders of magnitude) values are rounded up, bounds stay sound,
   and pruning keeps a margin of one unit per tree.
7. **Lifted constraints** (:mod:`.lifted`). One-hot groups, resources (change counts and
   distances to a reference, including the distance being minimised) and linear inequalities
   become arrays.

Steps 3 to 6 are memoised per model (:mod:`.memo`): the queries and rows of a spec that read a
model with the same terms share its leaf contributions and merged trees, and under the same
static box with the same leaf contributions, its arrays. Steps 4
and 5 depend on the model and the box only, and :func:`build_structure` builds them ahead of a
model's first query (``AStarEngine.prepare``).

Combinations whose least cost over a box would not be exact are refused with
:class:`UnsupportedQuery` (see ``lifted._refuse``), so a complete state always has a point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property

import numpy as np

from veritas_dsl.ir.query import Constraint, MinimizeDistance, OutputConstraint, OutputTerm, Query
from veritas_dsl.ir.reductions import variables_of
from veritas_dsl.ir.root import Root
from veritas_dsl.solvers.astar import kernels as K
from veritas_dsl.solvers.astar.lifted import (
    Resource,
    groups_of,
    lifted_arrays,
    linear_of,
    resources_of,
)
from veritas_dsl.solvers.astar.memo import cells_and_trees, search_trees, shared_copies
from veritas_dsl.solvers.astar.terms import (
    constant_part,
    fill_terms,
    level_constants,
    plan_terms,
)
from veritas_dsl.solvers.lazy import LAZY_FROM


@dataclass(frozen=True)
class Plan:
    """What a branch search optimises: built once per query from its goal.

    ``mode`` is one of the kernels' ``MODE_*``. ``objective`` is the term to maximise (a
    minimisation reaches the engine as the maximisation of the negated term:
    ``ir.reductions.MinimizeToMaximize``); with ``worst_of``, the least of it and those terms
    (:class:`~veritas_dsl.ir.query.MaximizeMin`). ``distance`` is the goal of a
    closest-example query. ``pair_trees`` (``"auto"``, ``"always"``, ``"never"``) says whether a
    maximisation of one term, or a find with one output constraint, merges pairs of trees into
    product trees (:func:`.trees.pair_trees`; ``"auto"``: deep trees only).
    """

    mode: int
    objective: OutputTerm | None = None
    distance: MinimizeDistance | None = None
    worst_of: tuple[OutputTerm, ...] = ()
    pair_trees: str = "auto"

    @property
    def objectives(self) -> tuple[OutputTerm, ...]:
        """The terms whose least value is maximised (none outside maximisation)."""
        return () if self.objective is None else (self.objective, *self.worst_of)


@dataclass
class Problem:
    """The arrays of one branch, and what is needed to read answers back.

    ``var[i, f]`` is the variable of instance ``i``, feature ``f``. ``cell_lo``/``cell_hi`` are the
    float32 bounds of cells (see :mod:`kernels`). ``term_constant[k]`` is term ``k``'s constant
    part (its own constant and the models' base scores) as an exact rational, and
    ``scale = 2**q`` turns units into term values. ``lazy`` maps the output constraints a
    search starts without (their index in ``constraints``) to their terms: all of them when
    there are :data:`~veritas_dsl.solvers.lazy.LAZY_FROM` or more, as the points found usually
    meet most (:class:`~.search.BranchSearch`). ``infeasible`` is True when the static box is
    empty; nothing else is then filled in.
    """

    query: Query
    constraints: tuple[Constraint, ...]
    plan: Plan
    var: np.ndarray
    n_vars: int
    integral: np.ndarray
    infeasible: bool = False
    cell_ptr: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int32))
    cell_lo: np.ndarray = field(default_factory=lambda: np.zeros(0))
    cell_hi: np.ndarray = field(default_factory=lambda: np.zeros(0))
    root: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    trees: tuple = ()
    lifted: tuple = ()
    lifted_resources: tuple | None = None
    terms: tuple = ()
    params: np.ndarray = field(default_factory=lambda: np.zeros(K.N_PARAMS, np.int64))
    u_base: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    term_constant: tuple[Fraction, ...] = ()
    term_slack_value: tuple[float, ...] = ()
    scale: float = 1.0
    exact_units: bool = True
    groups: tuple[tuple[int, ...], ...] = ()
    resources: tuple[Resource, ...] = ()
    linear: tuple[tuple[tuple[tuple[int, float], ...], float], ...] = ()
    n_trees: int = 0
    lazy: dict[int, int] = field(default_factory=dict)

    @property
    def n_terms(self) -> int:
        return len(self.term_constant)

    @cached_property
    def most_cells(self) -> int:
        """The most cells a variable has (read once the cells are built; the search's memory
        accounting asks for it between kernel calls)."""
        return int(np.diff(self.cell_ptr).max(initial=0))

    @property
    def objective_slack(self) -> float:
        """The float64 rounding a maximised value may hide: the largest slack of the objectives
        (one term, or the terms of a min, whose key is their least bound)."""
        return max(self.term_slack_value[: len(self.plan.objectives)], default=0.0)

    def nbytes(self) -> int:
        """Bytes held by the static arrays."""
        arrays = [self.cell_ptr, self.cell_lo, self.cell_hi, self.root, self.params]
        held = (*self.trees, *self.lifted, *(self.lifted_resources or ()), *self.terms)
        arrays += [a for a in held if isinstance(a, np.ndarray)]
        return int(sum(a.nbytes for a in arrays))


def build_problem(query: Query, plan: Plan) -> Problem:
    """The arrays of ``query``, one conjunction (no :class:`AnyOf`) with its variable table
    (:func:`~veritas_dsl.ir.reductions.variables_of`), under ``plan``."""
    problem, read = _read_trees(query, plan)
    if problem.infeasible:
        return problem
    constraints = query.constraints
    var, n_vars, integral = problem.var, problem.n_vars, problem.integral
    lo, hi, terms, signs, strict, rhs, searched, copies = read
    # pairs of trees merge for one term only, maximised or, in a find, an output constraint's
    # slack: it is what they bound
    single = plan.mode in (K.MODE_MAXIMIZE, K.MODE_FIND) and not plan.worst_of and len(terms) == 1
    pairing = plan.pair_trees if single else "never"
    q, max_leaves, max_depth = search_trees(problem, searched, copies, lo, hi, len(terms), pairing)
    cell_ptr, cell_lo, cell_hi = problem.cell_ptr, problem.cell_lo, problem.cell_hi
    fill_terms(problem, terms, signs, strict, rhs, q)
    outputs = [i for i, c in enumerate(constraints) if isinstance(c, OutputConstraint)]
    if len(outputs) >= LAZY_FROM:
        first = len(plan.objectives)  # terms: the objectives, then the output constraints
        problem.lazy = {i: first + j for j, i in enumerate(outputs)}

    groups = groups_of(query, constraints, var)
    resources = resources_of(query, constraints, plan, var, groups)
    linear = linear_of(query, constraints, var, groups, resources)
    problem.groups, problem.resources, problem.linear = groups, resources, linear
    problem.lifted, problem.lifted_resources = lifted_arrays(
        n_vars, cell_ptr, cell_lo, cell_hi, integral, groups, resources, linear
    )
    goal = next((r for r, res in enumerate(resources) if res.goal), -1)
    params = np.zeros(K.N_PARAMS, dtype=np.int64)
    params[K.P_MODE] = plan.mode
    params[K.P_GOAL] = goal
    params[K.P_MARGIN] = 0 if problem.exact_units else problem.n_trees
    params[K.P_DIVE_NUM] = 1
    params[K.P_DIVE_DEN] = 1
    params[K.P_MAX_LEAVES] = max_leaves
    params[K.P_MAX_DEPTH] = max_depth
    problem.params = params
    return problem


def build_structure(query: Query, plan: Plan) -> None:
    """Build (and memoise, :mod:`.memo`) the cells and compacted trees that
    :func:`build_problem` of ``query`` reads (steps 4-5), and nothing that depends on the
    query's terms: a model's structure ahead of its first query."""
    problem, read = _read_trees(query, plan)
    if not problem.infeasible:
        lo, hi, *_, searched, copies = read
        cells_and_trees(problem, searched, copies, lo, hi)


def _read_trees(query: Query, plan: Plan) -> tuple[Problem, tuple]:
    """Steps 1-3: the problem with its variables and terms' constants, and ``(lo, hi, terms,
    signs, strict, rhs, query, copies)``: the static box, the terms in maximisation form, and
    the trees they read (the query with the models :func:`share_trees` and
    :func:`level_constants` add)."""
    table = variables_of(query)
    problem = Problem(query, query.constraints, plan, table.var, table.n_vars, table.integral)
    if table.empty:
        problem.infeasible = True
        return problem, ()
    outputs = tuple(c for c in query.constraints if isinstance(c, OutputConstraint))
    terms, signs, strict, rhs = plan_terms(plan, outputs)
    problem.term_constant = tuple(
        constant_part(query, term, sign) for term, sign in zip(terms, signs, strict=True)
    )
    searched, copies = shared_copies(query, terms, signs)
    searched, copies = level_constants(problem, searched, copies, len(plan.objectives))
    return problem, (table.lo, table.hi, terms, signs, strict, rhs, searched, copies)


def key_bound(problem: Problem, mode: int, key: int) -> float:
    """The goal's value a search key of ``problem`` stands for: an upper bound on what its state
    holds (max form), or a lower bound on its distance."""
    if mode == K.MODE_DISTANCE:
        value = K.decode_distance(-key)
        if _squared(problem):  # a squared cost, rounded to nearest: one step down is below the
            return Root(max(0.0, math.nextafter(value, -math.inf))).down()  # exact; its root
        return value
    exact = Fraction(key) / Fraction(problem.scale) + problem.term_constant[0]
    return float(exact) + problem.objective_slack


def cut_key(problem: Problem, mode: int, best: float) -> int:
    """The key below which no state of ``problem`` can beat ``best``, the inverse of
    :func:`key_bound` rounded so that no state that might is cut."""
    if mode == K.MODE_DISTANCE:
        if _squared(problem):  # the square of best, rounded up: a state below it might beat it
            square = Fraction(best) ** 2
            best = float(square)
            if Fraction(best) < square:
                best = math.nextafter(best, math.inf)
        return -int(K.encode_distance(best))
    target = (Fraction(best) - problem.term_constant[0]) * Fraction(problem.scale)
    return math.floor(target) - math.ceil(problem.objective_slack * problem.scale) - 1


def _squared(problem: Problem) -> bool:
    """Whether the search's distance cost is the square of the goal's (an ``l2`` goal)."""
    distance = problem.plan.distance
    return distance is not None and distance.norm == "l2"
