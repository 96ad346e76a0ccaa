"""The search kernel: best-first expansion of states with greedy dives, in bounded calls.

:func:`search` is the only entry Python calls during a search; its steps are written as
functions inlined into it at Numba's level (:data:`~veritas_dsl.jit.inlined`), so
the whole loop is one compiled unit, as fast as one long function and compiled once. But for
:func:`_expand`, compiled on its own (:data:`~veritas_dsl.jit.internal`): Numba inlines a
function by running its front end again at the call site, which cost 1.3 s more of a cold
compile than compiling it apart, at the same speed (4,150 and 4,180 expansions a second on 100
trees of depth 6).
"""

from __future__ import annotations

import numpy as np

from veritas_dsl.jit import inlined, internal, kernel
from veritas_dsl.solvers.astar.kernels.arrays import copy_into
from veritas_dsl.solvers.astar.kernels.exact import decode_distance
from veritas_dsl.solvers.astar.kernels.feasibility import box_alive, incumbent_ball, l1_ball_cut
from veritas_dsl.solvers.astar.kernels.heap import better, heap_pop, heap_push
from veritas_dsl.solvers.astar.kernels.keys import state_key, terms_verdict
from veritas_dsl.solvers.astar.kernels.layout import (
    C_BF_STEPS,
    C_DIVE,
    C_DIVE_KEY,
    C_DIVE_STEPS,
    C_EPOCH,
    C_EXPANDED,
    C_FREE,
    C_HAVE_INC,
    C_HEAP,
    C_INC,
    C_LIVE_PEAK,
    C_NSOL,
    C_OFF,
    C_PRUNED,
    C_PUSHED,
    C_STAMP,
    C_STARTED,
    DEAD,
    KIND_L1,
    MODE_DISTANCE,
    MODE_FIND,
    P_DIVE_DEN,
    P_DIVE_NUM,
    P_GOAL,
    P_MARGIN,
    P_MAX_LEAVES,
    P_MODE,
    P_SOLUTIONS,
    STATUS_BUDGET,
    STATUS_EXHAUSTED,
    STATUS_FOUND,
    STATUS_MEMORY,
    STATUS_OPTIMAL,
    STATUS_SOLUTIONS,
)
from veritas_dsl.solvers.astar.kernels.trees import (
    affected_trees,
    full_bounds,
    leaf_reachable,
    tree_is_fixed,
    tree_leaves,
    tree_max,
)

# what _refresh decided
_DROPPED = 0
_REQUEUED = 1
_KEPT = 2


@kernel
def search(
    trees, problem, resources, terms, params, root, dynamic, solutions, scratch, ctx, budget
):  # fmt: skip
    """Run up to ``budget`` expansions of best-first search with greedy dives; return a status.

    The first call pushes the root state (box ``root``) when it is alive and returns
    ``STATUS_EXHAUSTED`` at once when it is not; a call with ``budget`` 0 does only that.
    Best-first order on the key gives the bound (the best key in the heap, or of the state being
    dived into); dives follow the best child down to a complete state and give solutions early.
    Dives take turns with best-first expansions: a dive starts whenever
    ``dive_steps * P_DIVE_DEN <= best_first_steps * P_DIVE_NUM``. In distance mode, once a
    solution exists, a state is cut to the open ball of its distance around the row before it is
    expanded (:func:`incumbent_ball`) and its bounds recomputed. Everything persists in
    ``dynamic``, ``scratch`` and ``ctx`` between calls.

    Output constraints may start **off** (``term_cons[k]`` ``TERM_OFF``, ``ctx[C_OFF]`` of
    them; trees feeding only off terms have ``tr_ep`` -1 and are neither split nor bounded): a
    complete state is then a solution of the constraints that are on, handed to the caller
    with ``sol_state`` its row and kept on the heap. The caller checks its point on every
    constraint and drops it (``st_ep`` ``DEAD``) when the point meets them all (nothing in the
    box is better) or breaks one that is on (so does the whole box); when the point breaks off
    ones, it switches some on (``term_ep``, ``tr_ep``: the epoch they went on) and bumps
    ``ctx[C_EPOCH]`` if the state was the best open one (``sol_top``), and otherwise leaves it
    on the heap. A state of an older epoch is stale: the bounds of the terms switched on since
    are added when it is next taken, before it is expanded. Off constraints only relax the
    search, so every bound stays a bound.

    Parameters
    ----------
    trees : tuple
        ``tr_root, nd_var, nd_rank, nd_left, nd_right, nd_max, lf_start, lf_end, lf_var, lf_lo,
        lf_hi, vs_ptr, vs_rank, vs_tree, tr_col, col_ptr, col_term, tr_val``: trees in search
        order, node arrays, each leaf's box (entries ``lf_start[n]:lf_end[n]`` give a variable
        and a cell range), per variable the splits on it sorted by rank (``vs_rank``,
        ``vs_tree``; those of trees that feed only off terms may be left out), and each tree's
        columns (the kernels' package docstring).
    problem, resources : tuple
        The lifted input constraints, as :func:`box_alive` reads them; ``resources`` None when
        there are none, and then their code (distances, the incumbent's ball) is not compiled:
        every use of it sits under ``resources is not None``, a branch Numba prunes by type.
    terms : tuple
        ``term_thr, term_sure, term_cons, u_base, term_ep, tr_ep`` (int64, int64, int8, int64,
        int64 per term; int64 per tree): a term is an objective, a constraint or an off
        constraint (``term_cons``, ``TERM_*``); a constraint surely fails below ``term_thr[k]``
        units and surely holds from ``term_sure[k]`` on; ``u_base`` is what trees fixed
        everywhere add; ``term_ep[k]`` the epoch term ``k`` went on (-1: off), ``tr_ep[t]`` the
        last epoch a term tree ``t`` feeds went on (-1: none is on).
    params : int64 array
        ``P_*`` slots.
    root : int32 array
        The root box.
    dynamic : tuple
        ``box, st_u, st_ptr, free, hp_key, hp_tie, hp_state, st_ep``: the state arena, its free
        rows (``free[:ctx[C_FREE]]``), the heap (``ctx[C_HEAP]`` entries) and each state's
        epoch.
    solutions : tuple
        ``sol_box, sol_u, sol_key, sol_flag, sol_cost, sol_state, sol_top``: complete states
        found (flag 1 when the bounds prove the output constraints, 0 when the caller must
        check them on the point; ``sol_state`` the state kept for the caller to settle, or -1;
        ``sol_top`` 1 when it was the best open state, not the end of a dive).
    scratch : tuple
        Work arrays, see ``search.py``'s ``scratch_arrays``.
    ctx : int64 array
        ``C_*`` slots, mutated.
    budget : int
        Most expansions in this call.

    The body is short; the docstring, the contract of every array, is what makes it long.
    """
    if ctx[C_STARTED] == 0:
        ctx[C_STARTED] = 1
        if not _push_root(trees, problem, resources, terms, params, root, dynamic, scratch, ctx):
            return STATUS_EXHAUSTED
    free, hp_key, hp_tie, hp_state, st_ep = dynamic[3:8]
    ball_lo, ball_hi = scratch[11:13]
    mode = params[P_MODE]
    goal = params[P_GOAL]
    use_ball = mode == MODE_DISTANCE and goal >= 0
    ball_key = np.int64(0)  # the incumbent the ball was cut for (0: none yet in this call)
    radius = np.inf
    steps = 0
    while steps < budget:
        if ctx[C_FREE] < params[P_MAX_LEAVES] + 1:
            return STATUS_MEMORY
        if ctx[C_NSOL] >= solutions[0].shape[0]:
            return STATUS_SOLUTIONS
        have_inc = ctx[C_HAVE_INC] != 0
        floor_key = ctx[C_INC] - params[P_MARGIN]
        s = ctx[C_DIVE]
        diving = s >= 0
        if diving:
            ctx[C_DIVE] = -1
            if have_inc and ctx[C_DIVE_KEY] <= floor_key:
                _release(free, ctx, s)
                continue
        else:
            if ctx[C_HEAP] == 0:
                return STATUS_EXHAUSTED
            if have_inc and hp_key[0] <= floor_key:
                return STATUS_OPTIMAL
            diving = ctx[C_DIVE_STEPS] * params[P_DIVE_DEN] <= ctx[C_BF_STEPS] * params[P_DIVE_NUM]
            s, ctx[C_HEAP] = heap_pop(hp_key, hp_tie, hp_state, ctx[C_HEAP])
        if st_ep[s] == DEAD:
            _release(free, ctx, s)
            continue
        stale = st_ep[s] != ctx[C_EPOCH]
        to_ball = use_ball and have_inc
        if resources is not None and to_ball and ball_key != ctx[C_INC]:
            ball_key = ctx[C_INC]
            radius = decode_distance(-ball_key)
            incumbent_ball(radius, goal, problem, resources, ball_lo, ball_hi, scratch[2])
        if stale or to_ball:
            kept = _refresh(
                s, diving, stale, to_ball, radius, trees, problem, resources, terms, params,
                dynamic, scratch, ctx,
            )  # fmt: skip
            if kept != _KEPT:
                continue
        steps += 1
        ctx[C_EXPANDED] += 1
        if diving:
            ctx[C_DIVE_STEPS] += 1
        else:
            ctx[C_BF_STEPS] += 1
        status = _expand(
            s, diving, have_inc, floor_key, trees, problem, resources, terms, params, dynamic,
            solutions, scratch, ctx,
        )  # fmt: skip
        if status != STATUS_BUDGET:
            return status
    return STATUS_BUDGET


@inlined
def _release(free, ctx, s):
    """Put row ``s`` back on the free stack."""
    free[ctx[C_FREE]] = s
    ctx[C_FREE] += 1


@inlined
def _push_root(trees, problem, resources, terms, params, root, dynamic, scratch, ctx):
    """Create the root state (box ``root``) and push it when it is alive; return whether it
    was."""
    term_thr, term_sure, term_cons, u_base, term_ep, tr_ep = terms
    box, st_u, st_ptr, free, hp_key, hp_tie, hp_state, st_ep = dynamic
    stack, _, parts, out, u, arg = scratch[0:6]
    ctx[C_FREE] -= 1
    s = free[ctx[C_FREE]]
    row = box[s]
    # read in the arena's integer type, as every other box: the int32 root would compile the
    # kernels it is passed to once more
    copy_into(row, root)
    alive, goal_cost = box_alive(row, params[P_GOAL], problem, resources, parts, scratch[13])
    if alive:
        full_bounds(trees, row, problem[0], u_base, tr_ep, term_ep, -1, u, out, arg, stack)
        alive = terms_verdict(u, term_thr, term_sure, term_cons) >= 0
    if not alive:
        _release(free, ctx, s)
        return False
    copy_into(st_u[s], u)
    st_ptr[s] = 0
    st_ep[s] = ctx[C_EPOCH]
    key, tie = state_key(params[P_MODE], u, goal_cost, np.int64(0), term_thr, term_cons)
    ctx[C_HEAP] = heap_push(hp_key, hp_tie, hp_state, ctx[C_HEAP], key, tie, np.int64(s))
    ctx[C_PUSHED] += 1
    return True


@inlined
def _refresh(
    s, diving, stale, to_ball, radius, trees, problem, resources, terms, params, dynamic,
    scratch, ctx,
):  # fmt: skip
    """Narrow state ``s`` to the incumbent's ball (``scratch``'s ``ball_lo``, ``ball_hi``) when
    ``to_ball``, under an L1 goal further to what the rest of its box leaves of ``radius`` (the
    incumbent's distance: :func:`l1_ball_cut`), and recompute its bounds when that changed it,
    or add those of the terms switched on since when it is ``stale`` (of an older epoch).
    Returns ``_DROPPED`` (nothing left; freed), ``_REQUEUED`` (no longer the best open state:
    back on the heap) or ``_KEPT``."""
    term_thr, term_sure, term_cons, u_base, term_ep, tr_ep = terms
    box, st_u, st_ptr, free, hp_key, hp_tie, hp_state, st_ep = dynamic
    stack, _, parts, out, _, arg = scratch[0:6]
    ball_lo, ball_hi = scratch[11:13]
    n_vars = problem[0]
    row = box[s]
    changed = False
    empty = False
    if resources is not None:  # to_ball is False without them
        for v in range(n_vars if to_ball else 0):
            # in int64, and nothing stored when empty: boxes may be uint8 and the ball's empty
            # range is (n_cells, -1)
            lo = max(np.int64(row[v]), np.int64(ball_lo[v]))
            hi = min(np.int64(row[n_vars + v]), np.int64(ball_hi[v]))
            if lo > hi:
                empty = True
                break
            if lo != row[v] or hi != row[n_vars + v]:
                changed = True
                row[v] = lo
                row[n_vars + v] = hi
        if to_ball and not empty and resources[0][params[P_GOAL]] == KIND_L1:
            cut, empty = l1_ball_cut(
                row, radius, params[P_GOAL], problem, resources, parts, scratch[13]
            )
            changed = changed or cut
    if not (changed or stale):
        return _KEPT
    alive = not empty
    goal_cost = 0.0
    if alive:
        alive, goal_cost = box_alive(row, params[P_GOAL], problem, resources, parts, scratch[13])
    if alive:
        # a cut box needs every bound again; a stale one, those of the terms switched on since
        since = -1 if changed else st_ep[s]
        first = full_bounds(trees, row, n_vars, u_base, tr_ep, term_ep, since, st_u[s], out, arg,
                            stack)  # fmt: skip
        if stale:  # trees switched on may have several leaves before the state's first
            st_ptr[s] = min(st_ptr[s], first)
            st_ep[s] = ctx[C_EPOCH]
        alive = terms_verdict(st_u[s], term_thr, term_sure, term_cons) >= 0
    if not alive:
        _release(free, ctx, s)
        ctx[C_PRUNED] += 1
        return _DROPPED
    mode = params[P_MODE]
    key, tie = state_key(mode, st_u[s], goal_cost, np.int64(st_ptr[s]), term_thr, term_cons)
    if not diving and ctx[C_HEAP] > 0 and better(hp_key[0], hp_tie[0], key, tie):
        ctx[C_HEAP] = heap_push(hp_key, hp_tie, hp_state, ctx[C_HEAP], key, tie, s)
        return _REQUEUED
    return _KEPT


@internal
def _expand(
    s, diving, have_inc, floor_key, trees, problem, resources, terms, params, dynamic, solutions,
    scratch, ctx,
):  # fmt: skip
    """Expand state ``s``: record it when complete, otherwise split it on the next tree in
    search order into one child per reachable leaf. Children that survive go on the heap, but
    when diving the best one is dived into next. Returns a status.

    Long because the loop over children keeps the dive's best child (five values) across
    iterations, and computes each child's bounds in place: as a step of its own, inlined, it
    unpacked the tuples once per child, which cost 31 % more reference counting and 9 % more
    instructions in this loop (callgrind, 100 trees of depth 6).
    """
    tr_root, nd_var, nd_rank, nd_left, nd_right, nd_max = trees[0:6]
    lf_start, lf_end, lf_var, lf_lo, lf_hi, vs_ptr, vs_rank, vs_tree = trees[6:14]
    tr_col, col_ptr, col_term, tr_val = trees[14:18]
    term_thr, term_sure, term_cons = terms[0:3]
    tr_ep = terms[5]
    box, st_u, st_ptr, free, hp_key, hp_tie, hp_state, st_ep = dynamic
    stack, leaves, parts, out, u, arg, parent_max, parent_arg = scratch[0:8]
    parent_stamp, child_stamp, affected = scratch[8:11]
    n_vars = problem[0]
    mode = params[P_MODE]
    goal = params[P_GOAL]
    n_trees = tr_root.shape[0]
    row = box[s]
    # trees before st_ptr[s] have one reachable leaf or are off; skip the ones that got fixed
    first = st_ptr[s]
    while first < n_trees and (
        tr_ep[first] < 0
        or tree_is_fixed(tr_root[first], row, n_vars, nd_var, nd_rank, nd_left, nd_right)
    ):
        first += 1
    if first == n_trees:
        status, held = _complete(s, row, diving, have_inc, floor_key, problem, resources, terms,
                                 params, dynamic, solutions, scratch, ctx)  # fmt: skip
        if not held:
            _release(free, ctx, s)
        return status
    n_leaves = tree_leaves(
        tr_root[first], row, n_vars, nd_var, nd_rank, nd_left, nd_right, leaves, stack
    )
    # trees are expanded in search order (largest spread first): children start after it;
    # depth, the tie-break, counts the trees fixed so far
    child_first = first + 1
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
        copy_into(crow, row)
        for e in range(lf_start[leaf], lf_end[leaf]):
            v = lf_var[e]
            crow[v] = max(row[v], lf_lo[e])
            crow[n_vars + v] = min(row[n_vars + v], lf_hi[e])
        alive, goal_cost = box_alive(crow, goal, problem, resources, parts, scratch[13])
        key = np.int64(0)
        tie = np.int64(0)
        if alive:
            # the parent's bounds, corrected on the trees the step can change whose best leaf
            # it made unreachable
            n_aff = affected_trees(
                leaf, row, crow, n_vars, lf_start, lf_end, lf_var, vs_ptr, vs_rank, vs_tree,
                first, tr_ep, child_stamp, ctx, affected,
            )  # fmt: skip
            copy_into(u, st_u[s])
            for ai in range(n_aff):
                t = affected[ai]
                c0 = tr_col[t]  # the tree's columns: its slots in parent_max and parent_arg
                n_cols = tr_col[t + 1] - c0
                if parent_stamp[t] != expansion_stamp:  # the parent's best leaves, once
                    parent_stamp[t] = expansion_stamp
                    tree_max(
                        tr_root[t], n_cols, tr_val[t], row, n_vars, nd_var, nd_rank, nd_left,
                        nd_right, nd_max, parent_max, parent_arg, c0, stack,
                    )  # fmt: skip
                # a tree's best can only drop, and not while its best leaf stays reachable
                kept = True
                for j in range(c0, c0 + n_cols):
                    if not leaf_reachable(
                        parent_arg[j], crow, n_vars, lf_start, lf_end, lf_var, lf_lo, lf_hi
                    ):
                        kept = False
                        break
                if kept:
                    continue
                tree_max(
                    tr_root[t], n_cols, tr_val[t], crow, n_vars, nd_var, nd_rank, nd_left,
                    nd_right, nd_max, out, arg, np.int64(0), stack,
                )  # fmt: skip
                for j in range(n_cols):
                    delta = out[j] - parent_max[c0 + j]
                    for e in range(col_ptr[c0 + j], col_ptr[c0 + j + 1]):
                        u[col_term[e]] += delta
            alive = terms_verdict(u, term_thr, term_sure, term_cons) >= 0
        if alive:
            key, tie = state_key(mode, u, goal_cost, depth, term_thr, term_cons)
            alive = not (have_inc and key <= floor_key)
        if not alive:
            _release(free, ctx, c)
            ctx[C_PRUNED] += 1
            continue
        copy_into(st_u[c], u)
        st_ptr[c] = child_first
        st_ep[c] = ctx[C_EPOCH]
        ctx[C_PUSHED] += 1
        if diving:
            # a distance dive heads for the output constraints first, then for closeness
            score, score_tie = (tie, key) if mode == MODE_DISTANCE else (key, tie)
            if best < 0 or better(score, score_tie, best_score, best_score_tie):
                if best >= 0:
                    ctx[C_HEAP] = heap_push(
                        hp_key, hp_tie, hp_state, ctx[C_HEAP], best_key, best_tie, np.int64(best)
                    )
                best = c
                best_score = score
                best_score_tie = score_tie
                best_key = key
                best_tie = tie
                continue
        ctx[C_HEAP] = heap_push(hp_key, hp_tie, hp_state, ctx[C_HEAP], key, tie, np.int64(c))
    _release(free, ctx, s)
    if best >= 0:
        ctx[C_DIVE] = best
        ctx[C_DIVE_KEY] = best_key
    live = box.shape[0] - ctx[C_FREE]
    if live > ctx[C_LIVE_PEAK]:
        ctx[C_LIVE_PEAK] = live
    return STATUS_BUDGET


@inlined
def _complete(s, row, diving, have_inc, floor_key, problem, resources, terms, params, dynamic,
              solutions, scratch, ctx):  # fmt: skip
    """Record complete state ``s`` (box ``row``) as a solution when it can improve; return a
    status, and whether ``s`` was kept for the caller to settle (output constraints are off)."""
    term_thr, term_sure, term_cons = terms[0:3]
    sol_box, sol_u, sol_key, sol_flag, sol_cost, sol_state, sol_top = solutions
    st_u = dynamic[1]
    hp_key, hp_tie, hp_state = dynamic[4:7]
    parts = scratch[2]
    mode = params[P_MODE]
    u = st_u[s]
    verdict = terms_verdict(u, term_thr, term_sure, term_cons)
    if verdict < 0:
        return STATUS_BUDGET, False
    goal_cost = 0.0
    if mode == MODE_DISTANCE:
        _, goal_cost = box_alive(row, params[P_GOAL], problem, resources, parts, scratch[13])
    key, tie = state_key(mode, u, goal_cost, np.int64(0), term_thr, term_cons)
    if have_inc and key <= floor_key:
        return STATUS_BUDGET, False
    held = ctx[C_OFF] > 0
    i = ctx[C_NSOL]
    copy_into(sol_box[i], row)
    copy_into(sol_u[i], u)
    sol_key[i] = key
    sol_flag[i] = 0 if held else verdict
    sol_cost[i] = goal_cost
    sol_state[i] = s if held else -1
    sol_top[i] = not diving
    ctx[C_NSOL] = i + 1
    if held:  # the box may hold points the off constraints reject: kept until settled
        ctx[C_HEAP] = heap_push(hp_key, hp_tie, hp_state, ctx[C_HEAP], key, tie, np.int64(s))
        return STATUS_SOLUTIONS, True
    if verdict == 0:
        return STATUS_SOLUTIONS, False  # the caller checks it on the point before it counts
    if params[P_SOLUTIONS] > 0:
        return STATUS_BUDGET, False  # the caller cuts below the Nth best, not the best
    ctx[C_HAVE_INC] = 1
    ctx[C_INC] = key
    if mode == MODE_FIND:
        return STATUS_FOUND, False
    return STATUS_BUDGET, False
