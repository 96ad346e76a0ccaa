"""One DaRE tree: a node store of flat lists with each node's cached counts, how it grows from
rows, and how it updates when rows are deleted or added.

Node kinds: ``LEAF``, ``GREEDY`` (split chosen by :func:`~.splits.greedy_split` from the node's
rows and its own seed) and ``RANDOM`` (attribute and threshold drawn at random, top levels).
Leaves keep their row ids; a node's rows are always those of the leaves below it.

Updating a node whose rows changed (why the result is distributed as a fresh fit):

- a node that now meets a stopping rule becomes a leaf, as a fresh fit makes it;
- a greedy node re-chooses with its own seed: its choice is a function of its rows and seed, so
  it is the fresh fit's choice for that seed. If the split is unchanged, or moved without moving
  a row across it, the children are updated in turn; otherwise they are grown afresh. Its
  children's seeds derive from its own (:func:`child_seed`), so a greedy subtree is a pure
  function of its rows and its root's seed (which is drawn from the generator under a random
  node or at the root, before any row is seen): growing afresh gives what a fit with the same
  root seeds gives, node for node, and so does grafting back a subtree the node had under
  the same split a few deletions ago (:mod:`.memo`);
- a random node drew its attribute uniformly among the splittable ones and its threshold ``v``
  uniformly in ``I = [v_(m), v_(n-m+1))`` of it (:func:`~.splits.random_bounds`; ``m`` is
  ``min_samples_leaf``, ``m = 1`` gives ``[min, max)``); an attribute is splittable when ``I`` is
  not empty. After deletions the m-th smallest value can only rise and the m-th largest only
  fall, so the new ``I'`` lies inside ``I``, and both sides keep m rows exactly when ``v`` lies in
  ``I'``; given that, ``v`` is uniform there, so the node is kept; otherwise ``v`` is drawn again
  in ``I'`` on the same attribute (the mixture is uniform). The attribute is kept while it is
  splittable: keeping it only when ``v`` survived would favour the attributes whose ``I``
  shrank least (the chi-square test in tests/model/test_dare_random.py caught that). When it
  stops being splittable the node is drawn afresh, which makes each attribute still splittable
  (the set ``S' ⊆ S``) chosen with probability ``1/|S|+(|S|-|S'|)/(|S||S'|) = 1/|S'|``.
  (``S' ⊆ S`` also keeps a leaf of the random levels a leaf: a deletion cannot split it.)
  After additions ``I`` can only grow (``I ⊆ I'``) and so can ``S``: if ``S`` grew the node is
  drawn afresh (an event that does not depend on the draw); else the attribute is kept, and so
  is ``v`` unless its ``I`` changed, when ``v`` is drawn again in ``I'``.
  This holds for deletions chosen without looking at the forest; a requester who reads ``v``
  and deletes rows to move the range can bias it (Gupta et al. 2021).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from veritas_dsl.jit import kernel
from veritas_dsl.unlearning.dare.kernels import GINI, mix_int
from veritas_dsl.unlearning.dare.leaves import LeafRows
from veritas_dsl.unlearning.dare.memo import ROWS_PER_TREE, Memos, graft
from veritas_dsl.unlearning.dare.pool import CachePool
from veritas_dsl.unlearning.dare.splits import (
    Split,
    greedy_choice,
    is_leaf,
    random_bounds,
    random_split,
    random_threshold,
)
from veritas_dsl.unlearning.dare.walk import AT_LEAF, CHANGED, CHOOSE_AGAIN, FIELDS, walk

LEAF, GREEDY, RANDOM = 0, 1, 2
_DTYPES = {"threshold": np.float64, "seed": np.uint64}  # Tree.FIELDS' (int64 otherwise)
_SIDES = (0x632BE59BD9B4E019, 0x85EBCA77C2B2AE63)


def child_seed(seed: int, side: int) -> int:
    """The seed of a greedy node's left (``side`` 0) or right (1) child: a function of the
    parent's, so a greedy subtree is a pure function of its rows and its root's seed (below
    2**63, as the generator's draws, so the kernels see one integer type)."""
    return mix_int(seed ^ _SIDES[side]) >> 1


@dataclass(frozen=True)
class Settings:
    """The forest's parameters as a tree needs them (``max_features`` already a count)."""

    max_depth: int
    k: int | None
    random_depth: int
    max_features: int
    min_samples_leaf: int
    criterion: int = GINI  # kernels.GINI or kernels.ENTROPY


class Tree:
    """Flat node lists; node 0 is the root. After :meth:`compact` nodes are in preorder."""

    FIELDS = ("kind", "feature", "threshold", "left", "right", "count", "positives", "seed")

    def __init__(self) -> None:
        self.kind: list[int] = []
        self.feature: list[int] = []
        self.threshold: list[float] = []
        self.left: list[int] = []
        self.right: list[int] = []
        self.count: list[int] = []
        self.positives: list[int] = []
        self.seed: list[int] = []
        self.rows = LeafRows()  # leaf -> its row ids, increasing (.leaves)
        self.cache = CachePool()  # greedy node -> what decides its split (.cache, .pool)
        self.memos = Memos()  # greedy node -> subtrees it had under other splits (.memo)
        # Set by compact: node j's subtree is the nodes j <= i < end[j]; leaf_of[r] is the
        # leaf holding row r (-1: a row the tree does not hold); the nodes as the table
        # .walk reads (kept in step with the lists by Grower.forget); the leaves' rows are
        # in one array, ``rows.held``, from their ROWS offsets.
        self.end: list[int] = []
        self.leaf_of = np.empty(0, dtype=np.int32)
        self.table = np.empty((0, len(FIELDS)), dtype=np.int64)
        self.thresholds = np.empty(0, dtype=np.float64)

    def _new(self) -> int:
        for name in self.FIELDS:
            getattr(self, name).append(0)
        return len(self.kind) - 1

    def _set(self, node: int, kind: int, n: int, positives: int, seed: int, split=None) -> None:
        self.kind[node], self.count[node], self.positives[node] = kind, n, positives
        self.seed[node] = seed
        self.feature[node] = -1 if split is None else split.attribute
        self.threshold[node] = 0.0 if split is None else split.threshold
        self.left[node] = self.right[node] = -1
        self.rows.pop(node, None)
        self.cache.pop(node, None)

    def compact(self, n_rows: int) -> None:
        """Drop nodes no longer reachable, renumber the rest in preorder, and index them
        (``end``, ``leaf_of`` over ``n_rows`` row ids)."""
        size = len(self.kind)
        arrays = {  # fromiter: about twice as fast as asarray on lists
            name: np.fromiter(getattr(self, name), dtype=_DTYPES.get(name, np.int64), count=size)
            for name in self.FIELDS
        }
        kind, left, right = arrays["kind"], arrays["left"], arrays["right"]
        order, end = _preorder(kind, left, right)
        new = np.full(len(kind), -1, dtype=np.int64)
        new[order] = np.arange(len(order))
        leaves = order[kind[order] == LEAF]  # old ids, in preorder
        held, starts, self.leaf_of = self.rows.compact(leaves, new, n_rows)
        columns = {name: arrays[name][order] for name in self.FIELDS}
        columns["left"] = np.where(left[order] >= 0, new[left[order]], -1)
        columns["right"] = np.where(right[order] >= 0, new[right[order]], -1)
        columns["end"] = end
        for name in self.FIELDS:
            setattr(self, name, columns[name].tolist())
        self.end = end.tolist()
        self.cache.renumber(new)
        self.memos.renumber(new)
        self.table = np.zeros((len(order), len(FIELDS)), dtype=np.int64)
        for column, name in enumerate(FIELDS):
            if name == "rows":
                self.table[new[leaves], column] = starts
            else:
                self.table[:, column] = columns[name]
        self.thresholds = columns["threshold"].astype(np.float64)
        self.rows.rebase(held, self.table)

    def rows_below(self, node: int) -> np.ndarray:
        """The rows of the leaves under ``node``, increasing (the tree is compact)."""
        leaves = [self.rows[j] for j in range(node, self.end[node]) if self.kind[j] == LEAF]
        return np.sort(np.concatenate(leaves))

    def copy(self) -> Tree:
        """A copy (of a compact tree) that updates without touching this tree: it has its
        own pools, which :meth:`Grower.forget` edits in place."""
        copy = Tree()
        for name in self.FIELDS:
            setattr(copy, name, list(getattr(self, name)))
        copy.rows, copy.cache, copy.memos = self.rows.copy(), self.cache.copy(), self.memos.copy()
        copy.compact(len(self.leaf_of))  # fresh leaf pool and table
        return copy


class Grower:
    """Grows and updates the trees of one forest on its rows ``X`` (float32), ``y`` (0/1)."""

    def __init__(self, X, y, settings: Settings, rng: np.random.Generator, presorted) -> None:
        self.X, self.y, self.settings, self.rng = X, y, settings, rng
        self.presorted = presorted  # row ids by increasing value, per attribute
        # Rows re-examined by growing (each grown node's) and by grafting memos (each node the
        # graft's update went through), since the caller last reset it.
        self.cost = 0
        self._grafting = 0  # > 0 while a memo's subtree is brought to the current rows
        s, p = settings, presorted
        self._walk_settings = (s.k or 0, s.min_samples_leaf, s.max_depth, s.criterion)
        self._sorted_rows = (p.values, p.labels, p.order, p.position, p.columns, y)
        self._path = np.empty(s.max_depth + 1, dtype=np.int64)  # the nodes a walk passed

    def grow(self, rows: np.ndarray) -> Tree:
        tree = Tree()
        self._grow(tree, tree._new(), rows, 0)
        tree.compact(len(self.X))
        return tree

    def _grow(self, tree: Tree, node: int, rows, depth: int, seed=None, chosen=None) -> None:
        """Fill ``node`` from ``rows``, drawing fresh randomness (a greedy node may be given its
        seed, and its choice ``(split, cache)`` when known), and grow its children."""
        s = self.settings
        n, positives = len(rows), int(self.y[rows].sum())
        self.cost += n
        split = cache = None
        kind = RANDOM if depth < s.random_depth else GREEDY
        if kind == GREEDY and seed is None:
            seed = int(self.rng.integers(2**63))
        if not is_leaf(n, positives, depth, s.max_depth, s.min_samples_leaf):
            if kind == RANDOM:
                split = random_split(self.X, rows, self.rng, s.min_samples_leaf)
            else:
                split, cache = chosen or self._greedy(rows, seed)
        kind = kind if split else LEAF
        self._fill(tree, node, rows, depth, split, kind, seed or 0, cache, positives)

    def _greedy(self, rows: np.ndarray, seed: int) -> tuple[Split | None, tuple | None]:
        s = self.settings
        return greedy_choice(
            self.y, rows, seed, s.k, s.max_features, s.min_samples_leaf, self.presorted,
            s.criterion,
        )  # fmt: skip

    def _fill(
        self, tree, node, rows, depth, split: Split | None, kind, seed, cache=None, positives=None
    ) -> None:
        """Set ``node`` to ``split`` (a leaf when None) and grow fresh children (``positives``:
        the rows' positives, when known)."""
        if positives is None:
            positives = int(self.y[rows].sum())
        tree._set(node, kind, len(rows), positives, seed, split)
        if cache is not None:
            tree.cache[node] = cache
        if split is None:
            tree.rows[node] = rows
            return
        go_left = self._goes_left(rows, split)
        for i, (side, part) in enumerate(
            ((tree.left, rows[go_left]), (tree.right, rows[~go_left]))
        ):
            child = tree._new()
            side[node] = child
            # A greedy node's children derive their seeds from its own (child_seed); a random
            # node's draw theirs from the generator.
            self._grow(
                tree, child, part, depth + 1, child_seed(seed, i) if kind == GREEDY else None
            )

    def _goes_left(self, rows: np.ndarray, split: Split) -> np.ndarray:
        # X's columns one by one (presorted.columns): gathering from X's rows cost more than
        # the rest of a grown node's Python.
        column = self.presorted.columns[split.attribute]
        return column[rows].astype(np.float64) <= split.threshold

    def update(self, tree: Tree, rows: np.ndarray, touched: np.ndarray, adding: bool) -> None:
        """Bring ``tree`` to its new rows ``rows`` (all rows it holds now), ``touched`` being
        the rows deleted from it or added to it."""
        if adding:  # memos hold rows a deletion removed, never rows added since
            tree.memos.clear()
        self._update(tree, 0, rows, touched, 0, adding)
        tree.compact(len(self.X))

    def forget(self, tree: Tree, r: int) -> None:
        """Delete row ``r`` from ``tree`` (compact, holding it), in place. Only ``r`` travels
        down (:func:`~.walk.walk`, one compiled call): each node's counts drop by its own, a
        random node keeps its split while both sides keep a row, a greedy node's cache
        (:mod:`.cache`) says whether its choice stays; the first node where it may not is
        updated from its rows by :meth:`_update`, which gives what that node would give on
        any other path."""
        label = int(self.y[r])
        node = depth = 0
        here = False  # the greedy node the walk resumes at chose again, unchanged
        chosen = None  # the choice of the greedy node where the walk stops, when known
        while True:
            status, node, depth, passed, a, t = walk(
                tree.table, tree.thresholds, tree.rows.held, tree.cache.arrays(), self.X[r], label,
                r, node, depth, here, self._walk_settings, self._sorted_rows, tree.leaf_of,
                self._path,
            )  # fmt: skip
            for j in self._path[:passed].tolist():  # the lists follow the table
                tree.count[j] -= 1
                tree.positives[j] -= label
            if status == AT_LEAF:  # walk took r out of the leaf's rows
                return
            if status == CHANGED:
                chosen = (Split(int(a), float(t)), tree.cache.get(node))
                break
            if status != CHOOSE_AGAIN:
                break
            # Choose from the rows, caching anew; the subtree stays if the split does.
            rows = tree.rows_below(node)
            rows = np.delete(rows, np.searchsorted(rows, r))
            split, cache = self._greedy(rows, tree.seed[node])
            if split is None:
                break
            tree.cache.pop(node, None)
            if cache is not None:
                tree.cache[node] = cache
            if split != _split(tree, node):
                chosen = (split, tree.cache.get(node))
                break
            here = True
        rows = tree.rows_below(node)
        rows = np.delete(rows, np.searchsorted(rows, r))
        self._update(tree, node, rows, np.array([r]), depth, False, chosen)
        tree.compact(len(self.X))

    def warm(self, tree: Tree, r: int) -> None:
        """Cache the choices of the greedy nodes on row ``r``'s path that have none, from their
        rows (as :meth:`forget` would, one deletion later)."""
        node, x = 0, self.X[r]
        while tree.kind[node] != LEAF:
            if tree.kind[node] == GREEDY and node not in tree.cache:
                _, cache = self._greedy(tree.rows_below(node), tree.seed[node])
                if cache is not None:
                    tree.cache[node] = cache
            goes_left = np.float64(x[tree.feature[node]]) <= tree.threshold[node]
            node = tree.left[node] if goes_left else tree.right[node]

    def _update(self, tree, node, rows, touched, depth, adding, chosen=None) -> None:
        """Bring ``node``'s subtree to ``rows``; ``chosen`` is its greedy choice when known."""
        if len(touched) == 0:
            return
        s = self.settings
        n, positives = len(rows), int(self.y[rows].sum())
        kind = tree.kind[node]
        if is_leaf(n, positives, depth, s.max_depth, s.min_samples_leaf):
            if kind != LEAF or adding:
                self.cost += n
                self._fill(tree, node, rows, depth, None, LEAF, tree.seed[node])
            else:
                tree.count[node], tree.positives[node], tree.rows[node] = n, positives, rows
            return
        if kind == LEAF and not adding:  # a deletion never makes a leaf split (splits.is_leaf)
            tree.count[node], tree.positives[node], tree.rows[node] = n, positives, rows
            return
        grafted = False
        if kind == GREEDY:
            split, cache = chosen or self._greedy(rows, tree.seed[node])
            keep = split is not None and self._same_partition(rows, split, _split(tree, node))
            if not keep and split is not None and not adding:
                recalled = self._recall(tree, node, rows, split)
                if recalled is not None:  # grafted: update it as a kept node
                    keep, grafted, touched = True, True, recalled
            if keep:
                self.cost += n if self._grafting or grafted else 0  # a graft's update went here
                tree.cache.pop(node, None)
                if cache is not None:
                    tree.cache[node] = cache
        elif kind == RANDOM:
            split = _split(tree, node)
            action = self._random_action(rows, touched, split, adding)
            keep = action == "keep"
        else:  # a leaf that rows were added to: grow it again
            split, keep = None, False
        if not keep:
            if kind == RANDOM and action == "threshold":
                self.cost += n
                a = split.attribute
                low, high = random_bounds(self.X[rows, a : a + 1], s.min_samples_leaf)
                split = Split(a, random_threshold(float(low[0]), float(high[0]), self.rng))
                self._fill(tree, node, rows, depth, split, RANDOM, 0)
            else:  # a node below the random levels keeps its seed, whatever it is now
                seed = tree.seed[node] if depth >= s.random_depth else None
                chosen = (split, cache) if kind == GREEDY else None
                self._grow(tree, node, rows, depth, seed, chosen)
            return
        # Deleted rows sit where the stored split sent them; the new threshold may differ
        # from it only where no remaining row lies.
        touched_left = self._goes_left(touched, _split(tree, node))
        tree.count[node], tree.positives[node] = n, positives
        tree.threshold[node] = split.threshold
        go_left = self._goes_left(rows, split)
        self._grafting += grafted
        for child, part, moved in (
            (tree.left[node], rows[go_left], touched[touched_left]),
            (tree.right[node], rows[~go_left], touched[~touched_left]),
        ):
            self._update(tree, child, part, moved, depth + 1, adding)
        self._grafting -= grafted

    def _recall(self, tree: Tree, node: int, rows, split: Split) -> np.ndarray | None:
        """Greedy ``node`` (on ``rows`` now) changes its split to ``split``: keep its subtree as
        a memo (:mod:`.memo`), and if a memo of ``split`` is there, graft it and return the rows
        deleted since it was retired (None: nothing to graft, grow the node again)."""

        def same(threshold: float) -> bool:
            return self._same_partition(rows, split, Split(split.attribute, threshold))

        memo = tree.memos.take(node, tree.seed[node], split.attribute, same)
        retired = tree.memos.retire(tree, node)
        touched = None
        if memo is not None:
            held = memo.held()
            touched = np.setdiff1d(held, rows, assume_unique=True)
            # A memo holds every row its node has (memo.py says why); checked, as it is cheap.
            if len(held) == len(touched) + len(rows):
                graft(tree, node, memo)
            else:
                touched = None
        tree.memos.keep(node, retired, int(ROWS_PER_TREE * tree.count[0]))
        return touched

    def _same_partition(self, rows, split: Split, old: Split) -> bool:
        """``split`` sends every row where ``old`` does (its threshold may differ)."""
        if split.attribute != old.attribute:
            return False
        if split.threshold == old.threshold:
            return True
        return bool(np.array_equal(self._goes_left(rows, split), self._goes_left(rows, old)))

    def _random_action(self, rows, touched, split: Split, adding: bool) -> str:
        """What a random node does so that it is distributed as a fresh draw (module docstring):
        ``keep`` it, draw a new ``threshold`` on its attribute, or ``redraw`` it all."""
        m = self.settings.min_samples_leaf
        low, high = random_bounds(self.X[rows], m)
        a, t = split.attribute, split.threshold
        if not adding:
            if not low[a] < high[a]:
                return "redraw"
            left = int(np.count_nonzero(self.X[rows, a].astype(np.float64) <= t))
            return "keep" if m <= left <= len(rows) - m else "threshold"
        old_low, old_high = random_bounds(self.X[np.setdiff1d(rows, touched)], m)
        if not np.array_equal(high > low, old_high > old_low):
            return "redraw"
        same = low[a] == old_low[a] and high[a] == old_high[a]
        return "keep" if same and low[a] <= t < high[a] else "threshold"


def _split(tree: Tree, node: int) -> Split:
    return Split(tree.feature[node], tree.threshold[node])


@kernel
def _preorder(kind, left, right):
    """The nodes reachable from node 0, in preorder, and each one's subtree end in that order."""
    order = np.empty(kind.shape[0], dtype=np.int64)
    stack = np.empty(kind.shape[0] + 1, dtype=np.int64)
    stack[0], top, count = 0, 1, 0
    while top > 0:
        top -= 1
        node = stack[top]
        order[count] = node
        count += 1
        if kind[node] != LEAF:
            stack[top], stack[top + 1] = right[node], left[node]
            top += 2
    order = order[:count]
    end = np.arange(1, count + 1)
    position = np.full(kind.shape[0], -1, dtype=np.int64)
    for i in range(count):
        position[order[i]] = i
    for i in range(count - 1, -1, -1):
        node = order[i]
        if kind[node] != LEAF:
            end[i] = end[position[right[node]]]
    return order, end
