"""A tree's greedy-node caches (:mod:`.cache`) in four flat pools, so that one compiled call can
follow a deletion down the whole tree (:mod:`.walk`) instead of one call per node.

Node ``j``'s cache is ``attrs[a:a+na]``, ``bound[a:a+na]``, ``cand[c:c+nc]``,
``cand_values[c:c+nc]`` with ``slots[j] = (a, na, c, nc)`` (``na = -1``: no cache). A cache
never grows in place (:func:`~.cache.follow_deletion` reuses its rows), so a replaced cache
takes a fresh slot at the end and the old one becomes garbage; the pools are packed again when
garbage outweighs the live caches, and grown by doubling. Either moves every cache: the views
are then made again (a view taken before stays readable, but is no longer the cache).

It reads like the dict ``node -> (attrs, bound, cand, cand_values)`` it replaces; the tuples
are views into the pools (the same object while the cache stays), which deletions edit in
place.
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
        self._views: dict[int, tuple] = {}

    # -- the dict's face ---------------------------------------------------------------------

    def __contains__(self, node: int) -> bool:
        return node in self._views

    def __getitem__(self, node: int) -> tuple:
        return self._views[node]

    def __len__(self) -> int:
        return len(self._views)

    def get(self, node: int, default=None):
        return self._views.get(node, default)

    def keys(self):
        return self._views.keys()

    def values(self):
        return self._views.values()

    def items(self):
        return self._views.items()

    def pop(self, node: int, default=None):
        view = self._views.pop(node, None)
        if view is None:
            return default
        self._garbage += len(view[2])
        self.slots[node] = _EMPTY
        return view

    def __setitem__(self, node: int, cache: tuple) -> None:
        """Copy ``cache`` (``attrs, bound, cand, cand_values``) into a fresh slot."""
        attrs, bound, cand, cand_values = cache
        self.pop(node)
        if self._garbage > self._used[1] - self._garbage:
            self._pack()
        na, nc = len(attrs), len(cand)
        a, c = self._used
        grown = self._reserve(a + na, c + nc)
        self.attrs[a : a + na], self.bound[a : a + na] = attrs, bound
        self.cand[c : c + nc], self.cand_values[c : c + nc] = cand, cand_values
        self._used = [a + na, c + nc]
        if node >= len(self.slots):
            more = np.full((max(2 * len(self.slots), node + 1) - len(self.slots), 4), -1)
            self.slots = np.concatenate([self.slots, more])
        self.slots[node] = (a, na, c, nc)
        if grown:  # every view is of the old pools
            self._rebuild_views()
        self._views[node] = self._view(node)

    def arrays(self) -> tuple:
        """``(slots, attrs, bound, cand, cand_values)`` as :func:`~.walk.walk` reads them."""
        return self.slots, self.attrs, self.bound, self.cand, self.cand_values

    # -- storage -----------------------------------------------------------------------------

    def _reserve(self, attrs: int, cand: int) -> bool:
        """Make room for that many rows; True when a pool moved (old views are stale)."""
        grown = False
        if attrs > len(self.attrs):
            size = max(attrs, 2 * len(self.attrs), 64)
            self.attrs = _resized(self.attrs, size)
            self.bound = _resized(self.bound, size)
            grown = True
        if cand > len(self.cand):
            size = max(cand, 2 * len(self.cand), 1024)
            self.cand = _resized(self.cand, size)
            self.cand_values = _resized(self.cand_values, size)
            grown = True
        return grown

    def _view(self, node: int) -> tuple:
        a, na, c, nc = self.slots[node].tolist()
        return (
            self.attrs[a : a + na],
            self.bound[a : a + na],
            self.cand[c : c + nc],
            self.cand_values[c : c + nc],
        )

    def _rebuild_views(self) -> None:
        self._views = {node: self._view(node) for node in self._views}

    def renumber(self, new: np.ndarray) -> None:
        """Follow :meth:`~.tree.Tree.compact`: node ``old`` is now ``new[old]`` (-1: gone).
        Packs the pools when garbage outweighs the live caches."""
        slots = np.full((int(new.max(initial=-1)) + 1, 4), -1, dtype=np.int64)
        views = {}
        for old, view in self._views.items():
            if new[old] >= 0:
                slots[new[old]] = self.slots[old]
                views[int(new[old])] = view
            else:
                self._garbage += len(view[2])
        self.slots, self._views = slots, views
        if self._garbage > self._used[1] - self._garbage:
            self._pack()

    def _pack(self) -> None:
        old = (self.attrs, self.bound, self.cand, self.cand_values, self.slots.copy())
        live = old[4][old[4][:, 1] >= 0]
        self.__init__()
        self.slots = np.full((len(old[4]), 4), -1, dtype=np.int64)
        self._reserve(int(live[:, 1].sum()), int(live[:, 3].sum()))
        for node in np.flatnonzero(old[4][:, 1] >= 0).tolist():
            a, na, c, nc = old[4][node].tolist()
            self[node] = (old[0][a : a + na], old[1][a : a + na], old[2][c : c + nc],
                          old[3][c : c + nc])  # fmt: skip

    def copy(self) -> CachePool:
        """An independent copy (its pools are not shared)."""
        copy = CachePool()
        copy.attrs, copy.bound = self.attrs.copy(), self.bound.copy()
        copy.cand, copy.cand_values = self.cand.copy(), self.cand_values.copy()
        copy.slots, copy._used, copy._garbage = self.slots.copy(), list(self._used), self._garbage
        copy._views = dict.fromkeys(self._views)
        copy._rebuild_views()
        return copy

    def __deepcopy__(self, memo) -> CachePool:
        return self.copy()  # a copy's views must be views of its own pools


def _resized(array: np.ndarray, size: int) -> np.ndarray:
    out = np.empty((size, *array.shape[1:]), dtype=array.dtype)
    out[: len(array)] = array
    return out
