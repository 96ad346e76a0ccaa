"""Memos of retired greedy subtrees: when a greedy node's split changes, the subtree it had is kept,
and grafted back if the node later returns to that split, instead of growing it again.

Why this is exact: a greedy subtree is a pure function of its rows and its root's seed
(:func:`~.tree.child_seed`), so a retired subtree is what growing its rows (those it held when
retired) with the node's seed gives. Rows are only deleted while memos live (:meth:`Memos.clear`
runs on additions), so the node's rows now are a subset of the memo's; grafting the memo and
updating it for the rows deleted since (``Grower._update``) gives what growing the rows now
gives, node for node, as every update does. So memos are a pure cache: not saved, bounded, and a
forest without them (loaded, or after :meth:`Memos.clear`) deletes to the identical forest.

Memos of a node's descendants move with the subtree: a retired subtree takes them along and
a graft brings them back (a node below that flipped before often flips again). They are as
exact there: a node's rows only shrink while it exists (a split is kept only while it sends the
rows where it did), so its memos still hold every row it has. When a node is grown again, the
memos below it die with its old nodes (:meth:`Memos.renumber` drops them).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

#: Memos kept per node (the most recent ones) ...
PER_NODE = 2
#: ... and rows they may hold per tree, as a multiple of the rows the tree holds.
ROWS_PER_TREE = 2.0


@dataclass(frozen=True, eq=False)
class Memo:
    """A retired subtree in local numbering (node 0 its root, children as local ids): the node
    fields of :class:`~.tree.Tree`, leaves' rows, and greedy nodes' caches (the root's is not
    kept: it may have followed a deletion the subtree did not), and the memos of its nodes
    below the root (``nested``). ``size``: the rows it holds, its nested memos' included."""

    seed: int
    attribute: int
    threshold: float
    fields: dict
    rows: dict
    cache: dict
    nested: dict
    size: int
    stamp: int

    def held(self) -> np.ndarray:
        """The rows it holds, increasing."""
        return np.sort(np.concatenate(list(self.rows.values())))


@dataclass(eq=False)
class Memos:
    """A tree's memos by node id (each a tuple, most recent first; tuples are replaced, never
    edited, so a copied store shares memos safely)."""

    by_node: dict = field(default_factory=dict)
    clock: int = 0

    def size(self) -> int:
        return sum(m.size for memos in self.by_node.values() for m in memos)

    def copy(self) -> Memos:
        return Memos(dict(self.by_node), self.clock)

    def clear(self) -> None:
        self.by_node.clear()

    def renumber(self, new: np.ndarray) -> None:
        """Follow :meth:`~.tree.Tree.compact`: node ``old`` is now ``new[old]`` (-1: gone)."""
        self.by_node = {int(new[o]): m for o, m in self.by_node.items() if new[o] >= 0}

    def keep(self, node: int, memo: Memo, budget: int) -> None:
        """Store ``memo`` at ``node``, dropping one of the same split there, keeping the
        ``PER_NODE`` most recent, then the oldest of the tree until they hold ``budget`` rows."""
        same = [m for m in self.by_node.get(node, ()) if not _same_split(m, memo)]
        self.by_node[node] = (memo, *same)[:PER_NODE]
        total = self.size()
        while total > budget:
            oldest = min(
                ((m.stamp, j) for j, memos in self.by_node.items() for m in memos), default=None
            )
            j = oldest[1]
            *rest, dropped = self.by_node[j]
            total -= dropped.size
            self.by_node[j] = tuple(rest)
            if not rest:
                del self.by_node[j]

    def take(self, node: int, seed: int, attribute: int, same_partition) -> Memo | None:
        """Remove and return the memo at ``node`` whose split ``same_partition(threshold)``
        says equals the node's new choice on ``attribute``, if any."""
        memos = self.by_node.get(node, ())
        for i, memo in enumerate(memos):
            if memo.seed == seed and memo.attribute == attribute and same_partition(memo.threshold):
                rest = memos[:i] + memos[i + 1 :]
                if rest:
                    self.by_node[node] = rest
                else:
                    del self.by_node[node]
                return memo
        return None

    def retire(self, tree, node: int) -> Memo:
        """A memo of ``node``'s subtree as it is (found through child links, so the tree need
        not be compact)."""
        local, order, stack = {}, [], [node]
        while stack:
            j = stack.pop()
            local[j] = len(order)
            order.append(j)
            if tree.left[j] >= 0:
                stack += [tree.right[j], tree.left[j]]
        fields = {name: [getattr(tree, name)[j] for j in order] for name in tree.FIELDS}
        for name in ("left", "right"):
            fields[name] = [local.get(j, -1) for j in fields[name]]
        small = np.int32 if tree.leaf_of.shape[0] < 2**31 else np.int64  # halves a memo
        rows = {local[j]: tree.rows[j].astype(small) for j in order if j in tree.rows}
        cache = {  # copied out of the tree's pools, which deletions edit in place
            local[j]: tuple(part.copy() for part in tree.cache[j])
            for j in order[1:]
            if j in tree.cache
        }
        nested = {local[j]: self.by_node.pop(j) for j in order[1:] if j in self.by_node}
        size = sum(len(held) for held in rows.values())
        size += sum(m.size for memos in nested.values() for m in memos)
        self.clock += 1
        return Memo(
            tree.seed[node], tree.feature[node], tree.threshold[node], fields, rows, cache,
            nested, size, self.clock,
        )  # fmt: skip


def graft(tree, node: int, memo: Memo) -> None:
    """Make ``node`` the root of ``memo``'s subtree: its fields become the memo root's, the
    other memo nodes are appended (the tree is compacted later). Caches are copied (into the
    tree's pools, :mod:`.pool`): the in-place deletion path edits them."""
    base = len(tree.kind)
    ids = [node, *range(base, base + len(memo.fields["kind"]) - 1)]
    for _ in ids[1:]:
        tree._new()
    for name in tree.FIELDS:
        column = getattr(tree, name)
        for j, value in enumerate(memo.fields[name]):
            if name in ("left", "right"):
                value = ids[value] if value >= 0 else -1
            column[ids[j]] = value
    tree.rows.pop(node, None)
    tree.cache.pop(node, None)
    for j, rows in memo.rows.items():
        tree.rows[ids[j]] = rows.astype(np.int64)
    for j, cache in memo.cache.items():
        tree.cache[ids[j]] = cache
    for j, memos in memo.nested.items():
        tree.memos.by_node[ids[j]] = memos


def _same_split(a: Memo, b: Memo) -> bool:
    return a.attribute == b.attribute and a.threshold == b.threshold
