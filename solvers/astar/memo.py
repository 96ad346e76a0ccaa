"""Search trees built once per model (steps 4-6 of :mod:`~veritas_dsl.solvers.astar.problem`,
memoised): the queries of a spec, and the rows of a batch, read the same model under the same
static box, and their cells and compacted trees are then the same arrays; when they read the
same leaf contributions too (a global max and every row's class change read ``+-m(x)``), so are
their units, tree order and leaf boxes.

Why it is sound: the arrays depend only on the key, which holds everything steps 4-6 read. The
structure (cells, compaction): each copy's model (by identity, alive: an
:class:`~veritas_dsl.model.Ensemble`'s arrays are read-only), instance and variables, which
variables are integral, and the static box. The units: the leaf contributions themselves,
compared value for value on a hit, not only by digest. The kernels never write to these
arrays. Entries hang off the first copy's model (weakly), so they go when the model goes; each
model keeps the :data:`PER_MODEL` most recent structures, each the :data:`PER_STRUCTURE` most
recent leaf contributions.

Before them, the terms' leaf contributions and the trees merged across a family's variants
(steps 3 and 3b, :func:`shared_copies`) are memoised the same way, keyed by the terms and the
models they read: the rows of a batch then get the very same merged model, which is what the
structures above are keyed by.
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from veritas_dsl.solvers.astar.cells import cells
from veritas_dsl.solvers.astar.sharing import SHARED, share_trees
from veritas_dsl.solvers.astar.terms import term_copies
from veritas_dsl.solvers.astar.trees import compact, fill_trees, splits

#: Structures (static boxes, instances) kept per model, and leaf contributions per structure.
PER_MODEL = 4
PER_STRUCTURE = 4

_UNITS = ("trees", "scale", "exact_units", "u_base", "n_trees")


@dataclass
class _Structure:
    models: tuple  # weak references to the copies' models, checked on a hit
    cells: dict
    compacted: tuple
    units: OrderedDict = field(default_factory=OrderedDict)  # digest -> _Units


@dataclass(frozen=True)
class _Units:
    values: np.ndarray  # the leaf contributions, compared on a hit
    fields: dict
    shape: tuple[int, int, int]  # q, max_leaves, max_depth


@dataclass(frozen=True)
class _Shared:
    models: tuple  # weak references to the models the terms read, checked on a hit
    union: object  # the model of merged trees (share_trees's SHARED), or None
    copies: dict


_MEMO: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_SHARED_MEMO: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def shared_copies(query, terms, signs) -> tuple:
    """``share_trees(query, term_copies(query, terms, signs))``, from the memo when an earlier
    query read the same models with the same terms (a batch's rows do)."""
    names = sorted({atom.model for term in terms for atom in term.atoms})
    models = [query.models[name] for name in names]
    try:
        key = (
            tuple(terms),
            tuple(signs),
            query.instances,
            tuple(f.name for f in query.features),
            tuple((name, id(m)) for name, m in zip(names, models, strict=True)),
        )
        hash(key)
    except TypeError:  # a term holding something unhashable: built every time
        return share_trees(query, term_copies(query, terms, signs))
    entry = _lookup(_SHARED_MEMO, models, key) if models else None
    if entry is None:
        searched, copies = share_trees(query, term_copies(query, terms, signs))
        for values in copies.values():
            values.setflags(write=False)  # shared by later rows, and compared by identity
        refs = tuple(weakref.ref(m) for m in models)
        entry = _Shared(refs, searched.models.get(SHARED), copies)
        if models:
            _store(_SHARED_MEMO, models, key, entry)
    if entry.union is None:
        return query, entry.copies
    return dataclasses.replace(query, models={**query.models, SHARED: entry.union}), entry.copies


def search_trees(
    problem, query, copies, lo, hi, n_terms: int, pairing: str = "never"
) -> tuple[int, int, int]:
    """Fill ``problem``'s cells, root box, search trees and units (:func:`.cells.cells`,
    :func:`.trees.compact` and :func:`.trees.fill_trees` on the splits of ``copies``, with
    ``pairing``), from the memo where an earlier problem had the same key. Returns
    ``(q, max_leaves, max_depth)`` as :func:`.trees.fill_trees` does."""
    structure = cells_and_trees(problem, query, copies, lo, hi)
    for name, value in structure.cells.items():
        setattr(problem, name, value)
    if not copies:
        return fill_trees(problem, structure.compacted, copies, n_terms, pairing)

    arrays = [np.asarray(v, dtype=np.float64) for v in copies.values()]
    values = arrays[0] if len(arrays) == 1 else np.concatenate(arrays)
    with _LOCK:  # the very array of an earlier row (shared_copies): no need to hash it
        units = next(
            (
                u
                for (_, n, p, _), u in structure.units.items()
                if u.values is values and n == n_terms and p == pairing
            ),
            None,
        )
    if units is None:
        digest = (
            values.shape,
            n_terms,
            pairing,
            hashlib.blake2b(values.tobytes(), digest_size=16).digest(),
        )
        with _LOCK:
            units = structure.units.get(digest)
        if units is not None and not np.array_equal(units.values, values):
            units = None
    if units is not None:
        for name, value in units.fields.items():
            setattr(problem, name, value)
        return units.shape
    shape = fill_trees(problem, structure.compacted, copies, n_terms, pairing)
    units = _Units(values, {name: getattr(problem, name) for name in _UNITS}, shape)
    with _LOCK:
        structure.units[digest] = units
        structure.units.move_to_end(digest)
        while len(structure.units) > PER_STRUCTURE:
            structure.units.popitem(last=False)
    return shape


def cells_and_trees(problem, query, copies, lo, hi) -> _Structure:
    """The cells and compacted trees of ``copies`` under the static box ``lo, hi`` (steps 4-5),
    from the memo or built and memoised now; ``problem`` is not changed. What
    ``AStarEngine.prepare`` builds ahead of a model's first query."""
    models = [query.models[name] for name, _ in copies]
    if not models:
        return _structure(problem, query, copies, lo, hi)
    reads = zip(models, copies, strict=True)
    copy_keys = tuple((id(m), name, query.instances.index(i)) for m, (name, i) in reads)
    box = hashlib.blake2b(digest_size=16)
    for a in (problem.var, problem.integral, lo, hi):
        box.update(np.ascontiguousarray(a).tobytes())
    key = (copy_keys, problem.var.shape, box.digest())
    structure = _lookup(_MEMO, models, key)
    if structure is None:
        structure = _structure(problem, query, copies, lo, hi)
        _store(_MEMO, models, key, structure)
    return structure


def clear() -> None:
    """Forget every memoised entry (tests; a caller freeing memory)."""
    with _LOCK:
        _MEMO.clear()
        _SHARED_MEMO.clear()


def _lookup(memo, models, key):
    """``memo``'s entry for ``key`` under ``models[0]``, if the models it was built from are
    ``models`` and alive (ids are reused once a model is gone)."""
    with _LOCK:
        entries = memo.get(models[0])
        entry = None if entries is None else entries.get(key)
        if entry is not None:
            entries.move_to_end(key)
    if entry is None:
        return None
    alive = all(ref() is m for ref, m in zip(entry.models, models, strict=True))
    return entry if alive else None


def _store(memo, models, key, entry) -> None:
    with _LOCK:
        entries = memo.setdefault(models[0], OrderedDict())
        entries[key] = entry
        while len(entries) > PER_MODEL:
            entries.popitem(last=False)


def _structure(problem, query, copies, lo, hi) -> _Structure:
    var, integral, n_vars = problem.var, problem.integral, problem.n_vars
    split_var, split_value, node_rows = splits(query, copies, var, integral)
    cell_ptr, cell_lo, cell_hi, root, split_rank = cells(
        split_var, split_value, lo, hi, integral, n_vars
    )
    compacted = compact(query, copies, node_rows, split_rank, var, root, n_vars)
    refs = tuple(weakref.ref(query.models[name]) for name, _ in copies)
    fields = {"cell_ptr": cell_ptr, "cell_lo": cell_lo, "cell_hi": cell_hi, "root": root}
    return _Structure(refs, fields, compacted)
