"""Per-state Lagrangian bounds and strong branching in a best-first search over boxes (issue 44).

    python bench/lagrange_states.py [--times 5,30] [--steps 10] [--root-steps 200] [--mu 0.15]
                                    [--candidates 4] [--models 54:80x8,28:300x8]

A prototype branch and bound, not the A* engine (whose states split one tree's leaves in a fixed
order): a state is a box of the input space (a range of global cells per feature, a cell lying
between two consecutive thresholds of the feature over all trees), split in two at one threshold.
Best-first on the box's bound, which is either

* ``sum``: the sum of each tree's best leaf reachable in the box, or
* ``lagr``: the Lagrangian of ``solvers/astar/lagrange.py`` restricted to the box (each tree's own
  cells and the shared copy's cells cut to the box), its multipliers started from the parent's
  (warm; the root's are minimised for ``--root-steps`` first, counted in the time), ``--steps``
  evaluations with Polyak steps toward A*'s 30 s incumbent between them; the box's bound is the
  least of these, the sum of best leaves and the parent's bound.

The box is split by either

* ``fixed``: the first tree (in the model's order) with two reachable leaves, at its first node
  with both children reachable, or
* ``strong``: of the ``--candidates`` trees whose best reachable leaf beats their second by most,
  the node where those two leaves' paths part; each candidate's two children are bounded cheaply
  (the sum, and for ``lagr`` one evaluation at the parent's multipliers) and the candidate whose
  larger child bound is least is taken.

Each of the four runs ``max(--times)`` seconds on the max and on the min (the max of the negated
model, shown in its own sign: its bound is the lower end) of ``bench/anytime_big.py``'s models,
beside A*'s bound and incumbent at the same times. The incumbent of a box search is the model at
one corner cell of each box popped. The bounds here are float64 sums (the box's exact bound is
``lagrange.box_bound``); the search is a measurement, not a proof.
"""

from __future__ import annotations

import argparse
import heapq
import itertools
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit

sys.path.insert(0, str(Path(__file__).parent))
from anytime_big import root_queries

from veritas_dsl.solvers.astar import lagrange
from veritas_dsl.solvers.astar.engine import AStarEngine
from veritas_dsl.solvers.base import Limits

LAM_BUDGET = 1 << 30  # bytes of stored multipliers; past it a box starts from the root's


@njit(cache=True)
def reachable(lo, hi, trees, root, out):
    """The leaves of the tree at ``root`` that meet the box ``[lo, hi)``: their count in ``out``.
    A node's path range on its own feature (``plo``, ``phi``) keeps empty paths out."""
    feat, cut, left, right, plo, phi = trees[:6]
    stack = np.empty(128, np.int64)
    stack[0], sp, k = root, 1, 0
    while sp:
        sp -= 1
        n = stack[sp]
        f = feat[n]
        if f < 0:
            out[k] = n
            k += 1
            continue
        a = max(plo[n], lo[f])
        b = min(phi[n], hi[f])
        if a <= cut[n]:
            stack[sp] = left[n]
            sp += 1
        if b > cut[n] + 1:
            stack[sp] = right[n]
            sp += 1
    return k


@njit(cache=True)
def leaf_sums(lo, hi, trees, best_v, best_n, second_v, second_n, count, leaves):
    """The sum of each tree's best reachable leaf; per tree its best and second leaf and count."""
    value, roots = trees[6], trees[7]
    total = 0.0
    for t in range(len(roots)):
        k = reachable(lo, hi, trees, roots[t], leaves)
        b, bn, s, sn = -np.inf, -1, -np.inf, -1
        for i in range(k):
            v = value[leaves[i]]
            if v > b:
                s, sn, b, bn = b, bn, v, leaves[i]
            elif v > s:
                s, sn = v, leaves[i]
        best_v[t], best_n[t], second_v[t], second_n[t], count[t] = b, bn, s, sn, k
        total += b
    return total


@njit(cache=True)
def lag_eval(lo, hi, lam, grad, touched, trees, dec, work):
    """``L(lam)`` on the box (without the base score); adds its subgradient to ``grad`` at the
    indices listed in ``touched`` (their count is returned)."""
    node_leaf, leaf_value, first_row, row_pair, row_a, row_b = dec[:6]
    pair_feature, goff, gmap, fp_start, fp_pairs = dec[6:]
    pa, pb, leaves, cells = work
    for p in range(len(pair_feature)):
        f = pair_feature[p]
        pa[p] = gmap[goff[p] + lo[f]]
        pb[p] = gmap[goff[p] + hi[f] - 1] + 1
    total, nt, roots = 0.0, 0, trees[7]
    for t in range(len(roots)):
        k = reachable(lo, hi, trees, roots[t], leaves)
        best, chosen = -np.inf, -1
        for i in range(k):
            leaf = node_leaf[leaves[i]]
            v = leaf_value[leaf]
            for r in range(first_row[leaf], first_row[leaf + 1]):
                p = row_pair[r]
                m = -np.inf
                for j in range(max(row_a[r], pa[p]), min(row_b[r], pb[p])):
                    m = max(m, lam[j])
                v += m
            if v > best:
                best, chosen = v, leaf
        total += best
        for r in range(first_row[chosen], first_row[chosen + 1]):
            p = row_pair[r]
            j = max(row_a[r], pa[p])
            for i in range(j + 1, min(row_b[r], pb[p])):
                j = i if lam[i] > lam[j] else j
            grad[j] += 1.0
            touched[nt] = j
            nt += 1
    for f in range(len(fp_start) - 1):
        if fp_start[f] == fp_start[f + 1]:
            continue
        width = hi[f] - lo[f]
        cells[:width] = 0.0
        for q in range(fp_start[f], fp_start[f + 1]):
            base = goff[fp_pairs[q]] + lo[f]
            for j in range(width):
                cells[j] -= lam[gmap[base + j]]
        j = np.argmax(cells[:width])
        total += cells[j]
        for q in range(fp_start[f], fp_start[f + 1]):
            idx = gmap[goff[fp_pairs[q]] + lo[f] + j]
            grad[idx] -= 1.0
            touched[nt] = idx
            nt += 1
    return total, nt


@njit(cache=True)
def lag_steps(lo, hi, lam0, evaluations, target, mu, trees, dec, work, grad, touched, gvals):
    """The least of ``evaluations`` values of ``L`` on the box from ``lam0``, Polyak steps toward
    ``target`` between them; returns it and its multipliers."""
    lam = lam0.astype(np.float64)
    best, best_lam = np.inf, lam.copy()
    for e in range(evaluations):
        value, nt = lag_eval(lo, hi, lam, grad, touched, trees, dec, work)
        if value < best:
            best = value
            best_lam[:] = lam
        norm = 0.0
        for i in range(nt):  # an index listed twice is read once, then 0
            gvals[i] = grad[touched[i]]
            grad[touched[i]] = 0.0
            norm += gvals[i] * gvals[i]
        if norm == 0.0 or e == evaluations - 1:  # norm 0: every copy agrees, L is exact
            break
        step = mu * max(value - target, 1e-9) / norm
        for i in range(nt):
            lam[touched[i]] -= step * gvals[i]
    return best, best_lam


@njit(cache=True)
def corner_value(lo, trees):
    """The model (without the base score) at a point of every feature's first cell in the box."""
    feat, cut, left, right = trees[:4]
    value, roots = trees[6], trees[7]
    total = 0.0
    for t in range(len(roots)):
        n = roots[t]
        while feat[n] >= 0:
            n = left[n] if lo[feat[n]] <= cut[n] else right[n]
        total += value[n]
    return total


@njit(cache=True)
def first_branch(lo, hi, trees, root):
    """The first node under ``root`` whose two children both meet the box (-1: one leaf)."""
    feat, cut, left, right, plo, phi = trees[:6]
    n = root
    while feat[n] >= 0:
        f = feat[n]
        go_left = max(plo[n], lo[f]) <= cut[n]
        go_right = min(phi[n], hi[f]) > cut[n] + 1
        if go_left and go_right:
            return n
        n = left[n] if go_left else right[n]
    return -1


class Forest:
    """One model output as the flat arrays the kernels read."""

    def __init__(self, model):
        self.d = d = lagrange.decompose(model)
        n_features = len(model.feature_names)
        thresholds = [np.zeros(0, np.float32)] * n_features
        for f, cuts in zip(sorted(set(d.pair_feature.tolist())), d.thresholds, strict=True):
            thresholds[f] = cuts
        self.n_cells = np.array([len(c) + 1 for c in thresholds], np.int64)
        feat = model.feature.astype(np.int64)
        cut = np.array([np.searchsorted(thresholds[f], x) if f >= 0 else 0
                        for f, x in zip(feat, model.threshold, strict=True)], np.int64)
        n = len(feat)
        plo, phi, node_leaf = np.zeros(n, np.int64), np.zeros(n, np.int64), np.full(n, -1)
        self.parent, self.depth = np.full(n, -1), np.zeros(n, np.int64)
        leaves = 0
        for root in model.tree_offsets[:-1]:  # decompose's order: its leaf numbering
            stack = [(int(root), {})]
            while stack:
                node, ranges = stack.pop()
                f = feat[node]
                if f < 0:
                    node_leaf[node] = leaves
                    leaves += 1
                    continue
                a, b = ranges.get(f, (0, self.n_cells[f]))
                plo[node], phi[node], r = a, b, cut[node]
                for child, rng in ((model.left[node], (a, min(b, r + 1))),
                                   (model.right[node], (max(a, r + 1), b))):
                    self.parent[child], self.depth[child] = node, self.depth[node] + 1
                    if rng[0] < rng[1]:
                        stack.append((int(child), {**ranges, f: rng}))
        values = model.value[:, 0].astype(np.float64)
        mapped = node_leaf >= 0
        assert leaves == len(d.leaf_value)
        assert np.array_equal(values[mapped], d.leaf_value[node_leaf[mapped]])
        self.roots = model.tree_offsets[:-1].astype(np.int64)
        self.trees = (feat, cut, model.left.astype(np.int64), model.right.astype(np.int64), plo,
                      phi, values, self.roots)  # fmt: skip
        order = np.argsort(d.pair_feature, kind="stable")
        fp_start = np.searchsorted(d.pair_feature[order], np.arange(n_features + 1))
        goff = np.concatenate([[0], np.cumsum(self.n_cells[d.pair_feature])])
        self.dec = (node_leaf, d.leaf_value, d.leaf_first_row, d.row_pair, d.row_bounds[::2].copy(),
                    d.row_bounds[1::2].copy(), d.pair_feature, goff, d.shared_lam,
                    fp_start.astype(np.int64), order.astype(np.int64))  # fmt: skip
        n_trees, n_pairs = len(self.roots), len(d.pair_feature)
        self.info = (np.zeros(n_trees), np.zeros(n_trees, np.int64), np.zeros(n_trees),
                     np.zeros(n_trees, np.int64), np.zeros(n_trees, np.int64))  # fmt: skip
        self.leaves = np.zeros(int(np.diff(model.tree_offsets).max()), np.int64)
        self.work = (np.zeros(n_pairs, np.int64), np.zeros(n_pairs, np.int64), self.leaves,
                     np.zeros(int(self.n_cells.max())))  # fmt: skip
        size = len(d.row_pair) + n_pairs
        self.grad, self.touched, self.gvals = np.zeros(d.n_lam), np.zeros(size, np.int64), \
            np.zeros(size)

    def sums(self, lo, hi):
        """The base score plus each tree's best leaf in the box, and whether the box is one leaf
        of every tree (then that is the model's value in it)."""
        total = leaf_sums(lo, hi, self.trees, *self.info, self.leaves)
        return self.d.base + total, bool((self.info[4] == 1).all())

    def lagrangian(self, lo, hi, lam, evaluations, target, mu):
        value, lam = lag_steps(lo, hi, lam, evaluations, target - self.d.base, mu, self.trees,
                               self.dec, self.work, self.grad, self.touched, self.gvals)
        return self.d.base + value, lam

    def parting(self, a, b):
        """The node where the paths to leaves ``a`` and ``b`` part."""
        while a != b:
            if self.depth[a] >= self.depth[b]:
                a = self.parent[a]
            else:
                b = self.parent[b]
        return a


def child_bound(forest, box, parent_bound, lam, evaluations, args):
    """A child box's bound, whether it is one leaf of every tree, and its multipliers."""
    total, complete = forest.sums(*box)
    bound = min(parent_bound, total)
    if lam is None or complete:
        return bound, complete, None
    value, lam = forest.lagrangian(*box, lam, evaluations, args.target, args.mu)
    return min(bound, value), complete, lam


def split(box, node, forest):
    feat, cut = forest.trees[0][node], forest.trees[1][node]
    (lo, hi), (left_hi, right_lo) = box, (box[1].copy(), box[0].copy())
    left_hi[feat], right_lo[feat] = cut + 1, cut + 1
    return (lo, left_hi), (right_lo, hi)


def branch(forest, box, bound, lam, rule, args):
    """The node to split the box at (``forest.info`` holds the box's per-tree leaves)."""
    best_v, best_n, second_v, second_n, count = (a.copy() for a in forest.info)
    multi = np.flatnonzero(count > 1)
    if rule == "fixed":
        return first_branch(*box, forest.trees, forest.roots[multi[0]])
    ranked = multi[np.argsort(second_v[multi] - best_v[multi], kind="stable")][: args.candidates]
    nodes = list(dict.fromkeys(forest.parting(best_n[t], second_n[t]) for t in ranked))
    if len(nodes) == 1:
        return nodes[0]
    scores = []
    for node in nodes:
        pair = [child_bound(forest, child, bound, lam, 1, args)[0]
                for child in split(box, node, forest)]  # fmt: skip
        scores.append((max(pair), sum(pair)))
    return nodes[min(range(len(nodes)), key=scores.__getitem__)]


def search(forest, kind, rule, limit, args):
    """Best-first over boxes for ``limit`` seconds: the trace of (time, expansions, proven bound)
    at each expansion, and the incumbent."""
    start = time.perf_counter()
    box = (np.zeros_like(forest.n_cells), forest.n_cells.copy())
    bound, complete = forest.sums(*box)
    root_lam = None
    if kind == "lagr":
        value, root_lam = forest.lagrangian(*box, np.zeros(forest.d.n_lam), args.root_steps,
                                            args.target, args.mu)  # fmt: skip
        bound = min(bound, value)
        root_lam = root_lam.astype(np.float32)
    ids, stored = itertools.count(), 0
    heap = [(-bound, next(ids), box, root_lam)]
    incumbent, trace, expanded = -np.inf, [], 0
    while heap:
        elapsed = time.perf_counter() - start
        if elapsed > limit or -heap[0][0] <= incumbent:
            break
        negative, _, box, lam = heapq.heappop(heap)
        bound = -negative
        trace.append((elapsed, expanded, bound))
        incumbent = max(incumbent, forest.d.base + corner_value(box[0], forest.trees))
        forest.sums(*box)
        lam = root_lam if lam is None and kind == "lagr" else lam
        node = branch(forest, box, bound, lam, rule, args)
        for child in split(box, node, forest):
            value, complete, child_lam = child_bound(forest, child, bound, lam, args.steps, args)
            if complete:
                incumbent = max(incumbent, value)
            elif value > incumbent:
                if child_lam is not None and stored < LAM_BUDGET:
                    child_lam = child_lam.astype(np.float32)
                    stored += child_lam.nbytes
                else:
                    child_lam = None
                heapq.heappush(heap, (-value, next(ids), child, child_lam))
        expanded += 1
    final = max(incumbent, -heap[0][0]) if heap else incumbent
    trace.append((time.perf_counter() - start, expanded, final))
    return trace, incumbent


def at_time(trace, t):
    """The proven bound and expansions at ``t`` seconds (the last record before it)."""
    point = trace[0]
    for record in trace:
        if record[0] > t:
            break
        point = record
    return point[2], point[1]


def at_count(trace, n):
    return next((r[2] for r in trace if r[1] >= n), trace[-1][2])


def uptime():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--times", default="5,30", help="seconds at which bounds are shown")
    parser.add_argument("--steps", type=int, default=10, help="L evaluations per box")
    parser.add_argument("--root-steps", type=int, default=200)
    parser.add_argument("--mu", type=float, default=0.15, help="Polyak step factor")
    parser.add_argument("--candidates", type=int, default=4, help="strong branching's trees")
    parser.add_argument("--models", default="54:80x8,28:300x8")
    parser.add_argument("--combos", default="sum:fixed,sum:strong,lagr:fixed,lagr:strong")
    args = parser.parse_args()
    times = [float(t) for t in args.times.split(",")]
    print(f"uptime at start: {uptime()}", flush=True)
    engine = AStarEngine()
    combos = [tuple(c.split(":")) for c in args.combos.split(",")]
    for label, task, model, q in root_queries(args.models):
        sign = 1 if task == "max" else -1
        engine.solve(q, Limits(timeout_s=0.5))  # warm-up (compilation)
        astar = [engine.solve(q, Limits(timeout_s=t)) for t in times]
        args.target = astar[-1].lower
        forest = Forest(model)
        search(forest, "lagr", "strong", 0.5, args)  # warm-up (compilation)
        runs = {c: search(forest, *c, max(times), args) for c in combos}
        n_equal = min(trace[-1][1] for trace, _ in runs.values())
        n_sums = min([trace[-1][1] for (kind, _), (trace, _) in runs.items() if kind == "sum"]
                     or [n_equal])
        best = max([r.lower for r in astar] + [inc for _, inc in runs.values()])
        print(f"\n{label} {task} (in its own sign; best incumbent {sign * best:.3f}; gap % "
              f"against it)", flush=True)  # fmt: skip
        print(f"  {'A*':<13}" + "".join(
            f" {t:g} s: {sign * r.upper:8.3f} ({100 * (r.upper - best) / abs(best):5.2f} %, "
            f"{r.stats['states_expanded']} expanded, incumbent {sign * r.lower:.3f})"
            for t, r in zip(times, astar, strict=True)))  # fmt: skip
        for (kind, rule), (trace, incumbent) in runs.items():
            cells = []
            for t in times:
                value, expanded = at_time(trace, t)
                cells.append(f" {t:g} s: {sign * value:8.3f} "
                             f"({100 * (value - best) / abs(best):5.2f} %, {expanded} expanded)")
            print(f"  {kind + ' ' + rule:<13}" + "".join(cells)
                  + f" | at {n_equal} / {n_sums} expanded: {sign * at_count(trace, n_equal):8.3f}"
                  f" / {sign * at_count(trace, n_sums):8.3f}"
                  f" | incumbent {sign * incumbent:.3f}", flush=True)  # fmt: skip
    print(f"\nuptime at end: {uptime()}", flush=True)


if __name__ == "__main__":
    main()
