"""What `ver inspect` reports about a model: size, depth, features, thresholds, leaf values."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from veritas_dsl.model.ensemble import Ensemble


@dataclass(frozen=True)
class FeatureUse:
    """How the trees use one feature: split count and the distinct thresholds' count and range."""

    name: str
    splits: int
    thresholds: int
    lowest: float
    highest: float


@dataclass(frozen=True)
class ModelSummary:
    source: str
    task: str
    n_features: int
    n_outputs: int
    n_trees: int
    n_nodes: int
    n_leaves: int
    max_depth: int
    mean_depth: float
    base_score: list[float]
    leaf_min: float
    leaf_max: float
    features: list[FeatureUse]

    def to_dict(self) -> dict:
        return asdict(self)


def summarize(model: Ensemble) -> ModelSummary:
    """Summarise ``model``; features are listed in input order, used ones only."""
    leaf = model.is_leaf()
    inner = ~leaf
    depths = model.tree_depths()
    leaf_values = model.value[leaf]
    features = []
    for f, name in enumerate(model.feature_names):
        at = inner & (model.feature == f)
        if not at.any():
            continue
        distinct = np.unique(model.threshold[at])
        features.append(
            FeatureUse(name, int(at.sum()), len(distinct), float(distinct[0]), float(distinct[-1]))
        )
    return ModelSummary(
        source=model.source,
        task=model.task,
        n_features=model.n_features,
        n_outputs=model.n_outputs,
        n_trees=model.n_trees,
        n_nodes=model.n_nodes,
        n_leaves=int(leaf.sum()),
        max_depth=int(depths.max()),
        mean_depth=float(depths.mean()),
        base_score=[float(b) for b in model.base_score],
        leaf_min=float(leaf_values.min()),
        leaf_max=float(leaf_values.max()),
        features=features,
    )
