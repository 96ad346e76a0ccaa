"""Search trees built once per model (steps 4-6 of :mod:`~veritas_dsl.solvers.astar.problem`,
memoised): the queries of a spec, and the rows of a batch, read the same model under the same
static box with the same leaf contributions (a global max and every row's class change read
``+-m(x)``), and their cells, compacted trees, units and leaf boxes are then the same arrays.

Why it is sound: the arrays depend only on the key, which holds everything steps 4-6 read: each
copy's model (by identity, alive: an :class:`~veritas_dsl.model.Ensemble`'s arrays are
read-only), instance and variables, which variables are integral, the static box, and the leaf
contributions themselves (compared value for value on a hit, not only by digest). The kernels
never write to these arrays. Entries hang off the first copy's model (weakly), so they go when
the model goes; each model keeps the :data:`PER_MODEL` most recent.
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from veritas_dsl.solvers.astar.cells import cells
from veritas_dsl.solvers.astar.trees import fill_trees, splits

#: Entries kept per model (the most recently used).
PER_MODEL = 4

_FIELDS = ("cell_ptr", "cell_lo", "cell_hi", "root", "trees", "scale", "exact_units", "u_base")


@dataclass(frozen=True)
class _Entry:
    models: tuple  # weak references to the copies' models, checked on a hit
    values: np.ndarray  # the leaf contributions, compared on a hit
    fields: dict
    n_trees: int
    shape: tuple[int, int, int]  # q, max_leaves, max_depth


_MEMO: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def search_trees(problem, query, copies, lo, hi, n_terms: int) -> tuple[int, int, int]:
    """Fill ``problem``'s cells, root box, search trees and units (:func:`.cells.cells` and
    :func:`.trees.fill_trees` on the splits of ``copies``), from the memo when an earlier problem
    had the same key. Returns ``(q, max_leaves, max_depth)`` as :func:`.trees.fill_trees` does."""
    var, integral = problem.var, problem.integral
    models = [query.models[name] for name, _ in copies]
    if not models:
        return _build(problem, query, copies, lo, hi, n_terms)
    values = np.concatenate([np.ascontiguousarray(v, dtype=np.float64) for v in copies.values()])
    digest = hashlib.blake2b(values.tobytes(), digest_size=16)
    for a in (var, integral, lo, hi):
        digest.update(np.ascontiguousarray(a).tobytes())
    reads = zip(models, copies, strict=True)
    copy_keys = tuple((id(m), name, query.instances.index(i)) for m, (name, i) in reads)
    key = (copy_keys, var.shape, values.shape, n_terms, digest.digest())
    with _LOCK:
        entries = _MEMO.get(models[0])
        entry = None if entries is None else entries.get(key)
        if entry is not None:
            entries.move_to_end(key)
    if entry is not None and _same(entry, models, values):
        for name, value in entry.fields.items():
            setattr(problem, name, value)
        problem.n_trees = entry.n_trees
        return entry.shape
    shape = _build(problem, query, copies, lo, hi, n_terms)
    fields = {name: getattr(problem, name) for name in _FIELDS}
    refs = tuple(weakref.ref(m) for m in models)
    entry = _Entry(refs, values, fields, problem.n_trees, shape)
    with _LOCK:
        entries = _MEMO.setdefault(models[0], OrderedDict())
        entries[key] = entry
        while len(entries) > PER_MODEL:
            entries.popitem(last=False)
    return shape


def clear() -> None:
    """Forget every memoised entry (tests; a caller freeing memory)."""
    with _LOCK:
        _MEMO.clear()


def _same(entry: _Entry, models, values) -> bool:
    return all(ref() is m for ref, m in zip(entry.models, models, strict=True)) and (
        np.array_equal(entry.values, values)
    )


def _build(problem, query, copies, lo, hi, n_terms: int) -> tuple[int, int, int]:
    split_var, split_value, node_rows = splits(query, copies, problem.var, problem.integral)
    cell_ptr, cell_lo, cell_hi, root, split_rank = cells(
        split_var, split_value, lo, hi, problem.integral, problem.n_vars
    )
    problem.cell_ptr, problem.cell_lo, problem.cell_hi = cell_ptr, cell_lo, cell_hi
    problem.root = root
    return fill_trees(problem, query, copies, node_rows, split_rank, n_terms)
