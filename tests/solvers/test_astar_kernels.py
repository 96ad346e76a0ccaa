"""The A* kernels against their plain-Python twins (``tests/reference/astar.py``) on the arrays
of random small queries: tree bounds, lifted constraints, exact distances, and the optimum of
the search itself."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from numba import njit

from veritas_dsl.ir import AnyOf
from veritas_dsl.solvers.astar import kernels as K
from veritas_dsl.solvers.astar.engine import BRANCH, AStarEngine, _plan
from veritas_dsl.solvers.astar.kernels import exact, feasibility, trees
from veritas_dsl.solvers.astar.problem import build_problem
from veritas_dsl.solvers.astar.search import BranchSearch

from conftest import examples
from reference import astar as twin
from reference.strategies import queries

BOX_FAMILIES = [
    "maximize",
    "box",
    "int_domain",
    "one_hot",
    "changed",
    "changed_one_hot",
    "l1",
    "linear",
    "two_instances",
    "multiclass",
    "output_constraint",
    "min_l1",
    "min_linf",
    "weighted_distance",
]


# Kernels only kernels call have no Python wrappers: entries for the tests to call them.


@njit
def tree_max(*args):
    return trees.tree_max(*args)


@njit
def box_alive(*args):
    return feasibility.box_alive(*args)


@njit
def resource_cost(*args):
    return feasibility.resource_cost(*args)


@njit
def l1_ball_cut(*args):
    return feasibility.l1_ball_cut(*args)


@njit
def msum_add(*args):
    return exact.msum_add(*args)


@njit
def msum_round(*args):
    return exact.msum_round(*args)


@njit
def two_sum(a, b):  # inlined kernels take no *args
    return exact.two_sum(a, b)


@njit
def two_prod(a, b):
    return exact.two_prod(a, b)


def problem_of(query):
    if any(isinstance(c, AnyOf) for c in query.constraints):
        return None
    query, _ = AStarEngine.chain.apply(query)
    if any(isinstance(c, AnyOf) for c in query.constraints):
        return None
    problem = build_problem(BRANCH.apply(query)[0], _plan(query))
    return None if problem.infeasible else problem


def random_box(problem, draw) -> np.ndarray:
    """A random sub-box of the root box."""
    n = problem.n_vars
    row = problem.root.copy()
    for v in range(n):
        lo, hi = int(row[v]), int(row[n + v])
        a = draw(st.integers(lo, hi))
        b = draw(st.integers(a, hi))
        row[v], row[n + v] = a, b
    return row


@pytest.mark.parametrize("family", BOX_FAMILIES)
def test_box_kernels_match_twins(family):
    @settings(max_examples=examples(1.2))
    @given(query=queries(family), data=st.data())
    def run(query, data):
        problem = problem_of(query)
        assume(problem is not None)
        row = random_box(problem, data.draw)
        arrays = problem.trees
        stack = np.empty(int(problem.params[K.P_MAX_DEPTH]) + 2, dtype=np.int32)
        out = np.empty(problem.n_terms, dtype=np.int64)
        arg = np.empty(problem.n_terms, dtype=np.int32)
        tr_col, col_ptr, col_term, tr_val = arrays[14:18]
        for t in range(len(arrays[0])):
            c0, n_cols = tr_col[t], tr_col[t + 1] - tr_col[t]
            tree_max(arrays[0][t], n_cols, tr_val[t], row, problem.n_vars, *arrays[1:6], out, arg,
                     0, stack)  # fmt: skip
            dense = np.zeros(problem.n_terms, dtype=np.int64)
            for j in range(n_cols):
                dense[col_term[col_ptr[c0 + j] : col_ptr[c0 + j + 1]]] = out[j]
            assert dense.tolist() == twin.tree_max(arrays, t, row, problem.n_vars, problem.n_terms)
        parts = np.empty(K.N_PARTIALS)
        goal = int(problem.params[K.P_GOAL])
        spare = np.empty(K.N_PARTIALS)
        lifted, resources = problem.lifted, problem.lifted_resources
        alive, goal_cost = box_alive(row, goal, lifted, resources, parts, spare)
        assert alive == twin.box_alive(problem, row)
        if alive and goal >= 0:
            assert goal_cost == float(twin.resource_cost(problem, goal, row))
        for r, res in enumerate(problem.resources):
            if not twin.one_hot_alive(problem, row):
                break
            cost, exceeds = resource_cost(r, res.bound, row, lifted, resources, parts, spare)
            exact = twin.resource_cost(problem, r, row)
            assert cost == float(exact)
            assert exceeds == (res.bound != np.inf and exact > Fraction(res.bound))

    run()


@pytest.mark.parametrize("family", ["min_l1", "weighted_distance"])
def test_the_l1_ball_cut_drops_only_cells_with_nothing_closer(family):
    """Every cell the cut drops holds no point of the box closer than the radius (exact, by
    the twin), and the cells it keeps at each end hold one (up to its float slack)."""

    # a quarter of the weighted family minimises an L1 distance: the rest is filtered out
    @settings(
        max_examples=examples(1.5),
        suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow],
    )
    @given(query=queries(family), data=st.data())
    def run(query, data):
        problem = problem_of(query)
        assume(problem is not None)
        goal = int(problem.params[K.P_GOAL])
        assume(goal >= 0 and problem.resources[goal].kind == K.KIND_L1)
        row = random_box(problem, data.draw)
        assume(twin.one_hot_alive(problem, row))
        n = problem.n_vars

        def cost_at(v, cell):
            sub = row.copy()
            sub[v] = sub[n + v] = cell
            return twin.resource_cost(problem, goal, sub)

        least = twin.resource_cost(problem, goal, row)
        # radii at a cell's distance, just above it and between: where a cut can go wrong
        costs = [cost_at(v, c) for v in range(n) for c in range(row[v], row[n + v] + 1)]
        near = float(data.draw(st.sampled_from(costs)))
        radius = data.draw(st.sampled_from([near, np.nextafter(near, np.inf), near + 0.25]))
        cut = row.copy()
        parts, spare = np.empty(K.N_PARTIALS), np.empty(K.N_PARTIALS)
        resources = problem.lifted_resources
        changed, empty = l1_ball_cut(cut, radius, goal, problem.lifted, resources, parts, spare)
        rs_ptr, pr_a, pr_b, _, pr_group = resources[2:7]
        pairs = range(rs_ptr[goal], rs_ptr[goal + 1])
        cuttable = {int(pr_a[i]) for i in pairs if pr_b[i] < 0 and pr_group[i] < 0}
        if empty:
            assert least >= Fraction(radius)
            return
        if cuttable:  # the cut empties a box with nothing closer (up to its slack)
            assert least < Fraction(radius) * Fraction(1 + 2**-38)
        assert changed == (not np.array_equal(cut, row))

        for v in range(n):
            assert row[v] <= cut[v] <= cut[n + v] <= row[n + v]
            dropped = [*range(row[v], cut[v]), *range(cut[n + v] + 1, row[n + v] + 1)]
            assert all(cost_at(v, cell) >= Fraction(radius) for cell in dropped)
            if v in cuttable:  # kept for a reason: its end cells hold closer points
                for cell in (cut[v], cut[n + v]):
                    assert cost_at(v, cell) < Fraction(radius) * Fraction(1 + 2**-38)
            else:
                assert not dropped

    run()


def kernel_maximum(problem) -> int | None:
    """Run the kernel search to the end, taking every solution as met (as the twin does)."""
    search = BranchSearch(problem)
    best = None
    if not search.alive:
        return None
    while True:
        status = search.run(1000)
        for solution in search.take_solutions():
            if best is None or solution.units[0] > best:
                best = int(solution.units[0])
            if not solution.verified:
                search.raise_incumbent(solution.key)
        if status == K.STATUS_MEMORY:
            search.grow(2 * search.capacity)
        elif status in (K.STATUS_EXHAUSTED, K.STATUS_OPTIMAL):
            return best


@pytest.mark.parametrize(
    "family",
    [
        "maximize",
        "minimize",
        "box",
        "one_hot",
        "changed",
        "changed_one_hot",
        "l1",
        "linear",
        "two_instances",
        "two_models",
        "multiclass",
        "output_constraint",
    ],
)
def test_search_optimum_matches_twin(family):
    @settings(max_examples=examples(1.2))
    @given(query=queries(family))
    def run(query):
        problem = problem_of(query)
        assume(problem is not None and problem.plan.mode == K.MODE_MAXIMIZE)
        assert kernel_maximum(problem) == twin.maximum(problem)

    run()


def test_exact_sums_and_distance_keys():
    parts = np.empty(K.N_PARTIALS)
    values = [1e16, 1.0, -1e16, 2.0**-60, 3.0]
    n = 0
    for x in values:
        n = msum_add(parts, n, x)
    assert msum_round(parts, n) == float(sum(Fraction(x) for x in values))
    s, e = two_sum(1.0, -1e-45)
    assert Fraction(s) + Fraction(e) == Fraction(1.0) - Fraction(1e-45)
    p, e = two_prod(0.1, 3.0)
    assert Fraction(p) + Fraction(e) == Fraction(0.1) * 3
    distances = [0.0, 1e-300, 2.0**-149, 0.1, 0.5, 1.0, 3.0, 1e38, 1e300]
    keys = [K.encode_distance(d) for d in distances]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert [K.decode_distance(k) for k in keys] == distances
