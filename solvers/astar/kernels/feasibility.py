"""Input constraints lifted to boxes: whether a box can still hold a point meeting every one-hot
group, linear constraint and resource bound (change counts, L-inf and L1 distances, squared L2
distances), and the least value of a resource over a box, all decided exactly.

``problem`` is the tuple ``problem.py`` packs (``Problem.lifted``): ``n_vars``, the cells
(``cell_ptr, cell_lo, cell_hi``), ``var_int``, the one-hot groups (``oh_ptr, oh_var``) and the
linear constraints (``ln_ptr, ln_var, ln_coef, ln_rhs``). ``resources``
(``Problem.lifted_resources``) holds the resources (``rs_kind, rs_bound, rs_ptr`` and their pairs
``pr_a, pr_b, pr_c, pr_group, pr_unit, pr_w``), or is None when the query has none: Numba then
drops every ``resources is not None`` branch before typing, so a query without change counts
or distances compiles none of their code (most of what a cold start compiles).
"""

from __future__ import annotations

import numpy as np

from veritas_dsl.jit import inlined, internal
from veritas_dsl.solvers.astar.kernels.arrays import lower_bound
from veritas_dsl.solvers.astar.kernels.exact import msum_add, msum_round, two_prod, two_sum
from veritas_dsl.solvers.astar.kernels.layout import (
    FLT_MAX,
    KIND_CHANGED,
    KIND_L1,
    KIND_L2,
    KIND_LINF,
)


@inlined
def var_range(row, v, n_vars, cell_ptr, cell_lo, cell_hi):
    """The float32 interval ``(lo, hi)`` variable ``v`` spans in box ``row``."""
    base = cell_ptr[v]
    return cell_lo[base + row[v]], cell_hi[base + row[n_vars + v]]


@internal
def one_hot_alive(row, n_vars, cell_ptr, cell_lo, cell_hi, oh_ptr, oh_var):
    """False when some one-hot group is forced all-false or has two variables forced true."""
    for g in range(oh_ptr.shape[0] - 1):
        forced = 0
        able = 0
        for i in range(oh_ptr[g], oh_ptr[g + 1]):
            lo, hi = var_range(row, oh_var[i], n_vars, cell_ptr, cell_lo, cell_hi)
            if lo >= 1.0:
                forced += 1
            if hi >= 1.0:
                able += 1
        if forced > 1 or able == 0:
            return False
    return True


@internal
def linear_alive(row, n_vars, cell_ptr, cell_lo, cell_hi, ln_ptr, ln_var, ln_coef, ln_rhs, parts):
    """False when some ``sum(coef * x) <= rhs`` has no point in the box, decided exactly.

    An unbounded end counts as the largest float32, since inputs are finite float32 values.
    """
    for c in range(ln_ptr.shape[0] - 1):
        n = np.int64(0)
        for i in range(ln_ptr[c], ln_ptr[c + 1]):
            lo, hi = var_range(row, ln_var[i], n_vars, cell_ptr, cell_lo, cell_hi)
            a = ln_coef[i]
            x = lo if a > 0.0 else hi
            x = min(max(x, -FLT_MAX), FLT_MAX)
            p, e = two_prod(a, x)
            n = msum_add(parts, n, p)
            n = msum_add(parts, n, e)
        n = msum_add(parts, n, -ln_rhs[c])
        if msum_round(parts, n) > 0.0:
            return False
    return True


@inlined
def pair_gap(lo_a, hi_a, b, lo_b, hi_b, c, integral):
    """Exact smallest distance ``s + e`` of variable a's interval to the reference (variable b's
    interval when ``b >= 0``, else the constant ``c``), and whether every value differs from it."""
    if b >= 0:
        if hi_a < lo_b:
            s, e = two_sum(lo_b, -hi_a)
            return s, e, 1
        if hi_b < lo_a:
            s, e = two_sum(lo_a, -hi_b)
            return s, e, 1
        return 0.0, 0.0, 0
    if c < lo_a:
        s, e = two_sum(lo_a, -c)
        return s, e, 1
    if c > hi_a:
        s, e = two_sum(c, -hi_a)
        return s, e, 1
    if integral and c != np.floor(c):  # the nearest integer is a fraction away, and differs
        return min(c - np.floor(c), np.ceil(c) - c), 0.0, 1
    return 0.0, 0.0, 0


@inlined
def weighted_gap(parts, s, e, w):
    """The exact ``w * (s + e)`` as partials of ``parts`` (their count), for a weight ``w``
    that is not 1."""
    p1, e1 = two_prod(w, s)
    p2, e2 = two_prod(w, e)
    n = msum_add(parts, np.int64(0), p1)
    n = msum_add(parts, n, e1)
    n = msum_add(parts, n, p2)
    return msum_add(parts, n, e2)


@inlined
def _add_product(parts, n, a, b, twice):
    """Add the exact ``a * b`` (twice it when ``twice``) to the partials ``parts[:n]``."""
    p, e = two_prod(a, b)
    if twice:  # doubling is exact
        p, e = 2.0 * p, 2.0 * e
    n = msum_add(parts, n, p)
    return msum_add(parts, n, e)


@inlined
def squared_gap(parts, n, s, e, w):
    """Add the exact ``(w * (s + e))**2`` to the partials ``parts[:n]``; return their count.
    ``w * s`` and ``w * e`` are two exact products each, and the square of their four parts is
    ten products, each exact (Dekker): no rounding until the sum is read."""
    a, b = two_prod(w, s)
    c, d = two_prod(w, e)
    n = _add_product(parts, n, a, a, False)
    n = _add_product(parts, n, b, b, False)
    n = _add_product(parts, n, c, c, False)
    n = _add_product(parts, n, d, d, False)
    n = _add_product(parts, n, a, b, True)
    n = _add_product(parts, n, a, c, True)
    n = _add_product(parts, n, a, d, True)
    n = _add_product(parts, n, b, c, True)
    n = _add_product(parts, n, b, d, True)
    return _add_product(parts, n, c, d, True)


@internal
def _group_cost(
    g, kind, row, n_vars, cell_ptr, cell_lo, cell_hi, oh_ptr, oh_var, pr_a, pr_c, pr_unit, i0, i1
):
    """Least cost of one-hot group ``g`` for the resource pairs ``i0:i1`` (all on the group, with
    constant references 0 or 1, a unit's pairs together): the best choice of the variable that
    is 1. A change count counts the units with a member off its reference. Inf when none."""
    forced = -1
    for i in range(oh_ptr[g], oh_ptr[g + 1]):
        lo, _ = var_range(row, oh_var[i], n_vars, cell_ptr, cell_lo, cell_hi)
        if lo >= 1.0:
            forced = oh_var[i]
    best = np.inf
    for i in range(oh_ptr[g], oh_ptr[g + 1]):
        w = oh_var[i]
        _, hi = var_range(row, w, n_vars, cell_ptr, cell_lo, cell_hi)
        if hi < 1.0 or (forced >= 0 and w != forced):
            continue
        cost = 0.0
        counted = -1
        for j in range(i0, i1):
            value = 1.0 if pr_a[j] == w else 0.0
            gap = abs(value - pr_c[j])
            if kind == KIND_LINF:
                cost = max(cost, gap)
            elif kind in (KIND_L1, KIND_L2):  # a gap of 0 or 1 is its own square
                cost += gap
            elif gap != 0.0 and pr_unit[j] != counted:
                cost += 1.0
                counted = pr_unit[j]
        best = min(best, cost)
    return best


@internal
def resource_cost(r, bound, row, problem, resources, parts, spare):
    """Least value of resource ``r`` (a change count, an L-inf or L1 distance, each gap times
    its pair's weight, or a squared L2 distance) over the box, correctly rounded, and whether it
    exceeds ``bound`` (decided on the exact value). ``spare`` is a second buffer of partials.

    Pairs of one one-hot group sit next to each other and are costed together (their weights
    are 1: ``lifted`` refuses others); so do the pairs of one unit of a change count, which
    counts a unit once when any member surely differs.
    """
    n_vars, cell_ptr, cell_lo, cell_hi, var_int, oh_ptr, oh_var = problem[0:7]
    rs_kind, _, rs_ptr, pr_a, pr_b, pr_c, pr_group, pr_unit, pr_w = resources
    kind = rs_kind[r]
    total = 0.0
    exceeds = False
    n = np.int64(0)
    counted = -1
    i = rs_ptr[r]
    end = rs_ptr[r + 1]
    while i < end:
        g = pr_group[i]
        if g >= 0:
            j = i
            while j < end and pr_group[j] == g:
                j += 1
            cost = _group_cost(
                g, kind, row, n_vars, cell_ptr, cell_lo, cell_hi, oh_ptr, oh_var, pr_a, pr_c,
                pr_unit, np.int64(i), np.int64(j),
            )  # fmt: skip
            if kind == KIND_LINF:
                total = max(total, cost)
                exceeds = exceeds or cost > bound
            elif kind in (KIND_L1, KIND_L2):
                n = msum_add(parts, n, cost)
            else:
                total += cost
            i = j
            continue
        a = pr_a[i]
        b = pr_b[i]
        lo_a, hi_a = var_range(row, a, n_vars, cell_ptr, cell_lo, cell_hi)
        lo_b, hi_b = lo_a, hi_a
        if b >= 0:
            lo_b, hi_b = var_range(row, b, n_vars, cell_ptr, cell_lo, cell_hi)
        s, e, differs = pair_gap(lo_a, hi_a, b, lo_b, hi_b, pr_c[i], var_int[a] != 0)
        w = pr_w[i]
        if kind == KIND_LINF and w != 1.0:
            m = weighted_gap(spare, s, e, w)
            total = max(total, msum_round(spare, m))
            if bound < np.inf:
                m = msum_add(spare, m, -bound)
                exceeds = exceeds or msum_round(spare, m) > 0.0
        elif kind == KIND_LINF:
            total = max(total, s)
            if s > bound or (s == bound and e > 0.0):
                exceeds = True
        elif kind == KIND_L1 and w != 1.0:
            p1, e1 = two_prod(w, s)
            p2, e2 = two_prod(w, e)
            n = msum_add(parts, n, p1)
            n = msum_add(parts, n, e1)
            n = msum_add(parts, n, p2)
            n = msum_add(parts, n, e2)
        elif kind == KIND_L1:
            n = msum_add(parts, n, s)
            n = msum_add(parts, n, e)
        elif kind == KIND_L2:
            n = squared_gap(parts, n, s, e, w)
        elif differs and pr_unit[i] != counted:
            total += 1.0
            counted = pr_unit[i]
        i += 1
    if kind in (KIND_L1, KIND_L2):
        total = msum_round(parts, n)
        if bound < np.inf:
            n = msum_add(parts, n, -bound)
            exceeds = msum_round(parts, n) > 0.0
    elif kind == KIND_CHANGED:
        exceeds = total > bound
    return total, exceeds


@internal
def box_alive(row, goal, problem, resources, parts, spare):
    """Whether the box meets every lifted input constraint; and the goal resource's least value
    (0 when there is no goal resource). ``parts`` and ``spare``: buffers of partials."""
    n_vars, cell_ptr, cell_lo, cell_hi, _, oh_ptr, oh_var, ln_ptr, ln_var, ln_coef, ln_rhs = problem
    if not one_hot_alive(row, n_vars, cell_ptr, cell_lo, cell_hi, oh_ptr, oh_var):
        return False, 0.0
    if not linear_alive(
        row, n_vars, cell_ptr, cell_lo, cell_hi, ln_ptr, ln_var, ln_coef, ln_rhs, parts
    ):
        return False, 0.0
    goal_cost = 0.0
    if resources is not None:
        rs_kind, rs_bound = resources[0:2]
        for r in range(rs_kind.shape[0]):
            bound = np.inf if r == goal else rs_bound[r]
            cost, exceeds = resource_cost(r, bound, row, problem, resources, parts, spare)
            if exceeds:
                return False, 0.0
            if r == goal:
                goal_cost = cost
    return True, goal_cost


@internal
def incumbent_ball(radius, goal, problem, resources, ball_lo, ball_hi, parts):
    """Cells of each variable whose exact (weighted) distance to the goal's row is below
    ``radius`` (its square, for a squared L2 goal), as a range per variable (empty when none);
    variables measured against another instance or in a one-hot group are left whole. Only
    points strictly closer than the incumbent matter. ``parts``: a buffer of partials."""
    n_vars, cell_ptr, cell_lo, cell_hi, var_int = problem[0:5]
    rs_ptr, pr_a, pr_b, pr_c, pr_group = resources[2:7]
    pr_w = resources[8]
    squared = resources[0][goal] == KIND_L2  # radius is then a square, as the goal's cost
    for v in range(n_vars):
        ball_lo[v] = 0
        ball_hi[v] = cell_ptr[v + 1] - cell_ptr[v] - 1
    for i in range(rs_ptr[goal], rs_ptr[goal + 1]):
        a = pr_a[i]
        if pr_b[i] >= 0 or pr_group[i] >= 0:
            continue
        first = cell_ptr[a + 1] - cell_ptr[a]
        last = -1
        for j in range(cell_ptr[a + 1] - cell_ptr[a]):
            c = cell_ptr[a] + j
            s, e, _ = pair_gap(
                cell_lo[c], cell_hi[c], np.int32(-1), 0.0, 0.0, pr_c[i], var_int[a] != 0
            )
            if squared:  # the sign of (weight * gap)**2 - radius, exactly
                m = squared_gap(parts, np.int64(0), s, e, pr_w[i])
                closer = msum_round(parts, msum_add(parts, m, -radius)) < 0.0
            elif pr_w[i] != 1.0:  # the sign of weight * gap - radius, exactly
                m = weighted_gap(parts, s, e, pr_w[i])
                closer = msum_round(parts, msum_add(parts, m, -radius)) < 0.0
            else:
                closer = s < radius or (s == radius and e < 0.0)
            if closer:
                first = min(first, j)
                last = j
        ball_lo[a] = first
        ball_hi[a] = last


@inlined
def _keeps(c, lo, hi, w, limit, integral):
    """Whether a cell ``[lo, hi]`` can hold a value whose weighted gap to ``c`` is below
    ``limit``."""
    s, _, _ = pair_gap(lo, hi, np.int32(-1), 0.0, 0.0, c, integral)
    return w * s < limit


@internal
def l1_ball_cut(row, radius, goal, problem, resources, parts, spare):
    """Narrow box ``row`` in place to the cells of each variable that can hold a point of the
    box strictly closer than ``radius`` under the L1 goal.

    A point of the box whose variable ``v`` lies in cell ``j`` is at least (the box's least
    distance ``g``, less ``v``'s own least gap, plus ``j``'s gap) away, as every other pair's
    gap is least over the box: a cell where that reaches ``radius`` holds nothing better. The
    global ball (:func:`incumbent_ball`) cuts ``v`` at ``radius``; this cuts it at ``radius -
    g + own``, which is what narrows states deep in the search. Kept cells are decided in
    float64 with a relative slack of 2**-40, so a cell is only ever kept wrongly, never
    dropped. Returns (changed, empty)."""
    n_vars, cell_ptr, cell_lo, cell_hi, var_int = problem[0:5]
    rs_ptr, pr_a, pr_b, pr_c, pr_group = resources[2:7]
    pr_w = resources[8]
    g, _ = resource_cost(goal, np.inf, row, problem, resources, parts, spare)
    slack = radius - g + (abs(radius) + abs(g)) * 2.0**-40
    changed = False
    for i in range(rs_ptr[goal], rs_ptr[goal + 1]):
        a = pr_a[i]
        if pr_b[i] >= 0 or pr_group[i] >= 0:
            continue
        base = cell_ptr[a]
        rl = np.int64(row[a])
        rh = np.int64(row[n_vars + a])
        c, w, integral = pr_c[i], pr_w[i], var_int[a] != 0
        own, _, _ = pair_gap(cell_lo[base + rl], cell_hi[base + rh], np.int32(-1), 0.0, 0.0, c,
                             integral)  # fmt: skip
        limit = w * own + slack
        # cells from j on lie above c (gaps grow with j), those before it below (gaps shrink)
        j = min(max(lower_bound(cell_hi, base + rl, base + rh + 1, c) - base, rl), rh)
        new_lo, new_hi = rh + 1, rl - 1
        if _keeps(c, cell_lo[base + j], cell_hi[base + j], w, limit, integral):
            new_lo = j
            lo, hi = j, rh  # the last kept cell of j..rh
            while lo < hi:
                mid = (lo + hi + 1) >> 1
                if _keeps(c, cell_lo[base + mid], cell_hi[base + mid], w, limit, integral):
                    lo = mid
                else:
                    hi = mid - 1
            new_hi = lo
        if j > rl and _keeps(c, cell_lo[base + j - 1], cell_hi[base + j - 1], w, limit, integral):
            new_hi = max(new_hi, j - 1)
            lo, hi = rl, j - 1  # the first kept cell of rl..j-1
            while lo < hi:
                mid = (lo + hi) >> 1
                if _keeps(c, cell_lo[base + mid], cell_hi[base + mid], w, limit, integral):
                    hi = mid
                else:
                    lo = mid + 1
            new_lo = lo
        if new_lo > new_hi:
            return True, True
        if new_lo != rl or new_hi != rh:
            changed = True
            row[a] = new_lo
            row[n_vars + a] = new_hi
    return changed, False
