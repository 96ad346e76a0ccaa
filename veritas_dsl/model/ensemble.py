"""The model IR: a tree ensemble as flat numpy arrays.

Every importer (XGBoost, scikit-learn, LightGBM, CatBoost, ONNX, our own JSON) produces an
:class:`Ensemble`, and every engine reads one. The split rule is XGBoost's: a float32 input ``x``
goes to the left child of node ``n`` when ``x[feature[n]] < threshold[n]``, with the threshold a
float32 value. Importers of libraries that split on ``x <= t`` convert their thresholds so that
this rule reproduces them exactly on every float32 input (see
:func:`veritas_dsl.model.library.le_threshold_as_lt`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

import numpy as np

from veritas_dsl.inputs import excerpt
from veritas_dsl.model.errors import ModelError
from veritas_dsl.model.forest import check_forest, check_offsets, where
from veritas_dsl.model.fractions import LeafFractions
from veritas_dsl.model.library import MAX_FEATURES, LibraryModel, Task
from veritas_dsl.model.limits import model_bytes

#: Tag written into the files of :meth:`Ensemble.save`; :meth:`Ensemble.load` refuses others.
FILE_FORMAT = "veritas-dsl-ensemble"
FILE_VERSION = 1

_EVAL_CHUNK_ROWS = 4096
_DOCUMENT_KEYS = (
    "feature_names", "task", "class_threshold", "base_score", "tree_offsets", "feature",
    "threshold", "left", "right", "value",
)  # fmt: skip
#: What ``proba(m, x)`` reads a binary model's output as (see :attr:`Ensemble.probability`).
_PROBABILITY = ("logistic", "identity")


@dataclass(frozen=True, eq=False)
class Ensemble:
    """A tree ensemble as flat arrays, one row per node.

    Attributes
    ----------
    feature : int32 array, shape (n_nodes,)
        Feature tested at each internal node; -1 at leaves.
    threshold : float32 array, shape (n_nodes,)
        Split threshold; ``x[feature] < threshold`` goes left. 0 at leaves.
    left, right : int32 arrays, shape (n_nodes,)
        Absolute node indices of the children; -1 at leaves.
    value : float64 array, shape (n_nodes, n_outputs)
        Leaf values, one column per output (class); rows of internal nodes are 0.
    tree_offsets : int64 array, shape (n_trees + 1,)
        Tree ``t`` owns nodes ``tree_offsets[t]:tree_offsets[t + 1]``; its root is the first.
    base_score : float64 array, shape (n_outputs,)
        Added to the sum of the leaf values (already in margin space).
    feature_names : tuple of str
        One name per input feature, in input column order.
    task : {"regression", "binary", "multiclass"}
        How outputs turn into a class: ``binary`` predicts 1 when the single output is strictly
        above ``class_threshold``; ``multiclass`` predicts the first output of largest value.
    class_threshold : float
        The binary decision threshold of the raw output (0 for margins, 0.5 for probabilities).
    probability : {"", "logistic", "identity"}
        How a binary model's output becomes its library's probability of class 1: the logistic
        function of a margin, the output itself (a forest's), or "" (none that is exact).
    source : str
        Where the model came from, for messages (library, objective, path).
    library : LibraryModel or None
        The original model, used to validate witnesses; None after :meth:`load`. It stays in
        the process that loaded it: a pickled Ensemble has none (see :meth:`__reduce__`).
    fractions : LeafFractions or None
        The leaf values as exact fractions (a DaRE forest's, :mod:`veritas_dsl.model.fractions`),
        ``value`` holding each rounded once; the base score is then 0 and an output is the exact
        sum of the leaves' fractions, rounded once to float64 (see :meth:`outputs_at`).
    """

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    tree_offsets: np.ndarray
    base_score: np.ndarray
    feature_names: tuple[str, ...]
    task: Task = "regression"
    class_threshold: float = 0.0
    probability: str = ""
    source: str = ""
    library: LibraryModel | None = field(default=None, repr=False)
    fractions: LeafFractions | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        coerce = {
            "feature": np.int32,
            "threshold": np.float32,
            "left": np.int32,
            "right": np.int32,
            "value": np.float64,
            "tree_offsets": np.int64,
            "base_score": np.float64,
        }
        for name, dtype in coerce.items():
            array = _as_array(getattr(self, name), dtype, name)
            array.setflags(write=False)
            object.__setattr__(self, name, array)
        object.__setattr__(self, "feature_names", tuple(self.feature_names))
        self._check()

    def __reduce__(self):
        """Pickle the arrays, not the library model: that is a live Booster or estimator (often
        holding closures), it may run code when unpickled, and an engine never needs it. Witnesses
        are validated in the process that loaded the model (:mod:`veritas_dsl.parallel`). The
        copy is rebuilt through the constructor, so a worker checks the arrays again."""
        state = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "library"}
        return _rebuilt, (type(self), state)

    def __copy__(self) -> Ensemble:
        return self  # immutable (frozen, read-only arrays): a copy keeps its library model

    def __deepcopy__(self, memo) -> Ensemble:
        return self

    def _check(self) -> None:
        """Everything an engine relies on without checking it again: engines index these arrays
        without bounds checks, so a corrupt model file must stop here (a byte-flipped file once
        made the search read out of bounds)."""
        n = len(self.feature)
        if not (len(self.threshold) == len(self.left) == len(self.right) == n):
            raise ModelError("node arrays have different lengths")
        if self.value.ndim != 2 or self.value.shape[0] != n or self.value.shape[1] < 1:
            raise ModelError("value must have shape (n_nodes, n_outputs)")
        if self.base_score.shape != (self.value.shape[1],):
            raise ModelError("base_score must have one entry per output")
        if self.task not in ("regression", "binary", "multiclass"):
            raise ModelError(f"unknown task `{excerpt(self.task)}`")
        if self.task == "binary" and self.n_outputs != 1:
            raise ModelError("a binary model has exactly one output")
        if not math.isfinite(self.class_threshold):
            raise ModelError(f"the class threshold {self.class_threshold} is not finite")
        if self.probability and (self.task != "binary" or self.probability not in _PROBABILITY):
            raise ModelError(f"unknown probability scale `{excerpt(self.probability)}`")
        self._check_names()
        offsets = self.tree_offsets
        check_offsets(offsets, n)
        bad = np.nonzero((self.feature < -1) | (self.feature >= self.n_features))[0]
        if len(bad):
            raise ModelError(
                f"{where(offsets, bad[0])} splits on feature {self.feature[bad[0]]}, but the model "
                f"has {self.n_features} features (feature_names)"
            )
        leaf = self.feature < 0
        check_forest(leaf, self.left, self.right, offsets)
        bad = np.nonzero(~leaf & ~np.isfinite(self.threshold))[0]
        if len(bad):
            raise ModelError(f"{where(offsets, bad[0])} has threshold {self.threshold[bad[0]]}")
        bad = np.nonzero(~np.all(np.isfinite(self.value), axis=1))[0]
        if len(bad):
            raise ModelError(f"{where(offsets, bad[0])} has a leaf value that is not finite")
        bad = np.nonzero(~leaf & np.any(self.value != 0, axis=1))[0]
        if len(bad):
            raise ModelError(f"{where(offsets, bad[0])} is a split with a leaf value")
        if not np.all(np.isfinite(self.base_score)):
            raise ModelError(f"the base score {self.base_score.tolist()} is not finite")
        # Engines add up leaf values in float64: no sum of them may overflow.
        largest = np.maximum.reduceat(np.abs(self.value).max(axis=1), offsets[:-1])
        with np.errstate(over="ignore"):
            reach = np.abs(self.base_score).max() + largest.sum()
        if not np.isfinite(reach):
            raise ModelError("the leaf values are so large that the model's output overflows")
        if self.n_features == 0:  # a model of constant trees; engines and parity need a feature
            raise ModelError("the model has no features (feature_names is empty)")
        if self.fractions is not None:
            self._check_fractions()

    def _check_fractions(self) -> None:
        problem = self.fractions.problem()
        if problem is None and self.fractions.numerator.shape != self.value.shape:
            problem = "there is not one fraction per node and output"
        if problem is None and not np.array_equal(self.fractions.values(), self.value):
            problem = "a value is not its fraction rounded to float64"
        if problem is None and np.any(self.base_score != 0):
            problem = "the base score is not 0"
        if problem is not None:
            raise ModelError(f"leaf fractions: {problem}")

    def _check_names(self) -> None:
        if self.n_features > MAX_FEATURES:
            raise ModelError(f"{self.n_features} features is more than {MAX_FEATURES:,}")
        odd = [name for name in self.feature_names if not isinstance(name, str)]
        if odd:
            raise ModelError(f"feature name `{excerpt(odd[0])}` is not a string")
        seen: set[str] = set()
        for name in self.feature_names:
            if name in seen:
                raise ModelError(f"feature name `{excerpt(name)}` appears twice")
            seen.add(name)

    # -- shape -------------------------------------------------------------------------------

    @property
    def n_trees(self) -> int:
        return len(self.tree_offsets) - 1

    @property
    def n_nodes(self) -> int:
        return len(self.feature)

    @property
    def n_outputs(self) -> int:
        return self.value.shape[1]

    @property
    def n_features(self) -> int:
        return len(self.feature_names)

    @property
    def roots(self) -> np.ndarray:
        """Root node of each tree, int64, shape (n_trees,)."""
        return self.tree_offsets[:-1]

    def is_leaf(self) -> np.ndarray:
        """Boolean mask of the leaves, shape (n_nodes,)."""
        return self.feature < 0

    def node_depth(self) -> np.ndarray:
        """Depth of every node (roots are 0), int32, shape (n_nodes,)."""
        depth = np.zeros(self.n_nodes, dtype=np.int32)
        # Children always come after their parent, so one forward pass suffices.
        for node in np.nonzero(~self.is_leaf())[0]:
            depth[self.left[node]] = depth[self.right[node]] = depth[node] + 1
        return depth

    def tree_depths(self) -> np.ndarray:
        """Depth of each tree (a single leaf has depth 0), shape (n_trees,)."""
        depth = self.node_depth()
        return np.maximum.reduceat(depth, self.tree_offsets[:-1])

    # -- evaluation --------------------------------------------------------------------------

    def leaves(self, X: np.ndarray) -> np.ndarray:
        """The leaf each row of ``X`` reaches in each tree, int64, shape (n, n_trees)."""
        X = as_inputs(X, self.n_features)
        out = np.empty((len(X), self.n_trees), dtype=np.int64)
        for start in range(0, len(X), _EVAL_CHUNK_ROWS):
            out[start : start + _EVAL_CHUNK_ROWS] = self._leaves(
                X[start : start + _EVAL_CHUNK_ROWS]
            )
        return out

    def _leaves(self, X: np.ndarray) -> np.ndarray:
        node = np.broadcast_to(self.roots, (len(X), self.n_trees)).copy()
        rows = np.broadcast_to(np.arange(len(X))[:, None], node.shape)
        active = self.feature[node] >= 0
        while active.any():
            at, r = node[active], rows[active]
            go_left = X[r, self.feature[at]] < self.threshold[at]
            node[active] = np.where(go_left, self.left[at], self.right[at])
            active = self.feature[node] >= 0
        return node

    def eval(self, X: np.ndarray) -> np.ndarray:
        """Raw output (margin) of the ensemble on ``X``: :meth:`outputs_at` its leaves.

        ``X`` is cast to float32 first, as XGBoost does; NaN is refused. Returns shape ``(n,)``
        for one output and ``(n, n_outputs)`` for several.
        """
        total = self.outputs_at(self.leaves(X))
        return total[:, 0] if self.n_outputs == 1 else total

    def outputs_at(self, nodes: np.ndarray) -> np.ndarray:
        """The outputs, shape ``(n, n_outputs)``, where row ``i`` reaches the leaves
        ``nodes[i]`` (one per tree, in tree order): the base score plus the leaf values, added
        in tree order in float64; with :attr:`fractions`, their exact sum rounded once. The
        one rule of docs/semantics.md ("Outputs") that every engine decides outputs by."""
        nodes = np.asarray(nodes, dtype=np.int64).reshape(-1, self.n_trees)
        if self.fractions is not None:
            return self.fractions.sums(nodes)
        total = np.broadcast_to(self.base_score, (len(nodes), self.n_outputs)).copy()
        for t in range(self.n_trees):
            total += self.value[nodes[:, t]]
        return total

    def predict_class(self, X: np.ndarray) -> np.ndarray:
        """Predicted class per row (int64), by the rule of ``task``."""
        return classes_of(self.eval(X), self)

    # -- transformation ----------------------------------------------------------------------

    def reindex(self, feature_names: Sequence[str]) -> Ensemble:
        """The same model over a feature space given by name (a superset, in any order).

        Used when several models share one query: each is re-expressed in the query's columns.
        """
        position = {name: i for i, name in enumerate(feature_names)}
        if len(position) != len(feature_names):
            raise ModelError("feature names are not unique")
        missing = [name for name in self.feature_names if name not in position]
        if missing:
            raise ModelError(f"feature(s) {', '.join(missing)} of {self.source} are not present")
        mapping = np.array([position[name] for name in self.feature_names], dtype=np.int32)
        feature = np.where(self.feature >= 0, mapping[np.maximum(self.feature, 0)], -1)
        library = None
        if self.library is not None:
            library = replace(self.library, columns=mapping[self.library.columns])
        return replace(self, feature=feature, feature_names=tuple(feature_names), library=library)

    # -- persistence -------------------------------------------------------------------------

    def save(self, path: str | Path) -> None:
        """Write the ensemble to a JSON file that :meth:`load` reads back exactly.

        Float32 thresholds are written as the shortest decimal of their float64 value, which
        reads back to the same float32; the write goes to a temporary file first, so a failure
        never leaves a half-written model behind.
        """
        document = {
            "format": FILE_FORMAT,
            "version": FILE_VERSION,
            "feature_names": list(self.feature_names),
            "task": self.task,
            "class_threshold": self.class_threshold,
            "probability": self.probability,
            "source": self.source,
            "base_score": self.base_score.tolist(),
            "tree_offsets": self.tree_offsets.tolist(),
            "feature": self.feature.tolist(),
            "threshold": self.threshold.astype(np.float64).tolist(),
            "left": self.left.tolist(),
            "right": self.right.tolist(),
            "value": self.value.tolist(),
        }
        if self.fractions is not None:
            document["fractions"] = {
                "numerator": self.fractions.numerator.tolist(),
                "denominator": self.fractions.denominator.tolist(),
            }
        path = Path(path)
        partial = path.with_name(path.name + ".partial")
        partial.write_text(json.dumps(document, separators=(",", ":")))
        partial.replace(path)

    @classmethod
    def load(cls, path: str | Path) -> Ensemble:
        """Read a file written by :meth:`save`."""
        path = Path(path)
        try:
            document = json.loads(model_bytes(path, "ensemble").decode("utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
            raise ModelError(f"{path}: cannot read an ensemble file ({error})") from None
        return cls.from_document(document, where=str(path))

    @classmethod
    def from_document(cls, document: object, where: str = "document") -> Ensemble:
        """Build an ensemble from the parsed JSON of :meth:`save`."""
        if not isinstance(document, dict) or document.get("format") != FILE_FORMAT:
            raise ModelError(f"{where}: not a {FILE_FORMAT} file")
        if document.get("version") != FILE_VERSION:
            raise ModelError(f"{where}: unsupported version `{excerpt(document.get('version'))}`")
        missing = [key for key in _DOCUMENT_KEYS if key not in document]
        if missing:
            raise ModelError(f"{where}: the ensemble file lacks `{missing[0]}`")
        names = document["feature_names"]
        if not isinstance(names, list):
            raise ModelError(f"{where}: feature_names is not a list")
        try:
            value = np.asarray(document["value"], dtype=np.float64)
            return cls(
                feature=document["feature"],
                threshold=np.asarray(document["threshold"], dtype=np.float64),
                left=document["left"],
                right=document["right"],
                value=value.reshape(value.shape[0] if value.ndim else 0, -1),
                tree_offsets=document["tree_offsets"],
                base_score=np.asarray(document["base_score"], dtype=np.float64),
                feature_names=tuple(names),
                task=str(document["task"]),
                class_threshold=float(document["class_threshold"]),
                probability=str(document.get("probability", "")),
                source=str(document.get("source", where)),
                fractions=_fractions(document.get("fractions")),
            )
        except ModelError as error:
            raise ModelError(f"{where}: {error}") from None
        except (TypeError, ValueError, OverflowError) as error:
            raise ModelError(f"{where}: malformed ensemble file ({error})") from None

    # -- importers ---------------------------------------------------------------------------

    @classmethod
    def from_xgboost(cls, model: object) -> Ensemble:
        """Import an XGBoost ``Booster``, ``XGBClassifier``/``XGBRegressor``, or model file."""
        from veritas_dsl.model.xgboost import from_xgboost

        return from_xgboost(cls, model)

    @classmethod
    def from_xgboost_dump(
        cls, source, base_score=0.0, n_classes=1, n_features=None, feature_names=None
    ):
        """Import an XGBoost JSON tree dump (see :mod:`veritas_dsl.model.xgboost_dump`)."""
        from veritas_dsl.model.xgboost_dump import from_xgboost_dump

        return from_xgboost_dump(cls, source, base_score, n_classes, n_features, feature_names)

    @classmethod
    def from_sklearn(cls, estimator: object) -> Ensemble:
        """Import a fitted scikit-learn tree, forest or gradient-boosting estimator."""
        from veritas_dsl.model.sklearn import from_sklearn

        return from_sklearn(cls, estimator)

    @classmethod
    def from_lightgbm(cls, model: object) -> Ensemble:
        """Import a LightGBM ``Booster``, ``LGBMModel`` or text model file."""
        from veritas_dsl.model.lightgbm import from_lightgbm

        return from_lightgbm(cls, model)

    @classmethod
    def from_catboost(cls, model: object) -> Ensemble:
        """Import a CatBoost model object, or a file saved with ``save_model(format="json")``."""
        from veritas_dsl.model.catboost import from_catboost

        return from_catboost(cls, model)

    @classmethod
    def from_onnx(cls, model: object) -> Ensemble:
        """Import the tree ensemble of an ONNX ``ModelProto`` or ``.onnx`` file."""
        from veritas_dsl.model.onnx_trees import from_onnx

        return from_onnx(cls, model)


def _as_array(values: object, dtype: type, name: str) -> np.ndarray:
    """``values`` as a contiguous array of ``dtype``; integers must be whole and in range.

    numpy would truncate 1.5 to 1 and wrap 2**40 around; a corrupt model file can hold either.
    """
    try:
        array = np.asarray(values)
        if np.issubdtype(dtype, np.integer) and array.size:
            if array.dtype.kind not in "iuf" or (
                array.dtype.kind == "f"
                and not np.all(np.isfinite(array) & (array == np.round(array)))
            ):
                raise ModelError(f"{name} holds a value that is not a whole number")
            info = np.iinfo(dtype)
            if array.min() < info.min or array.max() > info.max:
                raise ModelError(f"{name} holds a value beyond {np.dtype(dtype).name}")
        with np.errstate(over="ignore"):  # a float32 beyond range is inf, refused by _check
            return np.ascontiguousarray(array, dtype=dtype)
    except (TypeError, ValueError, OverflowError) as error:
        if isinstance(error, ModelError):
            raise
        raise ModelError(f"{name} is not an array of numbers ({error})") from None


def _fractions(document: object) -> LeafFractions | None:
    """The optional ``fractions`` of a saved ensemble (``{"numerator": .., "denominator": ..}``)."""
    if document is None:
        return None
    if not isinstance(document, dict) or {"numerator", "denominator"} - document.keys():
        raise ModelError("fractions needs a numerator and a denominator")
    return LeafFractions(
        _as_array(document["numerator"], np.int64, "numerator"),
        _as_array(document["denominator"], np.int64, "denominator"),
    )


def as_inputs(X: np.ndarray, n_features: int) -> np.ndarray:
    """``X`` as a C-contiguous float32 matrix of ``n_features`` columns; NaN is refused."""
    X = np.asarray(X)
    if X.ndim == 1:
        X = X[None, :]
    if X.ndim != 2 or X.shape[1] != n_features:
        raise ModelError(f"inputs must have shape (n, {n_features}), got {X.shape}")
    X = np.ascontiguousarray(X, dtype=np.float32)
    bad = np.argwhere(np.isnan(X))
    if len(bad):
        row, col = bad[0]
        raise ModelError(f"input row {row}, feature {col} is NaN; missing values are not supported")
    return X


def classes_of(margins: np.ndarray, model: Ensemble) -> np.ndarray:
    """Predicted classes from raw outputs of ``model`` (``(n,)`` or ``(n, n_outputs)``)."""
    if model.task == "binary":
        return (np.asarray(margins) > model.class_threshold).astype(np.int64)
    if model.task == "multiclass":
        return np.argmax(margins, axis=1).astype(np.int64)
    raise ModelError(f"{model.source} is a regression model; it has no classes")


def _rebuilt(cls: type[Ensemble], state: dict) -> Ensemble:
    return cls(**state)
