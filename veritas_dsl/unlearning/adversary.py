"""DaRE's worst-of-n adversary (Brophy & Lowd 2021, section 5): of n candidate rows, the one
whose deletion "results in the most retraining", to stress-test a forest's deletion cost.

The cost of a candidate is the exact ``last_deletion_cost`` its deletion would give (rows the
trees re-examine by growing subtrees again), found by a trial deletion that leaves the forest
as it was (:meth:`DareForest.deletion_cost`), so the pick is the costliest candidate, not a
guess. DaRE itself ranks by a simulation that stops at each tree's topmost node to retrain.
"""

from __future__ import annotations

import numpy as np

from veritas_dsl.model.errors import ModelError
from veritas_dsl.unlearning.dare import DareForest
from veritas_dsl.unlearning.dare.classes import two_classes


def worst_deletion(forest: DareForest, candidates=1000, seed: int = 0) -> tuple[int, int]:
    """``(row, cost)``: the candidate whose deletion costs most and that cost (the first such
    in candidate order on a tie). ``candidates`` is a list of remaining row ids, or a count:
    that many remaining rows drawn at random with ``seed`` (every row that may be deleted
    when fewer remain). The forest is left as it was (but for the caches a loaded forest
    builds, which change no answer: :meth:`DareForest.warm`); deleting ``row`` then gives
    ``last_deletion_cost == cost``. Costs about one deletion per candidate."""
    two_classes(forest, "worst_deletion")
    if isinstance(candidates, (int, np.integer)) and not isinstance(candidates, bool):
        alive = forest.remaining()
        if candidates < 1:
            raise ModelError(f"candidates must be at least 1, not {candidates}")
        size = min(int(candidates), len(alive) - 1)  # the last row may not be deleted
        if size == 0:
            raise ModelError("one row remains: deleting it would leave nothing to learn from")
        candidates = np.random.default_rng(seed).choice(alive, size, replace=False)
    ids = np.atleast_1d(np.asarray(candidates))
    if ids.ndim != 1 or len(ids) == 0:
        raise ModelError(f"candidates must be a non-empty list of row ids, not {candidates!r}")
    # A loaded forest lacks caches: each trial would choose again from rows, on a copy, every
    # time (100 trees of digits, 200 candidates: 8.6 s, against 1.2 s warmed).
    forest.warm(ids)
    costs = [forest.deletion_cost(r) for r in ids.tolist()]
    best = int(np.argmax(costs))
    return int(ids[best]), costs[best]
