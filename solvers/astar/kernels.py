"""Compiled kernels of the A* engine: plain functions over contiguous arrays, nothing else.

Vocabulary shared by every kernel (the Python side in ``problem.py`` builds these arrays):

* A **variable** is one (instance, feature) pair, or several tied by ``x1.f == x2.f``; there are
  ``n_vars``. Each variable's float32 line is cut by the thresholds that matter into **cells**:
  variable ``v`` owns cells ``cell_ptr[v] .. cell_ptr[v + 1] - 1``; cell ``c`` is the closed float32
  interval ``[cell_lo[c], cell_hi[c]]`` (integral for int and bool variables).
* A **box** is one row of ``2 * n_vars`` int32: ``row[v]`` and ``row[n_vars + v]`` are the first and
  last cell (ranks, relative to ``cell_ptr[v]``) that variable ``v`` may take.
* A **search tree** is a compacted tree over variables: node ``n`` is a split when
  ``nd_var[n] >= 0`` and sends cells ``<= nd_rank[n]`` left (``x < threshold`` goes left). At a
  leaf, ``nd_val[n, k]`` is its contribution to term ``k`` in integer units (term ``k`` scaled by
  ``2**q``, so that sums are exact); at a split, the best of its subtree. Every root-to-leaf path
  is feasible on its own, so a leaf is reachable in a box exactly when every split on its path lets
  the box through.
* A **state** is a box plus ``st_u[s, k]``, the exact upper bound of term ``k`` over the box (the
  sum over trees of the best reachable leaf), and ``st_ptr[s]``, the first tree in search order
  that may still have more than one reachable leaf. A state whose trees all have one reachable leaf
  is complete: its bounds are its values.

Why integers: leaf values scaled to int64 add exactly, so bounds are the same whatever the order
they were updated in, and a tie between the best solution and the best open state is a tie.
Why no fastmath: thresholds compare exactly and bounds use infinities. Distances and linear
constraints are decided exactly with error-free float transformations (``two_sum``,
``two_prod``) and Shewchuk / CPython ``fsum`` partials, so no state is kept or cut on a rounding.
"""

from __future__ import annotations

import math

import numpy as np

from veritas_dsl.solvers.astar.jit import internal, kernel

# -- modes, statuses, slots --------------------------------------------------------------------

MODE_MAXIMIZE = 0
"""Maximise term 0; terms 1.. are output constraints."""
MODE_FIND = 1
"""Find any complete state meeting every term's threshold (all terms are constraints)."""
MODE_DISTANCE = 2
"""Minimise the goal resource (a distance); all terms are constraints."""

STATUS_BUDGET = 0
"""The step budget of this call is spent; call again."""
STATUS_EXHAUSTED = 1
"""No open state is left: the incumbent (if any) is optimal, otherwise nothing is feasible."""
STATUS_OPTIMAL = 2
"""No open state can beat the incumbent."""
STATUS_MEMORY = 3
"""The state arena is nearly full; grow it (or stop) and call again."""
STATUS_SOLUTIONS = 4
"""The solution buffer is full or holds a solution to verify; drain it and call again."""
STATUS_FOUND = 5
"""Find mode: a verified solution was recorded."""

# ctx slots (int64)
C_HEAP = 0  # heap size
C_FREE = 1  # number of free rows on the free stack
C_NSOL = 2  # solutions recorded in the buffer
C_HAVE_INC = 3  # 1 once an incumbent exists
C_INC = 4  # incumbent key (states with key <= C_INC - margin cannot improve)
C_EXPANDED = 5  # states expanded so far
C_DIVE = 6  # the state being dived into, or -1
C_DIVE_STEPS = 7
C_BF_STEPS = 8
C_STAMP = 9  # stamp counter for scratch marks
C_PUSHED = 10  # states created so far
C_LIVE_PEAK = 11  # most live states at once
C_PRUNED = 12  # children cut by a bound or a constraint
C_DIVE_KEY = 13  # key of the state being dived into
N_CTX = 16

# params slots (int64)
P_MODE = 0
P_GOAL = 1  # index of the goal resource (distance mode), else -1
P_MARGIN = 2  # prune when key <= incumbent - margin (0 when units are exact)
P_DIVE_NUM = 3  # dive while dive_steps * den <= bf_steps * num
P_DIVE_DEN = 4
P_MAX_LEAVES = 5
P_MAX_DEPTH = 6
N_PARAMS = 8

NO_INCUMBENT = np.int64(-(2**62))
FLT_MAX = 3.4028234663852886e38
_SPLITTER = 134217729.0  # 2**27 + 1, Veltkamp's splitter for float64
N_PARTIALS = 128

KIND_CHANGED = 0
KIND_LINF = 1
KIND_L1 = 2

# -- arrays ---------------------------------------------------------------------------------------


@internal
def _lower_bound(a, lo, hi, x):
    """The first index in ``lo:hi`` where sorted ``a`` is ``>= x`` (``hi`` when none), as
    ``np.searchsorted``, whose generic comparisons take seconds to compile."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@internal
def _copy(dst, src):
    """``dst[:len(src)] = src``. A slice assignment would check shapes and format its error
    message, which makes Numba compile string formatting into every kernel that has one."""
    for i in range(src.shape[0]):
        dst[i] = src[i]


# -- exact arithmetic ----------------------------------------------------------------------------


@kernel
def two_sum(a, b):
    """``a + b == s + e`` exactly (Knuth), for finite float64 ``a``, ``b`` without overflow."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e


@internal
def _split(a):
    c = _SPLITTER * a
    hi = c - (c - a)
    return hi, a - hi


@kernel
def two_prod(a, b):
    """``a * b == p + e`` exactly (Dekker), barring overflow and underflow."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


@kernel
def msum_add(partials, n, x):
    """Add ``x`` to the exact sum held in ``partials[:n]`` (non-overlapping, increasing); return
    the new count. This is the inner loop of CPython's ``math.fsum``."""
    i = 0
    for j in range(n):
        y = partials[j]
        if abs(x) < abs(y):
            x, y = y, x
        hi = x + y
        lo = y - (hi - x)
        if lo != 0.0:
            partials[i] = lo
            i += 1
        x = hi
    partials[i] = x
    return i + 1


@kernel
def msum_round(partials, n):
    """The exact sum of ``partials[:n]`` correctly rounded to float64 (CPython's ``fsum`` end)."""
    if n == 0:
        return 0.0
    n -= 1
    hi = partials[n]
    lo = 0.0
    while n > 0:
        x = hi
        n -= 1
        y = partials[n]
        hi = x + y
        yr = hi - x
        lo = y - yr
        if lo != 0.0:
            break
    if n > 0 and ((lo < 0.0 and partials[n - 1] < 0.0) or (lo > 0.0 and partials[n - 1] > 0.0)):
        y = lo * 2.0
        x = hi + y
        yr = x - hi
        if y == yr:
            hi = x
    return hi


@kernel
def encode_distance(d):
    """A non-negative int64 that orders like the non-negative float64 ``d`` (0 for 0): the IEEE
    layout, biased exponent then the 52 fraction bits. Distances here are never subnormal."""
    if d <= 0.0:
        return np.int64(0)
    m, e = math.frexp(d)  # d = m * 2**e, 0.5 <= m < 1
    return np.int64(e + 1022) * np.int64(2**52) + np.int64((2.0 * m - 1.0) * 4503599627370496.0)


@kernel
def decode_distance(key):
    """Inverse of :func:`encode_distance`."""
    if key <= 0:
        return 0.0
    e = key // np.int64(2**52) - 1022
    m = (float(key % np.int64(2**52)) / 4503599627370496.0 + 1.0) / 2.0
    return math.ldexp(m, e)


# -- heap of open states: max on (key, tie) ----------------------------------------------------


@internal
def _better(k1, t1, k2, t2):
    return k1 > k2 or (k1 == k2 and t1 > t2)


@internal
def heap_push(hp_key, hp_tie, hp_state, size, key, tie, state):
    """Insert ``state``; return the new size."""
    i = size
    while i > 0:
        p = (i - 1) >> 1
        if not _better(key, tie, hp_key[p], hp_tie[p]):
            break
        hp_key[i] = hp_key[p]
        hp_tie[i] = hp_tie[p]
        hp_state[i] = hp_state[p]
        i = p
    hp_key[i] = key
    hp_tie[i] = tie
    hp_state[i] = state
    return size + 1


@internal
def heap_pop(hp_key, hp_tie, hp_state, size):
    """Remove the best entry; return ``(state, new size)``."""
    top = hp_state[0]
    size -= 1
    if size > 0:
        key = hp_key[size]
        tie = hp_tie[size]
        state = hp_state[size]
        i = 0
        while True:
            c = 2 * i + 1
            if c >= size:
                break
            if c + 1 < size and _better(hp_key[c + 1], hp_tie[c + 1], hp_key[c], hp_tie[c]):
                c += 1
            if not _better(hp_key[c], hp_tie[c], key, tie):
                break
            hp_key[i] = hp_key[c]
            hp_tie[i] = hp_tie[c]
            hp_state[i] = hp_state[c]
            i = c
        hp_key[i] = key
        hp_tie[i] = tie
        hp_state[i] = state
    return top, size


# -- trees in a box ------------------------------------------------------------------------------


@kernel
def tree_max(root, row, n_vars, nd_var, nd_rank, nd_left, nd_right, nd_max, out, arg, stack):
    """``out[k]`` = best value of term ``k`` over the leaves reachable in box ``row``, reached at
    leaf ``arg[k]``.

    ``nd_max[n, k]`` is the best value of term ``k`` in the subtree of ``n`` (the leaf's own
    value at a leaf), so subtrees that cannot improve every term are skipped and the better
    child is visited first. ``stack`` needs the tree's depth + 2 slots.
    """
    n_terms = out.shape[0]
    for k in range(n_terms):
        out[k] = NO_INCUMBENT
    stack[0] = root
    top = 1
    while top > 0:
        top -= 1
        node = stack[top]
        useful = False
        for k in range(n_terms):
            if nd_max[node, k] > out[k]:
                useful = True
                break
        if not useful:
            continue
        v = nd_var[node]
        if v < 0:
            for k in range(n_terms):
                if nd_max[node, k] > out[k]:
                    out[k] = nd_max[node, k]
                    arg[k] = node
            continue
        r = nd_rank[node]
        left = nd_left[node]
        right = nd_right[node]
        go_left = row[v] <= r
        go_right = row[n_vars + v] > r
        if go_left and go_right and nd_max[left, 0] > nd_max[right, 0]:
            stack[top] = right  # popped last
            stack[top + 1] = left
            top += 2
            continue
        if go_left:
            stack[top] = left
            top += 1
        if go_right:
            stack[top] = right
            top += 1
    return out


@internal
def leaf_reachable(leaf, row, n_vars, lf_start, lf_end, lf_var, lf_lo, lf_hi):
    """Whether ``leaf`` is reachable in box ``row`` (its box meets the row's on every variable)."""
    for e in range(lf_start[leaf], lf_end[leaf]):
        v = lf_var[e]
        if max(row[v], lf_lo[e]) > min(row[n_vars + v], lf_hi[e]):
            return False
    return True


@internal
def tree_is_fixed(root, row, n_vars, nd_var, nd_rank, nd_left, nd_right):
    """True when exactly one leaf of the tree is reachable in box ``row``."""
    node = root
    while nd_var[node] >= 0:
        v = nd_var[node]
        r = nd_rank[node]
        go_left = row[v] <= r
        go_right = row[n_vars + v] > r
        if go_left and go_right:
            return False
        node = nd_left[node] if go_left else nd_right[node]
    return True


@internal
def tree_leaves(root, row, n_vars, nd_var, nd_rank, nd_left, nd_right, leaves, stack):
    """Write the leaves reachable in box ``row`` into ``leaves``; return their number."""
    count = 0
    stack[0] = root
    top = 1
    while top > 0:
        top -= 1
        node = stack[top]
        v = nd_var[node]
        if v < 0:
            leaves[count] = node
            count += 1
            continue
        r = nd_rank[node]
        if row[n_vars + v] > r:
            stack[top] = nd_right[node]
            top += 1
        if row[v] <= r:
            stack[top] = nd_left[node]
            top += 1
    return count


# -- constraints lifted to boxes -----------------------------------------------------------------


@internal
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


@internal
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
            elif kind == KIND_L1:
                cost += gap
            elif gap != 0.0 and pr_unit[j] != counted:
                cost += 1.0
                counted = pr_unit[j]
        best = min(best, cost)
    return best


@kernel
def resource_cost(
    r,
    bound,
    row,
    n_vars,
    cell_ptr,
    cell_lo,
    cell_hi,
    var_int,
    oh_ptr,
    oh_var,
    rs_kind,
    rs_ptr,
    pr_a,
    pr_b,
    pr_c,
    pr_group,
    pr_unit,
    parts,
):
    """Least value of resource ``r`` (a change count, or an L-inf or L1 distance) over the box,
    correctly rounded, and whether it exceeds ``bound`` (decided on the exact value).

    Pairs of one one-hot group sit next to each other and are costed together; so do the pairs
    of one unit of a change count, which counts a unit once when any member surely differs.
    """
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
            elif kind == KIND_L1:
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
        if kind == KIND_LINF:
            total = max(total, s)
            if s > bound or (s == bound and e > 0.0):
                exceeds = True
        elif kind == KIND_L1:
            n = msum_add(parts, n, s)
            n = msum_add(parts, n, e)
        elif differs and pr_unit[i] != counted:
            total += 1.0
            counted = pr_unit[i]
        i += 1
    if kind == KIND_L1:
        total = msum_round(parts, n)
        if bound < np.inf:
            n = msum_add(parts, n, -bound)
            exceeds = msum_round(parts, n) > 0.0
    elif kind == KIND_CHANGED:
        exceeds = total > bound
    return total, exceeds


@kernel
def box_alive(row, goal, problem, parts):
    """Whether the box meets every lifted input constraint; and the goal resource's least value
    (0 when there is no goal resource)."""
    (
        n_vars,
        cell_ptr,
        cell_lo,
        cell_hi,
        var_int,
        oh_ptr,
        oh_var,
        rs_kind,
        rs_bound,
        rs_ptr,
        pr_a,
        pr_b,
        pr_c,
        pr_group,
        pr_unit,
        ln_ptr,
        ln_var,
        ln_coef,
        ln_rhs,
    ) = problem
    if not one_hot_alive(row, n_vars, cell_ptr, cell_lo, cell_hi, oh_ptr, oh_var):
        return False, 0.0
    if not linear_alive(
        row, n_vars, cell_ptr, cell_lo, cell_hi, ln_ptr, ln_var, ln_coef, ln_rhs, parts
    ):
        return False, 0.0
    goal_cost = 0.0
    for r in range(rs_kind.shape[0]):
        bound = np.inf if r == goal else rs_bound[r]
        cost, exceeds = resource_cost(
            r,
            bound,
            row,
            n_vars,
            cell_ptr,
            cell_lo,
            cell_hi,
            var_int,
            oh_ptr,
            oh_var,
            rs_kind,
            rs_ptr,
            pr_a,
            pr_b,
            pr_c,
            pr_group,
            pr_unit,
            parts,
        )
        if exceeds:
            return False, 0.0
        if r == goal:
            goal_cost = cost
    return True, goal_cost


# -- keys ------------------------------------------------------------------------------------------


@internal
def terms_slack(u, term_thr, term_cons):
    """Least ``u[k] - thr[k]`` over constraint terms (0 when there are none)."""
    slack = np.int64(2**62)
    found = False
    for k in range(u.shape[0]):
        if term_cons[k]:
            found = True
            d = u[k] - term_thr[k]
            if d < slack:
                slack = d
    return slack if found else np.int64(0)


@internal
def terms_verdict(u, term_thr, term_sure, term_cons):
    """-1 when some constraint term surely fails (``u[k] < thr[k]``), 1 when all surely hold
    (``u[k] >= sure[k]``), 0 when the model's own float64 sum could go either way (the caller
    checks those on the point)."""
    verdict = 1
    for k in range(u.shape[0]):
        if term_cons[k]:
            if u[k] < term_thr[k]:
                return -1
            if u[k] < term_sure[k]:
                verdict = 0
    return verdict


@internal
def state_key(mode, u, goal_cost, depth, term_thr, term_cons):
    """Priority ``(key, tie)`` of a state: larger is better."""
    if mode == MODE_MAXIMIZE:
        return u[0], np.int64(depth)
    if mode == MODE_FIND:
        return terms_slack(u, term_thr, term_cons), np.int64(depth)
    return -encode_distance(goal_cost), terms_slack(u, term_thr, term_cons)


# -- the search --------------------------------------------------------------------------------


@internal
def full_bounds(trees, row, n_vars, u_base, u, out, arg, stack):
    """``u`` = every term's bound over box ``row``: ``u_base`` plus each tree's best leaf."""
    tr_root, nd_var, nd_rank, nd_left, nd_right, nd_val = trees[0:6]
    _copy(u, u_base)
    for t in range(tr_root.shape[0]):
        tree_max(
            tr_root[t], row, n_vars, nd_var, nd_rank, nd_left, nd_right, nd_val, out, arg, stack
        )
        for k in range(u.shape[0]):
            u[k] += out[k]


@kernel
def push_root(trees, problem, terms, params, root, dynamic, ctx):
    """Create the root state (box ``root``) and push it when it is alive; return whether it
    was."""
    term_thr, term_sure, term_cons, u_base = terms
    box, st_u, st_ptr, free, hp_key, hp_tie, hp_state = dynamic
    n_vars = problem[0]
    K = st_u.shape[1]
    stack = np.empty(params[P_MAX_DEPTH] + 2, dtype=np.int32)
    parts = np.empty(N_PARTIALS)
    out = np.empty(K, dtype=np.int64)
    arg = np.empty(K, dtype=np.int32)
    alive, goal_cost = box_alive(root, params[P_GOAL], problem, parts)
    if not alive:
        return False
    u = np.empty(K, dtype=np.int64)
    full_bounds(trees, root, n_vars, u_base, u, out, arg, stack)
    if terms_verdict(u, term_thr, term_sure, term_cons) < 0:
        return False
    ctx[C_FREE] -= 1
    s = free[ctx[C_FREE]]
    _copy(box[s], root)
    _copy(st_u[s], u)
    st_ptr[s] = 0
    key, tie = state_key(params[P_MODE], u, goal_cost, np.int64(0), term_thr, term_cons)
    ctx[C_HEAP] = heap_push(hp_key, hp_tie, hp_state, ctx[C_HEAP], key, tie, np.int64(s))
    ctx[C_PUSHED] += 1
    return True


@kernel
def search(trees, problem, terms, params, dynamic, solutions, ctx, budget):
    """Run up to ``budget`` expansions of best-first search with greedy dives; return a status.

    Best-first order on the key gives the bound (the best key in the heap, or of the state being
    dived into); dives follow the best child down to a complete state and give solutions early.
    Dives take turns with best-first expansions: a dive starts whenever
    ``dive_steps * P_DIVE_DEN <= best_first_steps * P_DIVE_NUM``. In distance mode, once a
    solution exists, a state is cut to the open ball of its distance around the row before it is
    expanded (:func:`incumbent_ball`) and its bounds recomputed. Everything persists in
    ``dynamic`` and ``ctx`` between calls.

    Parameters
    ----------
    trees : tuple
        ``tr_root, nd_var, nd_rank, nd_left, nd_right, nd_val, lf_start, lf_end, lf_var, lf_lo,
        lf_hi, vs_ptr, vs_rank, vs_tree``: trees in search order, node arrays, each leaf's box
        (entries ``lf_start[n]:lf_end[n]`` give a variable and a cell range), and, per variable,
        the splits on it sorted by rank (``vs_rank``, ``vs_tree``).
    problem : tuple
        The lifted input constraints, as :func:`box_alive` reads them.
    terms : tuple
        ``term_thr, term_sure, term_cons, u_base`` (int64, int64, int8, int64; one per term): a
        constraint term ``k`` (``term_cons[k]``) surely fails below ``term_thr[k]`` units and
        surely holds from ``term_sure[k]`` on; ``u_base`` is what trees fixed everywhere add.
    params : int64 array
        ``P_*`` slots.
    dynamic : tuple
        ``box, st_u, st_ptr, free, hp_key, hp_tie, hp_state``: the state arena, its free rows
        (``free[:ctx[C_FREE]]``) and the heap (``ctx[C_HEAP]`` entries).
    solutions : tuple
        ``sol_box, sol_u, sol_key, sol_flag, sol_cost``: complete states found (flag 1 when the
        bounds prove the output constraints, 0 when the caller must check them on the point).
    ctx : int64 array
        ``C_*`` slots, mutated.
    budget : int
        Most expansions in this call.
    """
    (
        tr_root,
        nd_var,
        nd_rank,
        nd_left,
        nd_right,
        nd_val,
        lf_start,
        lf_end,
        lf_var,
        lf_lo,
        lf_hi,
        vs_ptr,
        vs_rank,
        vs_tree,
    ) = trees
    term_thr, term_sure, term_cons, u_base = terms
    box, st_u, st_ptr, free, hp_key, hp_tie, hp_state = dynamic
    sol_box = solutions[0]
    n_vars = problem[0]
    mode = params[P_MODE]
    goal = params[P_GOAL]
    margin = params[P_MARGIN]
    n_trees = tr_root.shape[0]
    K = st_u.shape[1]
    max_leaves = params[P_MAX_LEAVES]

    stack = np.empty(params[P_MAX_DEPTH] + 2, dtype=np.int32)
    leaves = np.empty(max(max_leaves, 1), dtype=np.int32)
    parts = np.empty(N_PARTIALS)
    out = np.empty(K, dtype=np.int64)
    u = np.empty(K, dtype=np.int64)
    parent_max = np.empty((n_trees, K), dtype=np.int64)
    parent_arg = np.empty((n_trees, K), dtype=np.int32)
    arg = np.empty(K, dtype=np.int32)
    parent_stamp = np.zeros(n_trees, dtype=np.int64)
    child_stamp = np.zeros(n_trees, dtype=np.int64)
    affected = np.empty(n_trees, dtype=np.int32)
    # distance mode: the open ball of the incumbent's radius around the row, in cells
    ball_lo = np.empty(n_vars, dtype=np.int32)
    ball_hi = np.empty(n_vars, dtype=np.int32)
    ball_key = np.int64(0)
    use_ball = mode == MODE_DISTANCE and goal >= 0

    steps = 0
    while steps < budget:
        if ctx[C_FREE] < max_leaves + 1:
            return STATUS_MEMORY
        if ctx[C_NSOL] >= sol_box.shape[0]:
            return STATUS_SOLUTIONS
        have_inc = ctx[C_HAVE_INC] != 0
        floor_key = ctx[C_INC] - margin
        s = ctx[C_DIVE]
        diving = s >= 0
        if diving:
            ctx[C_DIVE] = -1
            if have_inc and ctx[C_DIVE_KEY] <= floor_key:
                free[ctx[C_FREE]] = s
                ctx[C_FREE] += 1
                continue
        else:
            if ctx[C_HEAP] == 0:
                return STATUS_EXHAUSTED
            if have_inc and hp_key[0] <= floor_key:
                return STATUS_OPTIMAL
            diving = ctx[C_DIVE_STEPS] * params[P_DIVE_DEN] <= ctx[C_BF_STEPS] * params[P_DIVE_NUM]
            s, ctx[C_HEAP] = heap_pop(hp_key, hp_tie, hp_state, ctx[C_HEAP])
        row = box[s]
        if use_ball and ctx[C_HAVE_INC] != 0:
            if ball_key != ctx[C_INC]:
                ball_key = ctx[C_INC]
                incumbent_ball(decode_distance(-ball_key), goal, problem, ball_lo, ball_hi)
            changed = False
            empty = False
            for v in range(n_vars):
                if ball_lo[v] > row[v] or ball_hi[v] < row[n_vars + v]:
                    changed = True
                    row[v] = max(row[v], ball_lo[v])
                    row[n_vars + v] = min(row[n_vars + v], ball_hi[v])
                    empty = empty or row[v] > row[n_vars + v]
            if changed:
                alive = not empty
                if alive:
                    alive, goal_cost = box_alive(row, goal, problem, parts)
                if alive:
                    full_bounds(trees, row, n_vars, u_base, st_u[s], out, arg, stack)
                    alive = terms_verdict(st_u[s], term_thr, term_sure, term_cons) >= 0
                if not alive:
                    free[ctx[C_FREE]] = s
                    ctx[C_FREE] += 1
                    ctx[C_PRUNED] += 1
                    continue
                key, tie = state_key(
                    mode, st_u[s], goal_cost, np.int64(st_ptr[s]), term_thr, term_cons
                )
                if not diving and ctx[C_HEAP] > 0 and _better(hp_key[0], hp_tie[0], key, tie):
                    # no longer the best open state: back in line with its new bound
                    ctx[C_HEAP] = heap_push(hp_key, hp_tie, hp_state, ctx[C_HEAP], key, tie, s)
                    continue
        steps += 1
        ctx[C_EXPANDED] += 1
        if diving:
            ctx[C_DIVE_STEPS] += 1
        else:
            ctx[C_BF_STEPS] += 1
        # trees before st_ptr[s] have one reachable leaf; skip the ones that got fixed since
        first = st_ptr[s]
        while first < n_trees and tree_is_fixed(
            tr_root[first], row, n_vars, nd_var, nd_rank, nd_left, nd_right
        ):
            first += 1
        t_next = first
        if t_next == n_trees:
            status = _complete(
                s, row, mode, goal, problem, terms, st_u, solutions, ctx, parts, have_inc, floor_key
            )
            free[ctx[C_FREE]] = s
            ctx[C_FREE] += 1
            if status != STATUS_BUDGET:
                return status
            continue
        n_leaves = tree_leaves(
            tr_root[t_next], row, n_vars, nd_var, nd_rank, nd_left, nd_right, leaves, stack
        )
        # trees are expanded in search order (largest spread first): children start after it;
        # depth, the tie-break, counts the trees fixed so far
        child_first = t_next + 1
        depth = child_first
        ctx[C_STAMP] += 1
        expansion_stamp = ctx[C_STAMP]
        best = -1
        best_score = np.int64(0)
        best_score_tie = np.int64(0)
        best_key = np.int64(0)
        best_tie = np.int64(0)
        for li in range(n_leaves):
            leaf = leaves[li]
            ctx[C_FREE] -= 1
            c = free[ctx[C_FREE]]
            crow = box[c]
            _copy(crow, row)
            for e in range(lf_start[leaf], lf_end[leaf]):
                v = lf_var[e]
                crow[v] = max(row[v], lf_lo[e])
                crow[n_vars + v] = min(row[n_vars + v], lf_hi[e])
            alive, goal_cost = box_alive(crow, goal, problem, parts)
            key = np.int64(0)
            tie = np.int64(0)
            if alive:
                n_aff = _affected_trees(
                    leaf, row, crow, n_vars, lf_start, lf_end, lf_var, vs_ptr, vs_rank, vs_tree,
                    first, child_stamp, ctx, affected,
                )  # fmt: skip
                _copy(u, st_u[s])
                for ai in range(n_aff):
                    t = affected[ai]
                    if parent_stamp[t] != expansion_stamp:
                        parent_stamp[t] = expansion_stamp
                        tree_max(
                            tr_root[t], row, n_vars, nd_var, nd_rank, nd_left, nd_right, nd_val,
                            parent_max[t], parent_arg[t], stack,
                        )  # fmt: skip
                    # a tree's best can only drop, and not while its best leaf stays reachable
                    kept = True
                    for k in range(K):
                        if not leaf_reachable(
                            parent_arg[t, k], crow, n_vars, lf_start, lf_end, lf_var, lf_lo, lf_hi
                        ):
                            kept = False
                            break
                    if kept:
                        continue
                    tree_max(
                        tr_root[t], crow, n_vars, nd_var, nd_rank, nd_left, nd_right, nd_val, out,
                        arg, stack,
                    )  # fmt: skip
                    for k in range(K):
                        u[k] += out[k] - parent_max[t, k]
                alive = terms_verdict(u, term_thr, term_sure, term_cons) >= 0
            if alive:
                key, tie = state_key(mode, u, goal_cost, depth, term_thr, term_cons)
                alive = not (have_inc and key <= floor_key)
            if not alive:
                free[ctx[C_FREE]] = c
                ctx[C_FREE] += 1
                ctx[C_PRUNED] += 1
                continue
            _copy(st_u[c], u)
            st_ptr[c] = child_first
            ctx[C_PUSHED] += 1
            if diving:
                # a distance dive heads for the output constraints first, then for closeness
                score, score_tie = (tie, key) if mode == MODE_DISTANCE else (key, tie)
                if best < 0 or _better(score, score_tie, best_score, best_score_tie):
                    if best >= 0:
                        ctx[C_HEAP] = heap_push(
                            hp_key, hp_tie, hp_state, ctx[C_HEAP], best_key, best_tie,
                            np.int64(best),
                        )  # fmt: skip
                    best = c
                    best_score = score
                    best_score_tie = score_tie
                    best_key = key
                    best_tie = tie
                    continue
            ctx[C_HEAP] = heap_push(hp_key, hp_tie, hp_state, ctx[C_HEAP], key, tie, np.int64(c))
        free[ctx[C_FREE]] = s
        ctx[C_FREE] += 1
        if best >= 0:
            ctx[C_DIVE] = best
            ctx[C_DIVE_KEY] = best_key
        live = box.shape[0] - ctx[C_FREE]
        if live > ctx[C_LIVE_PEAK]:
            ctx[C_LIVE_PEAK] = live
    return STATUS_BUDGET


@internal
def incumbent_ball(radius, goal, problem, ball_lo, ball_hi):
    """Cells of each variable whose exact distance to the goal's row is below ``radius``, as a
    range per variable (empty when none); variables measured against another instance or in a
    one-hot group are left whole. Only points strictly closer than the incumbent matter."""
    n_vars = problem[0]
    cell_ptr, cell_lo, cell_hi, var_int = problem[1:5]
    rs_ptr, pr_a, pr_b, pr_c, pr_group = problem[9:14]
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
            if s < radius or (s == radius and e < 0.0):
                first = min(first, j)
                last = j
        ball_lo[a] = first
        ball_hi[a] = last


@internal
def _affected_trees(
    leaf, row, crow, n_vars, lf_start, lf_end, lf_var, vs_ptr, vs_rank, vs_tree, t_first, mark,
    ctx, affected,
):  # fmt: skip
    """Trees (from ``t_first`` on in search order) with a split whose side the step from ``row``
    to ``crow`` decided: the only ones whose best reachable leaf can change. Written to
    ``affected``; returns their number."""
    ctx[C_STAMP] += 1
    stamp = ctx[C_STAMP]
    n_aff = 0
    for e in range(lf_start[leaf], lf_end[leaf]):
        v = lf_var[e]
        base = vs_ptr[v]
        end = vs_ptr[v + 1]
        for side in range(2):
            # splits at ranks lo_r..hi_r went from undecided to decided
            if side == 0:
                lo_r = np.int64(row[v])
                hi_r = np.int64(crow[v]) - 1
            else:
                lo_r = np.int64(crow[n_vars + v])
                hi_r = np.int64(row[n_vars + v]) - 1
            if hi_r < lo_r:
                continue
            i0 = _lower_bound(vs_rank, base, end, lo_r)
            i1 = _lower_bound(vs_rank, base, end, hi_r + 1)  # ranks are integers
            for i in range(i0, i1):
                t = vs_tree[i]
                if t >= t_first and mark[t] != stamp:
                    mark[t] = stamp
                    affected[n_aff] = t
                    n_aff += 1
    return n_aff


@internal
def _complete(s, row, mode, goal, problem, terms, st_u, solutions, ctx, parts, have_inc, floor_key):
    """Record complete state ``s`` as a solution when it can improve; return a status."""
    term_thr, term_sure, term_cons, _ = terms
    sol_box, sol_u, sol_key, sol_flag, sol_cost = solutions
    u = st_u[s]
    verdict = terms_verdict(u, term_thr, term_sure, term_cons)
    if verdict < 0:
        return STATUS_BUDGET
    goal_cost = 0.0
    if mode == MODE_DISTANCE:
        _, goal_cost = box_alive(row, goal, problem, parts)
    key, _ = state_key(mode, u, goal_cost, np.int64(0), term_thr, term_cons)
    if have_inc and key <= floor_key:
        return STATUS_BUDGET
    i = ctx[C_NSOL]
    _copy(sol_box[i], row)
    _copy(sol_u[i], u)
    sol_key[i] = key
    sol_flag[i] = verdict
    sol_cost[i] = goal_cost
    ctx[C_NSOL] = i + 1
    if verdict == 0:
        return STATUS_SOLUTIONS  # the caller checks it on the point before it counts
    ctx[C_HAVE_INC] = 1
    ctx[C_INC] = key
    if mode == MODE_FIND:
        return STATUS_FOUND
    return STATUS_BUDGET


# -- preparation -----------------------------------------------------------------------------------


@kernel
def compact_trees(
    nd_var, nd_rank, nd_left, nd_right, job_a, job_b, root_lo, root_hi, job_cap, out_cap
):
    """Copy trees with every split decided by the box (the root box narrowed along the path)
    removed, and chain a second tree under each leaf of the first (a product tree) when
    ``job_b[j] >= 0``.

    Input nodes: ``nd_var`` (variable, -1 at leaves), ``nd_rank``, ``nd_left``, ``nd_right``
    (absolute). Output, in pre-order per job: variable, rank, left, right (absolute in the output),
    ``src_a`` and ``src_b`` (source leaves of the two trees at output leaves, -1 otherwise), and
    ``job_root[j]`` (-1 when the job's output would exceed ``job_cap[j]`` nodes; it is then left
    out). Returns these arrays and the number of output nodes.
    """
    o_var = np.empty(out_cap, dtype=np.int32)
    o_rank = np.empty(out_cap, dtype=np.int32)
    o_left = np.empty(out_cap, dtype=np.int32)
    o_right = np.empty(out_cap, dtype=np.int32)
    o_src_a = np.empty(out_cap, dtype=np.int32)
    o_src_b = np.empty(out_cap, dtype=np.int32)
    job_root = np.full(job_a.shape[0], -1, dtype=np.int32)
    lo = root_lo.copy()
    hi = root_hi.copy()
    # work items: kind (0 visit, 1 restore), node, parent, side, stage, var, lo, hi, leaf_a
    cap = 64
    w_kind = np.empty(cap, dtype=np.int32)
    w_node = np.empty(cap, dtype=np.int32)
    w_parent = np.empty(cap, dtype=np.int32)
    w_side = np.empty(cap, dtype=np.int32)
    w_stage = np.empty(cap, dtype=np.int32)
    w_var = np.empty(cap, dtype=np.int32)
    w_lo = np.empty(cap, dtype=np.int32)
    w_hi = np.empty(cap, dtype=np.int32)
    w_leaf_a = np.empty(cap, dtype=np.int32)
    n_out = 0
    for j in range(job_a.shape[0]):
        start = n_out
        overflow = False
        top = 0
        w_kind[0] = 0
        w_node[0] = job_a[j]
        w_parent[0] = -1
        w_side[0] = 0
        w_stage[0] = 0
        w_var[0] = -1
        w_leaf_a[0] = -1
        top = 1
        while top > 0:
            top -= 1
            kind = w_kind[top]
            if kind == 1:
                lo[w_var[top]] = w_lo[top]
                hi[w_var[top]] = w_hi[top]
                continue
            node = w_node[top]
            parent = w_parent[top]
            side = w_side[top]
            stage = w_stage[top]
            leaf_a = w_leaf_a[top]
            if w_var[top] >= 0:
                lo[w_var[top]] = w_lo[top]
                hi[w_var[top]] = w_hi[top]
            if overflow:
                continue
            v = nd_var[node]
            if v < 0:
                if stage == 0 and job_b[j] >= 0:
                    # graft the second tree under this leaf
                    w_kind[top] = 0
                    w_node[top] = job_b[j]
                    w_parent[top] = parent
                    w_side[top] = side
                    w_stage[top] = 1
                    w_var[top] = -1
                    w_leaf_a[top] = node
                    top += 1
                    continue
                if n_out - start >= job_cap[j] or n_out >= out_cap:
                    overflow = True
                    continue
                o = n_out
                n_out += 1
                o_var[o] = -1
                o_rank[o] = 0
                o_left[o] = -1
                o_right[o] = -1
                if stage == 0:
                    o_src_a[o] = node
                    o_src_b[o] = -1
                else:
                    o_src_a[o] = leaf_a
                    o_src_b[o] = node
                if parent >= 0:
                    if side == 0:
                        o_left[parent] = o
                    else:
                        o_right[parent] = o
                continue
            r = nd_rank[node]
            follow = -1
            if hi[v] <= r:
                follow = nd_left[node]
            elif lo[v] > r:
                follow = nd_right[node]
            if top + 4 >= cap:
                cap *= 2
                w_kind = _grow(w_kind, cap)
                w_node = _grow(w_node, cap)
                w_parent = _grow(w_parent, cap)
                w_side = _grow(w_side, cap)
                w_stage = _grow(w_stage, cap)
                w_var = _grow(w_var, cap)
                w_lo = _grow(w_lo, cap)
                w_hi = _grow(w_hi, cap)
                w_leaf_a = _grow(w_leaf_a, cap)
            if follow >= 0:
                w_kind[top] = 0
                w_node[top] = follow
                w_parent[top] = parent
                w_side[top] = side
                w_stage[top] = stage
                w_var[top] = -1
                w_leaf_a[top] = leaf_a
                top += 1
                continue
            if n_out - start >= job_cap[j] or n_out >= out_cap:
                overflow = True
                continue
            o = n_out
            n_out += 1
            o_var[o] = v
            o_rank[o] = r
            o_src_a[o] = -1
            o_src_b[o] = -1
            if parent >= 0:
                if side == 0:
                    o_left[parent] = o
                else:
                    o_right[parent] = o
            old_lo = lo[v]
            old_hi = hi[v]
            # pushed in reverse: left subtree first, then restore, right subtree, restore
            for item in range(4):
                if item == 0 or item == 2:
                    w_kind[top] = 1
                    w_var[top] = v
                    w_lo[top] = old_lo
                    w_hi[top] = old_hi
                else:
                    w_kind[top] = 0
                    w_parent[top] = o
                    w_stage[top] = stage
                    w_leaf_a[top] = leaf_a
                    w_var[top] = v
                    if item == 1:
                        w_node[top] = nd_right[node]
                        w_side[top] = 1
                        w_lo[top] = max(old_lo, r + 1)
                        w_hi[top] = old_hi
                    else:
                        w_node[top] = nd_left[node]
                        w_side[top] = 0
                        w_lo[top] = old_lo
                        w_hi[top] = min(old_hi, r)
                top += 1
        if overflow:
            n_out = start
            _copy(lo, root_lo)
            _copy(hi, root_hi)
        else:
            job_root[j] = start
    return o_var, o_rank, o_left, o_right, o_src_a, o_src_b, job_root, n_out


@internal
def _grow(a, cap):
    b = np.empty(cap, dtype=a.dtype)
    _copy(b, a)
    return b


@kernel
def leaf_boxes(tr_root, nd_var, nd_rank, nd_left, nd_right, max_depth):
    """Each leaf's box as entries (variable, first cell, last cell), one per variable on its path.

    Returns ``lf_start, lf_end`` (per node; meaningful at leaves) and ``lf_var, lf_lo, lf_hi``.
    An unconstrained end is 0 (first) or ``2**30`` (last).
    """
    n_nodes = nd_var.shape[0]
    lf_start = np.zeros(n_nodes, dtype=np.int32)
    lf_end = np.zeros(n_nodes, dtype=np.int32)
    cap = 1024
    lf_var = np.empty(cap, dtype=np.int32)
    lf_lo = np.empty(cap, dtype=np.int32)
    lf_hi = np.empty(cap, dtype=np.int32)
    n = 0
    path_var = np.empty(max_depth + 1, dtype=np.int32)
    path_rank = np.empty(max_depth + 1, dtype=np.int32)
    path_left = np.empty(max_depth + 1, dtype=np.bool_)
    st_node = np.empty(2 * max_depth + 4, dtype=np.int32)
    st_depth = np.empty(2 * max_depth + 4, dtype=np.int32)
    st_left = np.empty(2 * max_depth + 4, dtype=np.bool_)
    for t in range(tr_root.shape[0]):
        top = 1
        st_node[0] = tr_root[t]
        st_depth[0] = 0
        while top > 0:
            top -= 1
            node = st_node[top]
            depth = st_depth[top]
            if depth > 0:
                path_left[depth - 1] = st_left[top]
            v = nd_var[node]
            if v >= 0:
                path_var[depth] = v
                path_rank[depth] = nd_rank[node]
                st_node[top] = nd_right[node]
                st_depth[top] = depth + 1
                st_left[top] = False
                st_node[top + 1] = nd_left[node]
                st_depth[top + 1] = depth + 1
                st_left[top + 1] = True
                top += 2
                continue
            lf_start[node] = n
            for d in range(depth):
                w = path_var[d]
                seen = False
                for e in range(lf_start[node], n):
                    seen = seen or lf_var[e] == w
                if seen:
                    continue
                lo_r = 0
                hi_r = 2**30
                for d2 in range(d, depth):
                    if path_var[d2] == w:
                        if path_left[d2]:
                            hi_r = min(hi_r, path_rank[d2])
                        else:
                            lo_r = max(lo_r, path_rank[d2] + 1)
                if n >= cap:
                    cap *= 2
                    lf_var = _grow(lf_var, cap)
                    lf_lo = _grow(lf_lo, cap)
                    lf_hi = _grow(lf_hi, cap)
                lf_var[n] = w
                lf_lo[n] = lo_r
                lf_hi[n] = hi_r
                n += 1
            lf_end[node] = n
    return lf_start, lf_end, lf_var[:n].copy(), lf_lo[:n].copy(), lf_hi[:n].copy()


@kernel
def subtree_max(nd_left, nd_right, nd_val):
    """Fill internal nodes of ``nd_val`` (int64, (n_nodes, K); leaves set) with the best value
    of each term in their subtree. Trees are in pre-order, so children come after parents."""
    for n in range(nd_left.shape[0] - 1, -1, -1):
        if nd_left[n] >= 0:
            for k in range(nd_val.shape[1]):
                nd_val[n, k] = max(nd_val[nd_left[n], k], nd_val[nd_right[n], k])
    return nd_val


@kernel
def node_depth(nd_left, nd_right):
    """Depth of every node of trees stored in pre-order (children after their parent)."""
    depth = np.zeros(nd_left.shape[0], dtype=np.int32)
    for n in range(nd_left.shape[0]):
        if nd_left[n] >= 0:
            depth[nd_left[n]] = depth[n] + 1
            depth[nd_right[n]] = depth[n] + 1
    return depth


@kernel
def eval_margins(feature, threshold, left, right, value, roots, base, x):
    """The model's raw outputs at float32 point ``x``: base plus leaf values in tree order, in
    float64, exactly as ``Ensemble.eval`` adds them."""
    total = base.copy()
    for t in range(roots.shape[0]):
        node = roots[t]
        while feature[node] >= 0:
            node = left[node] if x[feature[node]] < threshold[node] else right[node]
        for k in range(total.shape[0]):
            total[k] += value[node, k]
    return total
