"""One conjunction of a query, turned into the flat arrays the kernels read.

The steps, in order:

1. **Variables** and 2. **static box**: read from the conjunction's variable table
   (``ir.reductions.MergeTies`` and ``StaticBounds``): pairs tied by a :class:`Tie` share a
   variable, and each variable has a closed float32 interval.
3. **Terms.** The objective (a maximisation) and every output constraint
   (normalised to ``term >= c`` or ``term > c``) are terms ``k = 0..K-1``. Each (model, instance,
   tree) the terms read becomes a search tree whose leaf carries the vector of its contributions
   ``coef * leaf_value[output]`` to every term; trees that contribute nothing are dropped.
4. **Cells.** A variable's thresholds (rounded up to integers for int and bool variables, where
   ``x < t`` means ``x < ceil(t)``) and its static bounds cut its line into cells; splits become
   integer ranks.
5. **Compaction.** Every tree is copied with the splits the static box decides removed, so each
   remaining path is feasible. A tree read on two instances with tied features becomes one
   product tree: the second copy hangs under each leaf of the first, where the tied splits are
   already decided, so ``T(x2) - T(x1)`` of a tree whose features are all tied is 0, not
   ``max - min``.
6. **Units.** Leaf contributions are scaled by ``2**q`` to int64. ``q`` is chosen so that the
   scaling is exact and sums cannot overflow; when no such ``q`` exists (leaf values spanning
   more than ~60 binary orders of magnitude) values are rounded up, bounds stay sound, and
   pruning keeps a margin of one unit per tree.
7. **Lifted constraints.** One-hot groups, resources (change counts and distances to a
   reference, including the distance being minimised) and linear inequalities become arrays.

Combinations whose least cost over a box would not be exact are refused with
:class:`UnsupportedQuery` (see :func:`_refuse`), so a complete state always has a point.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass, field, replace
from fractions import Fraction

import numpy as np

from veritas_dsl.float32 import next_up
from veritas_dsl.ir.query import (
    AtMostKChanged,
    Ball,
    Constraint,
    Linear,
    MinimizeDistance,
    OneHot,
    OutputConstraint,
    OutputTerm,
    Query,
    Row,
)
from veritas_dsl.ir.reductions import variables_of
from veritas_dsl.solvers.astar import kernels as K
from veritas_dsl.solvers.base import UnsupportedQuery

#: Largest product tree (in nodes, relative to its two factors) worth building.
PRODUCT_GROWTH = 4
#: Units are exact when every sum of leaf units stays below this.
UNIT_LIMIT = 2.0**61


@dataclass(frozen=True)
class Plan:
    """What a branch search optimises: built once per query from its goal.

    ``mode`` is one of the kernels' ``MODE_*``. ``objective`` is the term to maximise (a
    minimisation reaches the engine as the maximisation of the negated term:
    ``ir.reductions.MinimizeToMaximize``). ``distance`` is the goal of a closest-example query.
    """

    mode: int
    objective: OutputTerm | None = None
    distance: MinimizeDistance | None = None


@dataclass(frozen=True)
class Resource:
    """A change count or distance of ``instance`` to a reference, over variables.

    ``units[j]`` is the unit of ``pairs[j]`` in the conjunction's change counts (its index in
    ``AtMostKChanged.units``); the pairs of one unit sit next to each other.
    """

    kind: int
    bound: float
    goal: bool
    pairs: tuple[tuple[int, int, float], ...]  # (variable, reference variable or -1, constant)
    units: tuple[int, ...] = ()


@dataclass
class Problem:
    """The arrays of one branch, and what is needed to read answers back.

    ``var[i, f]`` is the variable of instance ``i``, feature ``f``. ``cell_lo``/``cell_hi`` are the
    float32 bounds of cells (see :mod:`kernels`). ``term_constant[k]`` is term ``k``'s constant
    part (its own constant and the models' base scores) as an exact rational, and
    ``scale = 2**q`` turns units into term values. ``infeasible`` is True when the static box is
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

    @property
    def n_terms(self) -> int:
        return len(self.term_constant)

    def nbytes(self) -> int:
        """Bytes held by the static arrays."""
        arrays = [self.cell_ptr, self.cell_lo, self.cell_hi, self.root, self.params]
        arrays += [a for a in (*self.trees, *self.lifted, *self.terms) if isinstance(a, np.ndarray)]
        return int(sum(a.nbytes for a in arrays))


def build_problem(query: Query, plan: Plan) -> Problem:
    """The arrays of ``query``, one conjunction (no :class:`AnyOf`) with its variable table
    (:func:`~veritas_dsl.ir.reductions.variables_of`), under ``plan``."""
    table = variables_of(query)
    constraints = query.constraints
    var, n_vars, integral = table.var, table.n_vars, table.integral
    problem = Problem(query, constraints, plan, var, n_vars, integral)
    if table.empty:
        problem.infeasible = True
        return problem
    lo, hi = table.lo, table.hi

    outputs = tuple(c for c in constraints if isinstance(c, OutputConstraint))
    terms, signs, strict, rhs = _terms(plan, outputs)
    copies = _copies(query, terms, signs)
    problem.term_constant = tuple(
        _constant(query, term, sign) for term, sign in zip(terms, signs, strict=True)
    )

    # -- cells and ranks -------------------------------------------------------------------
    split_var, split_value, node_rows = _splits(query, copies, var, integral)
    bound_var, bound_value = _bound_thresholds(lo, hi, integral)
    all_var = np.concatenate([split_var, bound_var])
    all_value = np.concatenate([split_value, bound_value])
    values, value_id = np.unique(all_value, return_inverse=True)
    keys = all_var.astype(np.int64) * len(values) + value_id
    unique_keys, key_id = np.unique(keys, return_inverse=True)
    key_var = (unique_keys // max(len(values), 1)).astype(np.int64)
    key_value = values[unique_keys % max(len(values), 1)] if len(values) else values
    var_start = np.searchsorted(key_var, np.arange(n_vars + 1))
    rank = key_id - var_start[all_var]
    n_splits = len(split_var)
    split_rank = rank[:n_splits].astype(np.int32)
    bound_rank = rank[n_splits:]

    cell_ptr = (var_start[:-1] + np.arange(n_vars)).astype(np.int32)
    cell_ptr = np.append(cell_ptr, var_start[-1] + n_vars).astype(np.int32)
    below = np.where(
        integral[key_var], key_value - 1.0, np.nextafter(key_value.astype(np.float32), -np.inf)
    )
    n_cells = int(cell_ptr[-1])
    cell_lo = np.empty(n_cells)
    cell_hi = np.empty(n_cells)
    first = cell_ptr[:-1]
    last = cell_ptr[1:] - 1
    cell_lo[first] = -math.inf
    cell_hi[last] = math.inf
    # the threshold j of variable v starts cell j + 1 and ends cell j
    thr_cell = np.arange(len(key_var)) + key_var
    cell_lo[thr_cell + 1] = key_value
    cell_hi[thr_cell] = below
    problem.cell_ptr, problem.cell_lo, problem.cell_hi = cell_ptr, cell_lo, cell_hi

    root = np.empty(2 * n_vars, dtype=np.int32)
    root[:n_vars] = 0
    root[n_vars:] = np.diff(var_start)  # the last cell of each variable
    lo_finite = np.isfinite(lo)
    hi_finite = np.isfinite(hi)
    n_lo = int(lo_finite.sum())
    root[np.nonzero(lo_finite)[0]] = bound_rank[:n_lo] + 1
    root[n_vars + np.nonzero(hi_finite)[0]] = bound_rank[n_lo:]
    problem.root = root

    # -- search trees ----------------------------------------------------------------------
    trees = _search_trees(query, copies, node_rows, split_rank, var, root, n_vars, len(terms))
    nd_var, nd_rank, nd_left, nd_right, leaf_values, tree_roots, tree_sizes = trees
    q, exact = _scale(leaf_values, nd_var, tree_roots, tree_sizes)
    units = np.ldexp(leaf_values, q)
    units = units if exact else np.ceil(units)
    leaf_units = np.ascontiguousarray(np.where((nd_var < 0)[:, None], units, 0), dtype=np.int64)
    problem.scale = math.ldexp(1.0, q)
    problem.exact_units = exact

    single = nd_var[tree_roots] < 0
    tree_of = np.repeat(np.arange(len(tree_roots)), tree_sizes)
    nonzero = np.zeros(len(tree_roots), dtype=bool)
    np.logical_or.at(nonzero, tree_of, np.any(leaf_units != 0, axis=1))
    u_base = leaf_units[tree_roots[single]].sum(axis=0) if len(tree_roots) else np.zeros(len(terms))
    problem.u_base = np.ascontiguousarray(u_base, dtype=np.int64).reshape(len(terms))
    keep = np.nonzero(~single & nonzero)[0]
    order = _order(leaf_units, nd_var, tree_roots, tree_sizes, keep)
    roots = tree_roots[order].astype(np.int32)
    sizes = tree_sizes[order]
    problem.n_trees = len(roots)

    node_tree = np.full(len(nd_var), -1, dtype=np.int64)
    if len(roots):
        starts = np.repeat(roots, sizes)
        within = np.arange(len(starts)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        node_tree[starts + within] = np.repeat(np.arange(len(roots)), sizes)
    is_split = (nd_var >= 0) & (node_tree >= 0)
    sv, sr, st = nd_var[is_split], nd_rank[is_split], node_tree[is_split]
    by = np.lexsort((sr, sv))
    vs_rank = np.ascontiguousarray(sr[by], dtype=np.int32)
    vs_tree = np.ascontiguousarray(st[by], dtype=np.int32)
    vs_ptr = np.searchsorted(sv[by], np.arange(n_vars + 1)).astype(np.int32)
    max_depth = int(K.node_depth(nd_left, nd_right).max()) if len(roots) else 0
    lf_start, lf_end, lf_var, lf_lo, lf_hi = K.leaf_boxes(
        roots, nd_var, nd_rank, nd_left, nd_right, max_depth
    )
    leaf_count = (nd_var < 0).astype(np.int64)
    per_tree = np.bincount(node_tree[node_tree >= 0], leaf_count[node_tree >= 0], len(roots))
    max_leaves = int(per_tree.max()) if len(roots) else 1
    nd_max = K.subtree_max(nd_left, nd_right, leaf_units.copy())
    problem.trees = (
        roots, nd_var, nd_rank, nd_left, nd_right, nd_max,
        lf_start, lf_end, lf_var, lf_lo, lf_hi, vs_ptr, vs_rank, vs_tree,
    )  # fmt: skip

    # -- terms -----------------------------------------------------------------------------
    n_terms = len(terms)
    thr = np.zeros(n_terms, dtype=np.int64)
    sure = np.zeros(n_terms, dtype=np.int64)
    cons = np.zeros(n_terms, dtype=np.int8)
    slack_values = []
    n_additions = sum(m.n_trees for m in query.models.values()) * len(query.instances)
    for k in range(n_terms):
        magnitude = _magnitude(query, terms[k]) + abs(rhs[k] if rhs[k] is not None else 0.0)
        # the model's float64 sums, then the term's: a generous bound on their rounding
        value_slack = magnitude * (n_additions + 16) * 2.0**-50
        slack_values.append(value_slack)
        if rhs[k] is None:
            continue
        cons[k] = 1
        target = Fraction(signs[k] * rhs[k]) - problem.term_constant[k]
        thr[k] = _threshold_units(target - Fraction(value_slack), strict[k], q)
        sure[k] = _threshold_units(target + Fraction(value_slack), strict[k], q)
        if not exact:  # rounded-up units exceed the true sum by less than one per tree
            sure[k] = min(sure[k] + len(roots), 2**62)
    problem.terms = (thr, sure, cons, problem.u_base)
    problem.term_slack_value = tuple(slack_values)

    # -- lifted constraints ----------------------------------------------------------------
    groups = _groups(query, constraints, var)
    resources = _resources(query, constraints, plan, var, groups)
    linear = _linear(query, constraints, var, groups, resources)
    problem.groups, problem.resources, problem.linear = groups, resources, linear
    problem.lifted = _lifted_arrays(
        n_vars, cell_ptr, cell_lo, cell_hi, integral, groups, resources, linear
    )
    goal = next((r for r, res in enumerate(resources) if res.goal), -1)
    params = np.zeros(K.N_PARAMS, dtype=np.int64)
    params[K.P_MODE] = plan.mode
    params[K.P_GOAL] = goal
    params[K.P_MARGIN] = 0 if exact else len(roots)
    params[K.P_DIVE_NUM] = 1
    params[K.P_DIVE_DEN] = 1
    params[K.P_MAX_LEAVES] = max_leaves
    params[K.P_MAX_DEPTH] = max_depth
    problem.params = params
    return problem


# -- closest examples by bisection on the radius ---------------------------------------------------


def bisectable(problem: Problem) -> bool:
    """Whether the goal is an L-inf distance to a row, which bisection answers exactly."""
    goal = next((res for res in problem.resources if res.goal), None)
    return goal is not None and goal.kind == K.KIND_LINF and all(b < 0 for _, b, _ in goal.pairs)


def cell_gaps(problem: Problem) -> tuple[np.ndarray, np.ndarray]:
    """Per cell, the distance (float64, correctly rounded) of its nearest value to the goal's row
    value for its variable (0 for variables the goal does not measure, inf outside the root
    box); and the cell's variable.

    A point's L-inf distance rounds to the largest rounded gap of its coordinates (rounding is
    monotone), so the optimum is one of these gaps.
    """
    n_cells = len(problem.cell_lo)
    cell_var = np.repeat(np.arange(problem.n_vars), np.diff(problem.cell_ptr))
    center = np.full(problem.n_vars, np.nan)
    goal = next(res for res in problem.resources if res.goal)
    for a, _, c in goal.pairs:
        center[a] = c
    c = center[cell_var]
    lo, hi = problem.cell_lo, problem.cell_hi
    with np.errstate(invalid="ignore"):
        gap = np.where(c < lo, lo - c, np.where(c > hi, c - hi, 0.0))
        fraction = np.minimum(c - np.floor(c), np.ceil(c) - c)
    inside_int = problem.integral[cell_var] & (c >= lo) & (c <= hi) & (fraction > 0)
    gap = np.where(inside_int, fraction, gap)
    gap = np.where(np.isnan(c), 0.0, gap)
    first = problem.cell_ptr[:-1] + problem.root[: problem.n_vars]
    last = problem.cell_ptr[:-1] + problem.root[problem.n_vars :]
    cell = np.arange(n_cells)
    reachable = (cell >= first[cell_var]) & (cell <= last[cell_var])
    return np.where(reachable, gap, np.inf), cell_var


def ball_root(problem: Problem, gaps: np.ndarray, cell_var: np.ndarray, radius: float):
    """The root box cut to the cells within ``radius`` of the row (contiguous, since a cell's
    gap falls then rises along the line); None when some variable keeps no cell."""
    n = problem.n_vars
    inside = np.nonzero(gaps <= radius)[0]
    owner = cell_var[inside]
    if len(np.unique(owner)) < n:
        return None
    starts = np.searchsorted(owner, np.arange(n))
    row = np.empty(2 * n, dtype=np.int32)
    row[:n] = np.minimum.reduceat(inside, starts) - problem.cell_ptr[:-1]
    row[n:] = np.maximum.reduceat(inside, starts) - problem.cell_ptr[:-1]
    return row


def find_within(problem: Problem, root: np.ndarray) -> Problem:
    """The same problem as a find from ``root`` (the goal's distance no longer a resource)."""
    resources = tuple(res for res in problem.resources if not res.goal)
    lifted = _lifted_arrays(
        problem.n_vars, problem.cell_ptr, problem.cell_lo, problem.cell_hi, problem.integral,
        problem.groups, resources, problem.linear,
    )  # fmt: skip
    params = problem.params.copy()
    params[K.P_MODE] = K.MODE_FIND
    params[K.P_GOAL] = -1
    return replace(problem, root=root, lifted=lifted, params=params)


# -- the static box as cells ----------------------------------------------------------------------


def _bound_thresholds(lo, hi, integral):
    """Thresholds that make the static bounds cell boundaries: ``lo`` starts a cell, and the
    value right after ``hi`` starts the next one. Lows come first, then highs."""
    low_vars = np.nonzero(np.isfinite(lo))[0]
    high_vars = np.nonzero(np.isfinite(hi))[0]
    after = np.array([hi[v] + 1.0 if integral[v] else next_up(hi[v]) for v in high_vars])
    values = np.concatenate([lo[low_vars], after]) if len(after) else lo[low_vars]
    return np.concatenate([low_vars, high_vars]).astype(np.int64), values.astype(np.float64)


# -- terms and trees ------------------------------------------------------------------------------


def _terms(plan: Plan, outputs):
    """Terms in maximisation form: (terms, signs, strict flags, right-hand sides or None)."""
    terms, signs, strict, rhs = [], [], [], []
    if plan.objective is not None:
        terms.append(plan.objective)
        signs.append(1.0)
        strict.append(False)
        rhs.append(None)
    for c in outputs:
        terms.append(c.term)
        signs.append(1.0 if c.op in (">", ">=") else -1.0)
        strict.append(c.op in (">", "<"))
        rhs.append(float(c.rhs))
    return terms, signs, strict, rhs


def _copies(query, terms, signs):
    """``{(model, instance): float64 (n_nodes, K)}``: each node's contribution to every term."""
    copies: dict[tuple[str, str], np.ndarray] = {}
    for k, (term, sign) in enumerate(zip(terms, signs, strict=True)):
        for atom in term.atoms:
            model = query.models[atom.model]
            key = (atom.model, atom.instance)
            if key not in copies:
                copies[key] = np.zeros((model.n_nodes, len(terms)))
            copies[key][:, k] += sign * atom.coef * model.value[:, atom.output]
    return {key: values for key, values in sorted(copies.items()) if np.any(values)}


def _splits(query, copies, var, integral):
    """Variable and threshold of every split node of every copy; and each copy's node rows."""
    split_var, split_value, rows = [], [], {}
    offset = 0
    for model_name, instance in copies:
        model = query.models[model_name]
        i = query.instances.index(instance)
        inner = model.feature >= 0
        v = np.where(inner, var[i, np.maximum(model.feature, 0)], -1)
        t = model.threshold.astype(np.float64)
        t = np.where(inner & integral[np.maximum(v, 0)], np.ceil(t), t)
        split_var.append(v[inner])
        split_value.append(t[inner])
        rows[model_name, instance] = (offset, v)
        offset += model.n_nodes
    if not split_var:
        return np.zeros(0, np.int64), np.zeros(0), rows
    return np.concatenate(split_var).astype(np.int64), np.concatenate(split_value), rows


def _search_trees(query, copies, rows, split_rank, var, root, n_vars, n_terms):
    """Compact every copy by the static box; merge the two copies of a tree read on two
    instances with tied features into one product tree. Returns node arrays, leaf values
    (float64, (n_nodes, K)), and each output tree's root and size."""
    parts_var, parts_rank, parts_left, parts_right, values = [], [], [], [], []
    offset = 0
    cursor = 0
    for key, vals in copies.items():
        model = query.models[key[0]]
        _, v = rows[key]
        inner = model.feature >= 0
        r = np.zeros(model.n_nodes, dtype=np.int32)
        n_inner = int(inner.sum())
        r[inner] = split_rank[cursor : cursor + n_inner]
        cursor += n_inner
        parts_var.append(v.astype(np.int32))
        parts_rank.append(r)
        parts_left.append(np.where(inner, model.left + offset, -1).astype(np.int32))
        parts_right.append(np.where(inner, model.right + offset, -1).astype(np.int32))
        values.append(vals)
        offset += model.n_nodes
    if not copies:
        empty = np.zeros(0, np.int32)
        return empty, empty, empty, empty, np.zeros((0, n_terms)), empty, empty
    nd_var = np.concatenate(parts_var)
    nd_rank = np.concatenate(parts_rank)
    nd_left = np.concatenate(parts_left)
    nd_right = np.concatenate(parts_right)
    vals = np.concatenate(values)

    # jobs: a product for each tree read on two tied instances, else one job per copy
    offsets = {}
    o = 0
    for key in copies:
        offsets[key] = o
        o += query.models[key[0]].n_nodes
    job_a, job_b, job_cap, job_size = [], [], [], []
    paired = set()
    by_model: dict[str, list[str]] = {}
    for model_name, instance in copies:
        by_model.setdefault(model_name, []).append(instance)
    for model_name, instances in by_model.items():
        model = query.models[model_name]
        sizes = np.diff(model.tree_offsets)
        if len(instances) == 2:
            i1, i2 = (query.instances.index(name) for name in instances)
            if np.any(var[i1] == var[i2]):
                base_a = offsets[model_name, instances[0]]
                base_b = offsets[model_name, instances[1]]
                for t in range(model.n_trees):
                    start = int(model.tree_offsets[t])
                    job_a.append(base_a + start)
                    job_b.append(base_b + start)
                    job_cap.append(max(PRODUCT_GROWTH * 2 * int(sizes[t]), 64))
                    job_size.append(int(sizes[t]))
                paired.add(model_name)
        if model_name not in paired:
            for instance in instances:
                base = offsets[model_name, instance]
                job_a.extend(base + model.tree_offsets[:-1])
                job_b.extend([-1] * model.n_trees)
                job_cap.extend(sizes.tolist())
                job_size.extend(sizes.tolist())
    job_a = np.array(job_a, dtype=np.int32)
    job_b = np.array(job_b, dtype=np.int32)
    job_cap = np.array(job_cap, dtype=np.int64)
    job_size = np.array(job_size, dtype=np.int64)
    root_lo = np.ascontiguousarray(root[:n_vars])
    root_hi = np.ascontiguousarray(root[n_vars:])
    out = K.compact_trees(
        nd_var, nd_rank, nd_left, nd_right, job_a, job_b, root_lo, root_hi, job_cap,
        int(job_cap.sum()),
    )  # fmt: skip
    o_var, o_rank, o_left, o_right, src_a, src_b, job_root, n_out = out
    failed = np.nonzero(job_root < 0)[0]
    if len(failed):  # products too large: search the two copies separately
        retry_a = np.concatenate([job_a[failed], job_b[failed]])
        sizes_a = np.concatenate([job_size[failed], job_size[failed]])
        again = K.compact_trees(
            nd_var, nd_rank, nd_left, nd_right, retry_a, np.full(len(retry_a), -1, np.int32),
            root_lo, root_hi, sizes_a, int(sizes_a.sum()),
        )  # fmt: skip
        a_var, a_rank, a_left, a_right, a_src_a, a_src_b, a_root, a_n = again

        def joined(first, second, shift=0):
            second = second[:a_n]
            if shift:
                second = np.where(second >= 0, second + shift, -1)
            return np.concatenate([first[:n_out], second])

        o_var, o_rank = joined(o_var, a_var), joined(o_rank, a_rank)
        o_left, o_right = joined(o_left, a_left, n_out), joined(o_right, a_right, n_out)
        src_a, src_b = joined(src_a, a_src_a), joined(src_b, a_src_b)
        job_root = np.concatenate([job_root[job_root >= 0], a_root + n_out])
        n_out += a_n
    else:
        o_var, o_rank, o_left, o_right = (a[:n_out] for a in (o_var, o_rank, o_left, o_right))
        src_a, src_b = src_a[:n_out], src_b[:n_out]
    tree_roots = np.sort(job_root.astype(np.int64))
    tree_sizes = np.diff(np.append(tree_roots, n_out))
    leaf = o_var < 0
    leaf_values = np.zeros((n_out, n_terms))
    leaf_values[leaf] = vals[src_a[leaf]]
    with_b = leaf & (src_b >= 0)
    leaf_values[with_b] += vals[src_b[with_b]]
    return (
        np.ascontiguousarray(o_var, dtype=np.int32),
        np.ascontiguousarray(o_rank, dtype=np.int32),
        np.ascontiguousarray(o_left, dtype=np.int32),
        np.ascontiguousarray(o_right, dtype=np.int32),
        leaf_values,
        tree_roots,
        tree_sizes,
    )


def _threshold_units(target: Fraction, strict: bool, q: int) -> int:
    """Least integer ``u`` with ``u / 2**q >= target`` (``>`` when ``strict``), clamped."""
    scaled = target * Fraction(2) ** q
    bound = math.floor(scaled) + 1 if strict else math.ceil(scaled)
    return max(-(2**62), min(2**62, bound))


def _scale(leaf_values, nd_var, tree_roots, tree_sizes) -> tuple[int, bool]:
    """The unit exponent ``q`` and whether units are exact (see the module docstring)."""
    leaf = nd_var < 0
    values = leaf_values[leaf]
    if values.size == 0 or not np.any(values):
        return 0, True
    # the sum over trees of the largest magnitude, per term
    tree_of = np.repeat(np.arange(len(tree_roots)), tree_sizes)[leaf]
    largest = np.zeros((len(tree_roots), values.shape[1]))
    np.maximum.at(largest, tree_of, np.abs(values))
    total = float(largest.sum(axis=0).max())
    nonzero = values[values != 0]
    mantissa, exponent = np.frexp(nonzero)
    integer = np.ldexp(np.abs(mantissa), 53).astype(np.int64)
    trailing = np.log2(integer & -integer).astype(np.int64)
    q = int(np.max(53 - exponent - trailing))
    if math.ldexp(total, q) < UNIT_LIMIT:
        return q, True
    return math.floor(60 - math.log2(total)), False


def _order(nd_val, nd_var, tree_roots, tree_sizes, keep) -> np.ndarray:
    """Trees to search, largest spread of the leading term (column 0) first."""
    if len(keep) == 0:
        return keep
    leaf = nd_var < 0
    tree_of = np.repeat(np.arange(len(tree_roots)), tree_sizes)
    hi = np.full(len(tree_roots), -(2**62), dtype=np.int64)
    lo = np.full(len(tree_roots), 2**62, dtype=np.int64)
    if nd_val.shape[1]:
        np.maximum.at(hi, tree_of[leaf], nd_val[leaf, 0])
        np.minimum.at(lo, tree_of[leaf], nd_val[leaf, 0])
    spread = (hi - lo)[keep]
    return keep[np.argsort(-spread, kind="stable")]


def _constant(query, term: OutputTerm, sign: float) -> Fraction:
    """The part of ``sign * term`` no tree decides: its constant and the models' base scores."""
    total = Fraction(term.constant)
    for a in term.atoms:
        base = float(query.models[a.model].base_score[a.output])
        total += Fraction(a.coef) * Fraction(base)
    return Fraction(sign) * total


def _magnitude(query, term: OutputTerm) -> float:
    """A bound on the magnitude of every partial sum of ``term``."""
    total = abs(term.constant)
    for atom in term.atoms:
        model = query.models[atom.model]
        total += abs(atom.coef) * _largest_sum(model, atom.output)
    return total


_LARGEST_SUM: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _largest_sum(model, output: int) -> float:
    """``|base| + sum over trees of the largest |leaf value|`` of one output (cached per model)."""
    cached = _LARGEST_SUM.setdefault(model, {})
    if output not in cached:
        magnitude = np.where(model.feature < 0, np.abs(model.value[:, output]), 0.0)
        largest = np.maximum.reduceat(magnitude, model.tree_offsets[:-1])
        cached[output] = abs(float(model.base_score[output])) + float(largest.sum())
    return cached[output]


# -- lifted constraints ---------------------------------------------------------------------------


def _refuse(query: Query, what: str) -> UnsupportedQuery:
    """The refusal of ``what``; the entry point (``veritas_dsl.solvers.solve``) adds the
    engines that can."""
    return UnsupportedQuery(f"query {query.name}: engine astar does not support {what}")


def _groups(query, constraints, var) -> tuple[tuple[int, ...], ...]:
    groups: list[tuple[int, ...]] = []
    for c in constraints:
        if not isinstance(c, OneHot):
            continue
        if len(set(c.features)) != len(c.features):
            raise _refuse(query, "a one-hot group that lists a feature twice")
        i = query.instances.index(c.instance)
        group = tuple(sorted(int(var[i, f]) for f in c.features))
        if group in groups:
            continue
        if any(set(group) & set(other) for other in groups):
            raise _refuse(query, "overlapping one-hot groups")
        groups.append(group)
    return tuple(groups)


def _resources(query, constraints, plan, var, groups) -> tuple[Resource, ...]:
    specs = []
    units = {tuple(c.units) for c in constraints if isinstance(c, AtMostKChanged)}
    for c in constraints:
        if isinstance(c, AtMostKChanged):
            specs.append((K.KIND_CHANGED, float(c.k), False, c.instance, c.reference))
        elif isinstance(c, Ball) and c.norm == "l1":
            specs.append((K.KIND_L1, float(c.radius), False, c.instance, c.center))
        elif isinstance(c, Ball) and c.norm == "linf" and not isinstance(c.center, Row):
            specs.append((K.KIND_LINF, float(c.radius), False, c.instance, c.center))
    if plan.distance is not None:
        d = plan.distance
        kind = K.KIND_LINF if d.norm == "linf" else K.KIND_L1
        specs.append((kind, math.inf, True, d.instance, d.center))
    if not specs:
        return ()

    def key(instance, reference):
        return (instance, reference.values if isinstance(reference, Row) else reference)

    if len({key(s[3], s[4]) for s in specs}) > 1:
        raise _refuse(
            query, "change counts or distances to different references in one conjunction"
        )
    if len(units) > 1:
        raise _refuse(query, "change counts with different units in one conjunction")
    in_group = {v: g for g, group in enumerate(groups) for v in group}
    instance, reference = specs[0][3], specs[0][4]
    i = query.instances.index(instance)
    unit_of = {f: u for u, unit in enumerate(next(iter(units), ())) for f in unit}
    if units:
        _check_units(query, next(iter(units)), var[i], in_group, groups)
    pairs = []
    for f in range(query.n_features):
        a = int(var[i, f])
        if isinstance(reference, Row):
            b, c = -1, float(reference.values[f])
        else:
            b, c = int(var[query.instances.index(reference), f]), 0.0
            if a == b:
                continue
        if (a in in_group and (b >= 0 or c not in (0.0, 1.0))) or b in in_group:
            raise _refuse(
                query, "a one-hot group measured against values other than 0 and 1 of a row"
            )
        pairs.append((in_group.get(a, -1), unit_of.get(f, f), a, b, c))
    pairs.sort(key=lambda p: p[:3])
    ordered = tuple((a, b, c) for _, _, a, b, c in pairs)
    unit_ids = tuple(u for _, u, _, _, _ in pairs)
    return tuple(
        Resource(kind, bound, goal, ordered, unit_ids) for kind, bound, goal, _, _ in specs
    )


def _check_units(query, units, var_of, in_group, groups) -> None:
    """Refuse change-count units that cut across a one-hot group: the kernels cost a group as a
    whole (one unit) or member by member (units of one), never partly joined to other features."""
    for unit in units:
        members = [int(var_of[f]) for f in unit]
        touched = {in_group[v] for v in members if v in in_group}
        if not touched or len(unit) == 1:
            continue
        if len(touched) > 1 or set(members) != set(groups[touched.pop()]):
            raise _refuse(query, "a change count unit holding part of a one-hot group")


def _linear(query, constraints, var, groups, resources):
    taken = {v for group in groups for v in group}
    for res in resources:
        for a, b, _ in res.pairs:
            taken.add(a)
            if b >= 0:
                taken.add(b)
    result = []
    for c in constraints:
        if not isinstance(c, Linear):
            continue
        if c.op == "==":
            raise _refuse(query, "linear equalities")
        coefs: dict[int, Fraction] = {}
        for t in c.terms:
            v = int(var[query.instances.index(t.instance), t.feature])
            coefs[v] = coefs.get(v, Fraction(0)) + Fraction(t.coef)
        sign = 1 if c.op == "<=" else -1
        entries = []
        for v, coef in sorted(coefs.items()):
            if coef == 0:
                continue
            if float(coef) != coef:
                raise _refuse(query, "linear coefficients whose sum is not a float64")
            if v in taken:
                raise _refuse(
                    query,
                    "a linear constraint sharing features with a one-hot group, a change count, "
                    "a distance or another linear constraint",
                )
            entries.append((v, sign * float(coef)))
        taken.update(v for v, _ in entries)
        result.append((tuple(entries), sign * float(c.rhs)))
    return tuple(result)


def _lifted_arrays(n_vars, cell_ptr, cell_lo, cell_hi, integral, groups, resources, linear):
    oh_ptr = np.cumsum([0] + [len(g) for g in groups]).astype(np.int32)
    oh_var = np.array([v for g in groups for v in g], dtype=np.int32)
    in_group = {v: g for g, group in enumerate(groups) for v in group}
    rs_kind = np.array([r.kind for r in resources], dtype=np.int32)
    rs_bound = np.array([r.bound for r in resources], dtype=np.float64)
    rs_ptr = np.cumsum([0] + [len(r.pairs) for r in resources]).astype(np.int32)
    pairs = [p for r in resources for p in r.pairs]
    pr_a = np.array([p[0] for p in pairs], dtype=np.int32)
    pr_b = np.array([p[1] for p in pairs], dtype=np.int32)
    pr_c = np.array([p[2] for p in pairs], dtype=np.float64)
    pr_group = np.array([in_group.get(p[0], -1) for p in pairs], dtype=np.int32)
    pr_unit = np.array([u for r in resources for u in r.units], dtype=np.int32)
    ln_ptr = np.cumsum([0] + [len(e) for e, _ in linear]).astype(np.int32)
    ln_var = np.array([v for e, _ in linear for v, _ in e], dtype=np.int32)
    ln_coef = np.array([a for e, _ in linear for _, a in e], dtype=np.float64)
    ln_rhs = np.array([rhs for _, rhs in linear], dtype=np.float64)
    return (
        np.int64(n_vars), cell_ptr, cell_lo, cell_hi, integral.astype(np.int8), oh_ptr, oh_var,
        rs_kind, rs_bound, rs_ptr, pr_a, pr_b, pr_c, pr_group, pr_unit, ln_ptr, ln_var, ln_coef,
        ln_rhs,
    )  # fmt: skip
