"""What every scikit-learn importer checks of an estimator before it trusts scikit-learn with it
(its inputs, and that scikit-learn can evaluate it at all), and the library model it keeps.

A skops file rebuilds an estimator from whatever state it holds, and scikit-learn reads that state
only when it predicts, its tree predictors indexing inputs without bounds checks. The importers
keep the estimator to check witnesses against, so a state scikit-learn cannot evaluate, or would
evaluate out of bounds, must be refused as the file loads.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from veritas_dsl.model.errors import ModelError
from veritas_dsl.model.library import MAX_FEATURES, LibraryModel

if TYPE_CHECKING:
    from veritas_dsl.model.ensemble import Ensemble


def input_names(estimator, kind: str) -> tuple[str, ...]:
    """One name per input scikit-learn predicts on (``n_features_in_`` of them). An Ensemble
    counts its features by name: a name too many let a split test an input scikit-learn's
    predictor then read beyond its rows."""
    n_features = int(estimator.n_features_in_)
    if not 0 < n_features <= MAX_FEATURES:
        raise ModelError(f"{kind} has {n_features} features, outside 1..{MAX_FEATURES:,}")
    names = getattr(estimator, "feature_names_in_", None)
    if names is None:
        return tuple(f"f{i}" for i in range(n_features))
    if len(names) != n_features:
        raise ModelError(f"{kind} has {len(names)} feature names for {n_features} input(s)")
    return tuple(str(n) for n in names)


def evaluates(model: Ensemble) -> Ensemble:
    """``model`` once scikit-learn has evaluated it on one row (its output and, for a forest,
    its trees' votes); whatever scikit-learn raises on a state whose parts disagree (a member
    expecting other inputs than the forest) is raised here, at load time."""
    X = np.zeros((1, model.n_features), dtype=np.float32)
    model.library.predict(X)
    model.library.votes(X, max(model.n_outputs, 2))
    return model


def library_model(
    kind: str, raw: Callable, n_features: int, votes: Callable | None = None
) -> LibraryModel:
    """The estimator as the library model witnesses are checked against. scikit-learn warns when
    an estimator fitted on named columns is given an array; ours are those columns, in order."""
    return LibraryModel(
        f"sklearn {kind}", _quiet(raw), np.arange(n_features), votes and _quiet(votes)
    )


def _quiet(function: Callable) -> Callable:
    def call(X: np.ndarray) -> np.ndarray:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "X does not have valid feature names", UserWarning)
            return function(X)

    return call
