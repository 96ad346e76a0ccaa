"""Trees of the same shape searched once (before step 5 of
:mod:`~veritas_dsl.solvers.astar.problem`): on a query of one instance, every tree the terms read
whose nodes (features, float32 thresholds, children) equal another's is merged with it into one
search tree, whose leaf carries both trees' contributions.

Why it is exact: trees of the same shape read on the same input reach the same leaf, so searching
them as one tree picks one leaf for both, as the input does. Two trees are merged only when no
term reads both (their contributions sit in disjoint columns), so each leaf's vector is copied,
never summed, and units stay those of the unmerged trees. The variants of a deletion family
(``class(m, x) == 1 for m in V``) are the case this is for: each variant is its own term, and
variants share the trees whose splits the deleted rows did not move.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from veritas_dsl.ir.query import Query
from veritas_dsl.ir.reductions.cancel import shape_keys
from veritas_dsl.model.ensemble import Ensemble

#: The name of the model of merged trees (no spec can declare it: it has a NUL).
SHARED = "\0shared"


def share_trees(query: Query, copies: dict) -> tuple[Query, dict]:
    """``(query, copies)`` with the trees of one shape merged (see the module docstring) into
    one model :data:`SHARED`, or unchanged when the query has two instances or no two trees
    can merge (always so with one term, checked before the trees' shapes are read: that costs
    about 2 ms per model of 200 trees). ``copies``: ``{(model, instance): float64 (n_nodes,
    K)}`` of :func:`~veritas_dsl.solvers.astar.terms.term_copies`."""
    if len(query.instances) != 1 or not copies or next(iter(copies.values())).shape[1] < 2:
        return query, copies  # with one term, trees of one shape share its column: none merge
    (instance,) = query.instances
    keyed = [(name, vals, shape_keys(query.models[name])) for (name, _), vals in copies.items()]
    seen: dict[bytes, int] = {}
    for _, _, keys in keyed:
        for key in keys:
            seen[key] = seen.get(key, 0) + 1
    used_by_copy = [
        np.logical_or.reduceat(vals != 0, query.models[name].tree_offsets[:-1], axis=0)
        if keys
        else np.zeros((0, vals.shape[1]), dtype=bool)
        for name, vals, keys in keyed
    ]
    pairs = zip(used_by_copy, keyed, strict=True)
    repeated = np.concatenate([used[[seen[key] > 1 for key in keys]] for used, (*_, keys) in pairs])
    if len(repeated) == 0 or np.any(np.all(repeated, axis=0)):
        return query, copies  # no two trees of one shape have disjoint columns: none merge
    buckets: list[list] = []  # [model, start, end, values, columns used]
    open_buckets: dict[bytes, list[int]] = {}
    for (name, vals, keys), used_by_tree in zip(keyed, used_by_copy, strict=True):
        model = query.models[name]
        offsets = model.tree_offsets
        for t, key in enumerate(keys):
            a, b = int(offsets[t]), int(offsets[t + 1])
            values = vals[a:b]
            used = used_by_tree[t]
            same = open_buckets.setdefault(key, [])
            for k in same:
                if not np.any(used & buckets[k][4]):
                    buckets[k][3] = buckets[k][3] + values
                    buckets[k][4] = buckets[k][4] | used
                    break
            else:
                same.append(len(buckets))
                buckets.append([model, a, b, values, used])
    if len(buckets) == sum(query.models[name].n_trees for name, _ in copies):
        return query, copies
    union = _union(query, buckets)
    shared = dataclasses.replace(query, models={**query.models, SHARED: union})
    return shared, {(SHARED, instance): np.concatenate([bucket[3] for bucket in buckets])}


def _union(query: Query, buckets) -> Ensemble:
    """One model holding each bucket's tree (leaf values zero: ``copies`` carries them)."""
    feature, threshold, left, right, sizes = [], [], [], [], []
    start = 0
    for model, a, b, *_ in buckets:
        feature.append(model.feature[a:b])
        threshold.append(model.threshold[a:b])
        for side, out in ((model.left, left), (model.right, right)):
            child = side[a:b].astype(np.int64)
            out.append(np.where(child >= 0, child - a + start, -1))
        sizes.append(b - a)
        start += b - a
    return Ensemble(
        feature=np.concatenate(feature),
        threshold=np.concatenate(threshold),
        left=np.concatenate(left),
        right=np.concatenate(right),
        value=np.zeros((start, 1)),
        tree_offsets=np.concatenate([[0], np.cumsum(sizes)]),
        base_score=np.zeros(1),
        feature_names=tuple(f.name for f in query.features),
    )
