"""A tree's leaves' row ids, read like a dict ``leaf -> increasing ids``: those of the last
:meth:`~.tree.Tree.compact` in one flat array, ``held`` (each leaf's ids from its ``ROWS``
offset in the node table, ``COUNT`` of them, which :func:`~.walk.walk` edits in place), and
the leaves set since in a small dict.

Rebuilding a dict of views of ``held`` for every leaf at each compact cost about as much as
the rest of the compact: after a deletion that regrows one subtree, only that subtree's leaves
are new; the others are read from ``held`` when asked for.
"""

from __future__ import annotations

import numpy as np

from veritas_dsl.jit import kernel
from veritas_dsl.unlearning.dare.walk import COUNT, KIND, ROWS

_LEAF = 0  # tree.LEAF (tree imports this module)


class LeafRows:
    """Leaves' rows by node id (module docstring). ``table`` is the node table of the last
    compact (a node that was a leaf there and is not popped since has its rows in ``held``)."""

    def __init__(self) -> None:
        self.held = np.empty(0, dtype=np.int64)
        self._table = np.zeros((0, ROWS + 1), dtype=np.int64)
        self._fresh: dict[int, np.ndarray] = {}  # leaves set since the last compact
        self._gone: set[int] = set()  # leaves of the last compact popped since

    def _based(self, node: int) -> bool:
        return (
            node not in self._gone
            and 0 <= node < len(self._table)
            and self._table[node, KIND] == _LEAF
        )

    def __contains__(self, node: int) -> bool:
        return node in self._fresh or self._based(node)

    def __getitem__(self, node: int) -> np.ndarray:
        rows = self._fresh.get(node)
        if rows is not None:
            return rows
        if not self._based(node):
            raise KeyError(node)
        start = int(self._table[node, ROWS])
        return self.held[start : start + int(self._table[node, COUNT])]

    def get(self, node: int, default=None):
        try:
            return self[node]
        except KeyError:
            return default

    def __setitem__(self, node: int, rows: np.ndarray) -> None:
        self._gone.add(node)
        self._fresh[node] = rows

    def pop(self, node: int, default=None):
        rows = self.get(node, default)
        self._fresh.pop(node, None)
        self._gone.add(node)
        return rows

    def keys(self) -> list[int]:
        based = np.flatnonzero(self._table[:, KIND] == _LEAF).tolist()
        return sorted({*(j for j in based if j not in self._gone), *self._fresh})

    def __iter__(self):
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self.keys())

    def values(self) -> list[np.ndarray]:
        return [self[j] for j in self.keys()]

    def items(self) -> list[tuple[int, np.ndarray]]:
        return [(j, self[j]) for j in self.keys()]

    def copy(self) -> LeafRows:
        """A copy sharing ``held`` until the copy's next compact (which replaces it)."""
        copy = LeafRows()
        copy.held, copy._table = self.held, self._table
        copy._fresh, copy._gone = dict(self._fresh), set(self._gone)
        return copy

    def compact(self, leaves: np.ndarray, new: np.ndarray, n_rows: int) -> tuple:
        """Lay the rows of ``leaves`` (old ids, in their new order; ``new`` maps old ids to
        new) out anew: returns ``(held, starts, leaf_of)``, each leaf's rows from ``starts``
        in ``held`` and the new leaf of each of ``n_rows`` row ids (-1: none). The caller
        then hands the new table to :meth:`rebase`."""
        fresh = np.array([j in self._fresh for j in leaves.tolist()], dtype=np.bool_)
        parts = [self._fresh[j] for j in leaves[fresh].tolist()]
        pool = np.concatenate(parts).astype(np.int64) if parts else np.empty(0, np.int64)
        lengths = np.empty(len(leaves), dtype=np.int64)
        origin = np.empty(len(leaves), dtype=np.int64)
        sizes = np.array([len(part) for part in parts], dtype=np.int64)
        lengths[fresh], origin[fresh] = sizes, np.cumsum(sizes) - sizes
        based = leaves[~fresh]
        lengths[~fresh] = self._table[based, COUNT]
        origin[~fresh] = self._table[based, ROWS]
        return _gather(self.held, pool, fresh, origin, lengths, new[leaves], n_rows)

    def rebase(self, held: np.ndarray, table: np.ndarray) -> None:
        self.held, self._table = held, table
        self._fresh, self._gone = {}, set()


@kernel
def _gather(held, pool, fresh, origin, lengths, ids, n_rows):
    """Copy each leaf's rows (from ``pool`` where ``fresh``, else ``held``, at ``origin``) one
    after another; the new ``held``, where each leaf starts, and ``leaf_of``."""
    out = np.empty(lengths.sum(), dtype=np.int64)
    starts = np.empty(lengths.shape[0], dtype=np.int64)
    leaf_of = np.full(n_rows, -1, dtype=np.int32)
    at = 0
    for i in range(lengths.shape[0]):
        starts[i] = at
        source = pool if fresh[i] else held
        for q in range(origin[i], origin[i] + lengths[i]):
            out[at] = source[q]
            leaf_of[source[q]] = ids[i]
            at += 1
    return out, starts, leaf_of
