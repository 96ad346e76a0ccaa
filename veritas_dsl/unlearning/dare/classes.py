"""Three or more classes: one binary DaRE forest per class, class against the rest.

Each member learns "is the label class ``c``?" on every row, with its own seed drawn from the
forest's ``random_state``. A deletion or an addition is made in every member, and each member
is exact as a binary forest is (node for node a fit on the remaining rows in the
deterministic configuration, in distribution otherwise), so the whole is the forest a fit on
the remaining rows gives with the same seeds. ``predict_proba`` is each member's probability
of its class, divided by their sum (scikit-learn's one-vs-rest rule); ``predict`` is the
largest, which is also the largest unnormalised one, so the exported Ensemble (one output per
class, each the member's probability) decides every input as ``predict`` does.

Not the DaRE paper's multi-class nodes (C - 1 class counts per node, one Gini over all
classes): those would thread counts per class through the kernels, caches and files; this
reuses the binary machinery whole, at C times the trees. Docs: docs/unlearning.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from veritas_dsl.model.errors import ModelError

if TYPE_CHECKING:
    from veritas_dsl.model.ensemble import Ensemble
    from veritas_dsl.unlearning.dare.forest import DareForest


def fit_members(forest: DareForest, X: np.ndarray, codes: np.ndarray) -> list[DareForest]:
    """One binary forest per class of ``codes`` (0 .. C-1), seeded from the forest's
    ``random_state`` (an int gives the same members every time; a Generator is drawn from)."""
    rng = np.random.default_rng(forest.random_state)
    seeds = rng.integers(0, 2**63, size=int(codes.max()) + 1)
    params = {**forest.get_params(), "random_state": None}
    return [
        type(forest)(**{**params, "random_state": int(seed)}).fit(X, (codes == c).astype(np.int8))
        for c, seed in enumerate(seeds)
    ]


def probabilities(members: list[DareForest], X: np.ndarray) -> np.ndarray:
    """Each member's probability of its class, shape ``(n, C)``, each row divided by its sum
    (a row every member gives 0 is uniform)."""
    scores = np.column_stack([m.predict_proba(X)[:, 1] for m in members])
    total = scores.sum(axis=1, keepdims=True)
    uniform = np.full_like(scores, 1.0 / scores.shape[1])
    return np.divide(scores, total, out=uniform, where=total > 0)


def to_ensemble(members: list[DareForest], names: tuple[str, ...] | None) -> Ensemble:
    """One output per class: member ``c``'s trees write output ``c`` (its probability of class
    ``c``, unnormalised) and 0 elsewhere. Leaf values stay exact fractions."""
    from veritas_dsl.model.ensemble import Ensemble
    from veritas_dsl.model.fractions import LeafFractions

    parts = [m.to_ensemble() for m in members]
    width = len(parts)
    offsets, nodes = [0], 0
    columns: dict[str, list] = {n: [] for n in ("feature", "threshold", "left", "right")}
    numerator, denominator = [], []
    for c, part in enumerate(parts):
        for name in ("left", "right"):
            links = getattr(part, name)
            columns[name].append(np.where(links >= 0, links + nodes, links))
        columns["feature"].append(part.feature)
        columns["threshold"].append(part.threshold)
        num = np.zeros((len(part.feature), width), np.int64)
        den = np.ones((len(part.feature), width), np.int64)
        num[:, c], den[:, c] = part.fractions.numerator[:, 0], part.fractions.denominator[:, 0]
        numerator.append(num)
        denominator.append(den)
        offsets += (part.tree_offsets[1:] + nodes).tolist()
        nodes += len(part.feature)
    fractions = LeafFractions(np.concatenate(numerator), np.concatenate(denominator))
    first = parts[0]
    return Ensemble(
        feature=np.concatenate(columns["feature"]),
        threshold=np.concatenate(columns["threshold"]),
        left=np.concatenate(columns["left"]),
        right=np.concatenate(columns["right"]),
        value=fractions.values(),
        tree_offsets=np.array(offsets, np.int64),
        base_score=np.zeros(width),
        feature_names=first.feature_names if names is None else names,
        task="multiclass",
        source=f"DaRE forest, one per class of {width}",
        fractions=fractions,
    )


def two_classes(forest: DareForest, what: str) -> None:
    """Raise :func:`refuse` for a forest of three or more classes: ``what`` reads the binary
    trees (the leakage set, the attack's posteriors, the certificate, the cost of a deletion)."""
    if forest.multiclass:
        raise refuse(what)


def refuse(what: str) -> ModelError:
    """What a forest of three or more classes does not do yet."""
    return ModelError(
        f"{what} takes a forest of two classes; this one learns three or more (one binary "
        "forest per class, veritas_dsl/unlearning/dare/classes.py)"
    )
