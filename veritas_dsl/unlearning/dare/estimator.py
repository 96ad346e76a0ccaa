"""The scikit-learn conventions :class:`~.forest.DareForest` follows: its base classes, its
parameters checked at ``fit`` (scikit-learn stores them as given), labels and feature names.

scikit-learn is an optional extra (``[sklearn]``). Installed, the forest is its
``ClassifierMixin`` and ``BaseEstimator``, so ``clone``, ``get_params``/``set_params``, tags,
``score`` and the search tools behave as scikit-learn defines them, release after release;
without it, the two small classes below give ``get_params``/``set_params`` and ``score``, so the
core package works alone (copying scikit-learn's tag machinery by hand would drift from it).
"""

from __future__ import annotations

import inspect
import math
import warnings

import numpy as np

from veritas_dsl.model.errors import ModelError

try:
    from sklearn.base import BaseEstimator, ClassifierMixin
    from sklearn.exceptions import DataConversionWarning, NotFittedError
except ImportError:  # the core package without the [sklearn] extra
    NotFittedError = AttributeError  # type: ignore[misc,assignment]  # as scikit-learn's is
    DataConversionWarning = UserWarning  # type: ignore[misc,assignment]

    class BaseEstimator:  # type: ignore[no-redef]
        """``get_params``/``set_params`` over the constructor's arguments, as scikit-learn's."""

        def get_params(self, deep: bool = True) -> dict:
            names = inspect.signature(type(self).__init__).parameters
            return {name: getattr(self, name) for name in names if name != "self"}

        def set_params(self, **params) -> BaseEstimator:
            valid = self.get_params()
            for name, value in params.items():
                if name not in valid:
                    raise ValueError(f"{type(self).__name__} has no parameter {name!r}")
                setattr(self, name, value)
            return self

    class ClassifierMixin:  # type: ignore[no-redef]
        """``score``: the accuracy of ``predict``, as scikit-learn's."""

        def score(self, X, y, sample_weight=None) -> float:
            right = self.predict(X) == np.asarray(y)
            return float(np.average(right, weights=sample_weight))


class NotFitted(ModelError, NotFittedError):
    """A call before ``fit``: a ModelError, and scikit-learn's NotFittedError."""


class NotNumbers(ModelError, TypeError):
    """Rows holding objects that are no numbers: a ModelError, and the TypeError NumPy and
    scikit-learn raise for them."""


def check_int(name: str, value, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ModelError(f"{name} must be an integer >= {low}, not {value!r}")


#: What a greedy node minimises, by the name ``criterion`` takes (kernels.GINI, kernels.ENTROPY).
CRITERIA = {"gini": 0, "entropy": 1}


def check_params(forest) -> None:
    """The constructor's arguments, checked (at ``fit`` and ``load``, as scikit-learn asks)."""
    if not isinstance(forest.criterion, str) or forest.criterion not in CRITERIA:
        raise ModelError(f"criterion must be 'gini' or 'entropy', not {forest.criterion!r}")
    check_int("n_trees", forest.n_trees, 1)
    if forest.max_depth is not None:
        check_int("max_depth", forest.max_depth, 0)
    if forest.k is not None:
        check_int("k", forest.k, 1)
    check_int("random_depth", forest.random_depth, 0)
    check_int("min_samples_leaf", forest.min_samples_leaf, 1)
    f = forest.max_features
    if isinstance(f, (float, np.floating)):
        if not 0.0 < f <= 1.0:
            raise ModelError(f"max_features as a fraction must be in (0, 1], not {f!r}")
    elif f is not None and f not in ("sqrt", "log2"):
        check_int("max_features", f, 1)
    seed = forest.random_state
    if seed is not None and not isinstance(seed, np.random.Generator):
        check_int("random_state", seed, 0)


def feature_count(max_features, p: int) -> int:
    """How many of ``p`` attributes a greedy node samples: ``None`` all of them (scikit-learn's
    meaning; dare_rf, the paper's code, reads None as sqrt), a fraction of them (at least one),
    ``"sqrt"``/``"log2"`` of them, or a count (at most ``p``)."""
    if max_features is None:
        return p
    if isinstance(max_features, (float, np.floating)):
        return max(1, int(max_features * p))
    if max_features == "sqrt":
        return max(1, int(math.sqrt(p)))
    if max_features == "log2":
        return max(1, int(math.log2(p)))
    return min(p, int(max_features))


def encode_labels(y, classes: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """``(classes, codes)``: the sorted distinct labels (those of ``classes`` when given, at
    ``add``) and each label's position among them (int8)."""
    y = np.asarray(y)
    if y.dtype.kind == "f" and not np.all(np.isfinite(y) & (y == np.round(y))):
        raise ModelError("Unknown label type: continuous values; labels name classes")
    if y.dtype.kind not in "biufUSO":
        raise ModelError(f"Unknown label type: {y.dtype}; labels name classes")
    if classes is None:
        try:
            classes, codes = np.unique(y, return_inverse=True)
        except TypeError as error:  # labels of mixed types
            raise ModelError(f"Unknown label type: {error}") from None
        if len(classes) < 2:
            raise ModelError(f"one class only (every label is {classes[0].item()!r}): fit needs "
                             "rows of two classes")  # fmt: skip
        if len(classes) > 127:  # codes are int8
            raise ModelError(f"{len(classes)} classes: DareForest learns at most 127")
        return classes, codes.astype(np.int8)
    codes = np.searchsorted(classes, y).clip(0, len(classes) - 1)
    odd = np.flatnonzero(classes[codes] != y)
    if len(odd):
        raise ModelError(
            f"y[{odd[0]}] is {y[odd[0]]!r}: the forest learned the classes {classes.tolist()}"
        )
    return classes, codes.astype(np.int8)


def matrix(X, width: int | None) -> np.ndarray:
    """``X`` as a float32 matrix of ``width`` columns (any at ``fit``), refused as scikit-learn
    refuses it (its checks match these words)."""
    if hasattr(X, "tocsr"):
        raise ModelError("sparse input is not supported: pass a dense array (X.toarray())")
    try:
        X = np.asarray(X)
        if X.dtype.kind == "c":
            raise ModelError("Complex data not supported")
        X = X.astype(np.float32)
    except TypeError as error:
        raise NotNumbers(f"the rows are not numbers: {error}") from None
    except ValueError as error:
        raise ModelError(f"the rows are not numbers: {error}") from None
    if X.ndim != 2:
        raise ModelError(
            f"X must be a 2-d array, not shape {X.shape}: Reshape your data "
            "(X.reshape(-1, 1) for one feature, X.reshape(1, -1) for one row)"
        )
    for axis, what in enumerate(("sample", "feature")):
        if X.shape[axis] == 0:
            raise ModelError(f"X has 0 {what}(s) (shape={X.shape}) while a minimum of 1 is "
                             "required.")  # fmt: skip
    if width is not None and X.shape[1] != width:
        raise ModelError(f"X has {X.shape[1]} features, but DareForest is expecting {width} "
                         "features as input")  # fmt: skip
    bad = np.argwhere(~np.isfinite(X))
    if len(bad):
        r, c = bad[0]
        raise ModelError(f"X[{r}, {c}] is {X[r, c]}: rows must be finite (no NaN or inf)")
    return X


def labels(y, n: int) -> np.ndarray:
    """``y`` as one label per row; a column ``(n, 1)`` is taken with a warning, as
    scikit-learn's classifiers take it."""
    if y is None:
        raise ModelError("DareForest requires y to be passed, but the target y is None")
    y = np.asarray(y)
    if y.shape == (n, 1):
        warnings.warn("A column-vector y was passed when a 1d array was expected: y.ravel() "
                      "is used", DataConversionWarning, stacklevel=3)  # fmt: skip
        y = y.ravel()
    if y.shape != (n,):
        raise ModelError(f"y must have one label per row ({n}), not shape {y.shape}")
    return y


def feature_names(X) -> np.ndarray | None:
    """A DataFrame's column names when they are all strings (scikit-learn's rule), else None."""
    columns = getattr(X, "columns", None)
    if columns is None or len(columns) == 0 or not all(isinstance(c, str) for c in columns):
        return None
    return np.asarray(columns, dtype=object)


def check_feature_names(forest, X) -> None:
    """The names of ``X``'s columns agree with those at ``fit``, as scikit-learn checks: other
    names are an error, names on one side only a warning."""
    fitted, given = getattr(forest, "feature_names_in_", None), feature_names(X)
    name = type(forest).__name__
    if fitted is None and given is not None:
        warnings.warn(f"X has feature names, but {name} was fitted without feature names",
                      UserWarning, stacklevel=3)  # fmt: skip
    elif fitted is not None and given is None:
        warnings.warn(f"X does not have valid feature names, but {name} was fitted with "
                      "feature names", UserWarning, stacklevel=3)  # fmt: skip
    elif fitted is not None and not np.array_equal(fitted, given):
        raise ModelError("The feature names should match those that were passed during fit: "
                         f"{fitted.tolist()} at fit, {given.tolist()} now")  # fmt: skip
