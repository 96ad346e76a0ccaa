"""A tree's greedy-node caches (:mod:`.cache`) in four flat pools, so that one compiled call can
follow a deletion down the whole tree (:mod:`.walk`) instead of one call per node.

Node ``j``'s cache is ``attrs[a:a+na]``, ``bound[a:a+na]``, ``cand[c:c+nc]``,
``cand_values[c:c+nc]`` with ``slots[j] = (a, na, c, nc)`` (``na = -1``: no cache). A cache
never grows in place (:func:`~.cache.follow_deletion` reuses its rows), so a replaced cache
takes a fresh slot at the end and the old one becomes garbage; the pools are packed again when
garbage outweighs the live caches, and grown by doubling.

It reads like the dict ``node -> (attrs, bound, cand, cand_values)`` it replaces; the tuples
are views into the pools, which deletions edit in place: the same object while the cache stays
where it is (a view taken before a pack or a growth stays readable, but is no longer the
cache).
"""

from __future__ import annotations

import numpy as np

_EMPTY = (-1, -1, -1, -1)


class CachePool:
    """Greedy nodes' caches by node id, stored flat (module docstring)."""

    def __init__(self) -> None:
        self.attrs = np.empty(0, dtype=np.int64)
        self.bound = np.empty(0, dtype=np.uint64)
        self.cand = np.empty((0, 8), dtype=np.int64)
        self.cand_values = np.empty((0, 2), dtype=np.float64)
        self.slots = np.full((0, 4), -1, dtype=np.int64)
        self._used = [0, 0]  # attribute and candidate rows written
        self._garbage = 0  # candidate rows of replaced caches
        self._views: dict[int, tuple] = {}  # made when first asked for, until a cache moves
        self._pending: dict[int, tuple] = {}  # caches set since the last flush, as given

    # -- the dict's face ---------------------------------------------------------------------

    def __contains__(self, node: int) -> bool:
        return node in self._pending or (0 <= node < len(self.slots) and self.slots[node, 1] >= 0)

    def __getitem__(self, node: int) -> tuple:
        view = self.get(node)
        if view is None:
            raise KeyError(node)
        return view

    def __len__(self) -> int:
        return int(np.count_nonzero(self.slots[:, 1] >= 0)) + len(self._pending)

    def get(self, node: int, default=None):
        if node in self._pending:
            return self._pending[node]
        if node not in self:
            return default
        view = self._views.get(node)
        if view is None:
            a, na, c, nc = self.slots[node].tolist()
            view = self._views[node] = (
                self.attrs[a : a + na],
                self.bound[a : a + na],
                self.cand[c : c + nc],
                self.cand_values[c : c + nc],
            )
        return view

    def keys(self):
        live = np.flatnonzero(self.slots[:, 1] >= 0).tolist()
        return dict.fromkeys(sorted([*live, *self._pending])).keys()

    def values(self):
        return [self[node] for node in self.keys()]

    def items(self):
        return [(node, self[node]) for node in self.keys()]

    def pop(self, node: int, default=None):
        if node in self._pending:
            return self._pending.pop(node)
        if node not in self:
            return default
        view = self[node]
        del self._views[node]
        self._garbage += int(self.slots[node, 3])
        self.slots[node] = _EMPTY
        return view

    def __setitem__(self, node: int, cache: tuple) -> None:
        """Set ``cache`` (``attrs, bound, cand, cand_values``; never edited here): it is copied
        into fresh slots with the others set since, when the pools are next read."""
        self.pop(node)
        self._pending[node] = cache

    def arrays(self) -> tuple:
        """``(slots, attrs, bound, cand, cand_values)`` as :func:`~.walk.walk` reads them."""
        self._flush()
        return self.slots, self.attrs, self.bound, self.cand, self.cand_values

    def _flush(self) -> None:
        """Copy the caches set since the last flush into the pools, all at once (one at a time,
        growing a subtree of a few hundred nodes cost milliseconds)."""
        if not self._pending:
            return
        if self._garbage > self._used[1] - self._garbage:
            self._pack()
        nodes, caches = list(self._pending), list(self._pending.values())
        self._pending = {}
        na = np.array([len(cache[0]) for cache in caches], dtype=np.int64)
        nc = np.array([len(cache[2]) for cache in caches], dtype=np.int64)
        a, c = self._used
        self._used = [a + int(na.sum()), c + int(nc.sum())]
        self._reserve(*self._used)
        for part, pool, start, end in (
            (0, self.attrs, a, self._used[0]),
            (1, self.bound, a, self._used[0]),
            (2, self.cand, c, self._used[1]),
            (3, self.cand_values, c, self._used[1]),
        ):
            if end > start:
                pool[start:end] = np.concatenate([cache[part] for cache in caches])
        if max(nodes) >= len(self.slots):
            more = np.full((max(2 * len(self.slots), max(nodes) + 1) - len(self.slots), 4), -1)
            self.slots = np.concatenate([self.slots, more])
        starts_a, starts_c = a + np.cumsum(na) - na, c + np.cumsum(nc) - nc
        self.slots[nodes] = np.column_stack([starts_a, na, starts_c, nc])

    # -- storage -----------------------------------------------------------------------------

    def _reserve(self, attrs: int, cand: int) -> None:
        """Make room for that many rows (a pool that moves takes its views' identity along).
        A pool grows to twice its size, or to a quarter more than asked when that is more
        (a fit's first flush, a pack): the first subtrees grown again after a deletion then
        fit without copying the pools, which cost a few ms a tree, the largest part of a
        deletion that regrows little (bench/dare_breakdown.py)."""
        if attrs > len(self.attrs):
            size = max(attrs + attrs // 4, 2 * len(self.attrs), 64)
            self.attrs = _resized(self.attrs, size)
            self.bound = _resized(self.bound, size)
            self._views.clear()
        if cand > len(self.cand):
            size = max(cand + cand // 4, 2 * len(self.cand), 1024)
            self.cand = _resized(self.cand, size)
            self.cand_values = _resized(self.cand_values, size)
            self._views.clear()

    def renumber(self, new: np.ndarray) -> None:
        """Follow :meth:`~.tree.Tree.compact`: node ``old`` is now ``new[old]`` (-1: gone).
        Packs the pools when garbage outweighs the live caches."""
        old = np.flatnonzero(self.slots[:, 1] >= 0)
        old = old[old < len(new)]
        moved = new[old]
        kept = moved >= 0
        self._garbage += int(self.slots[old[~kept], 3].sum())
        slots = np.full((int(new.max(initial=-1)) + 1, 4), -1, dtype=np.int64)
        slots[moved[kept]] = self.slots[old[kept]]
        self.slots = slots
        self._views = {int(new[j]): v for j, v in self._views.items() if new[j] >= 0}
        self._pending = {int(new[j]): v for j, v in self._pending.items() if new[j] >= 0}
        if self._garbage > self._used[1] - self._garbage:
            self._pack()
        self._flush()

    def _pack(self) -> None:
        """Copy the live caches to fresh pools, in node order."""
        live = np.flatnonzero(self.slots[:, 1] >= 0)
        a, na, c, nc = self.slots[live].T
        take_a, starts_a = _gather(a, na)
        take_c, starts_c = _gather(c, nc)
        self.attrs, self.bound = _taken(self.attrs, take_a), _taken(self.bound, take_a)
        self.cand, self.cand_values = _taken(self.cand, take_c), _taken(self.cand_values, take_c)
        self.slots[live, 0], self.slots[live, 2] = starts_a, starts_c
        self._used, self._garbage = [len(take_a), len(take_c)], 0
        self._views.clear()

    def copy(self) -> CachePool:
        """An independent copy (its pools are not shared)."""
        self._flush()
        copy = CachePool()
        copy.attrs, copy.bound = self.attrs.copy(), self.bound.copy()
        copy.cand, copy.cand_values = self.cand.copy(), self.cand_values.copy()
        copy.slots, copy._used, copy._garbage = self.slots.copy(), list(self._used), self._garbage
        return copy

    def __deepcopy__(self, memo) -> CachePool:
        return self.copy()  # a copy's views must be views of its own pools


def _gather(starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The positions ``starts[i] + range(lengths[i])`` for every i, concatenated, and where each
    range starts in that."""
    new = np.cumsum(lengths) - lengths
    take = np.arange(int(lengths.sum())) - np.repeat(new - starts, lengths)
    return take, new


def _taken(array: np.ndarray, take: np.ndarray) -> np.ndarray:
    """``array[take]`` in a pool a quarter larger (see :meth:`CachePool._reserve`)."""
    out = np.empty((len(take) + len(take) // 4, *array.shape[1:]), dtype=array.dtype)
    np.take(array, take, axis=0, out=out[: len(take)])
    return out


def _resized(array: np.ndarray, size: int) -> np.ndarray:
    out = np.empty((size, *array.shape[1:]), dtype=array.dtype)
    out[: len(array)] = array
    return out
