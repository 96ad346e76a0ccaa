"""Import XGBoost models (``Booster``, ``XGBClassifier``/``XGBRegressor``, JSON or UBJSON files).

Thresholds and leaf values must be the exact float32 values XGBoost compares and adds. A model
file is parsed once: its document gives them, XGBoost loads the same bytes, and its serialisation
confirms them (else, rarely, it is decoded and gives them). A booster in memory is read from its
UBJSON serialisation, which holds them in binary. XGBoost's
split rule (``x < t`` goes left) is ours, so thresholds need no conversion.

A model file is loaded, written back and evaluated by XGBoost's library without its Python
package (:mod:`.xgboost_library`, which says why); a booster in memory comes with the package.
XGBoost is optional (the ``xgboost`` extra): without it a model file is read alone, its numbers
rounded to float32 as XGBoost rounds them, and it has no library model, so witnesses are checked
on the Ensemble (README, "XGBoost without XGBoost").
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from veritas_dsl.inputs import excerpt
from veritas_dsl.model import ubjson, xgboost_document, xgboost_library
from veritas_dsl.model.errors import ModelError
from veritas_dsl.model.forest import parent_first_order, reorder
from veritas_dsl.model.library import LibraryModel, Task, leaf_table
from veritas_dsl.model.limits import model_bytes
from veritas_dsl.model.xgboost_library import Booster, XGBoostLibraryError

if TYPE_CHECKING:
    from veritas_dsl.model.ensemble import Ensemble

# How XGBoost turns the stored base score into a margin, per objective (it stores the base score in
# the space of the prediction: a probability for logistic objectives, a mean count for Poisson).
_LINK: dict[str, str] = {
    "binary:logistic": "logit",
    "reg:logistic": "logit",
    "count:poisson": "log",
    "reg:gamma": "log",
    "reg:tweedie": "log",
    "survival:cox": "log",
    "binary:logitraw": "identity",
    "binary:hinge": "identity",
    "multi:softprob": "identity",
    "multi:softmax": "identity",
    "reg:squarederror": "identity",
    "reg:squaredlogerror": "identity",
    "reg:absoluteerror": "identity",
    "reg:pseudohubererror": "identity",
    "reg:quantileerror": "identity",
    "rank:ndcg": "identity",
    "rank:pairwise": "identity",
    "rank:map": "identity",
}

_TASK: dict[str, Task] = {
    "binary:logistic": "binary",
    "binary:logitraw": "binary",
    "binary:hinge": "binary",
    "multi:softprob": "multiclass",
    "multi:softmax": "multiclass",
}

SUPPORTED_OBJECTIVES = tuple(sorted(_LINK))


def from_xgboost(cls: type[Ensemble], model: object) -> Ensemble:
    """Import an XGBoost model as a ``cls``.

    Parameters
    ----------
    model : xgboost.Booster, xgboost.XGBModel, str or os.PathLike
        A booster, a scikit-learn wrapper (its ``best_iteration`` is honoured, as its ``predict``
        does), or the path of a model file in XGBoost's JSON or UBJSON format.
    """
    if isinstance(model, (str, os.PathLike)):
        return from_file(cls, Path(model))
    try:
        import xgboost
    except ImportError:
        raise ModelError(
            f"expected an XGBoost Booster, XGBModel or model path, got {type(model)} (and "
            f"XGBoost is not installed: {xgboost_library.INSTALL})"
        ) from None
    rounds = None
    if isinstance(model, xgboost.XGBModel):
        if not (isinstance(model.missing, float) and math.isnan(model.missing)):
            raise ModelError(
                f"XGBoost model treats {model.missing!r} as missing; only NaN as missing is "
                "supported"
            )
        booster = model.get_booster()
        best = booster.attr("best_iteration")
        rounds = int(best) + 1 if best is not None else None
        where = type(model).__name__
    elif isinstance(model, xgboost.Booster):
        booster = model
        where = "Booster"
    else:
        raise ModelError(f"expected an XGBoost Booster, XGBModel or model path, got {type(model)}")
    try:
        raw = bytes(booster.save_raw(raw_format="ubj"))
    except xgboost.core.XGBoostError as error:
        raise ModelError(f"{where}: XGBoost cannot write this model ({error})") from None
    # Our own booster of its bytes: the library model must stay the one imported, whatever the
    # caller does to theirs.
    library = _call_xgboost(lambda: Booster(raw), where)
    document = _written_by(library, where)
    trees = xgboost_document.forest(document, where)
    return _from_document(cls, document, trees, library, rounds, where)


def from_file(cls: type[Ensemble], path: Path, data: bytes | None = None) -> Ensemble:
    """Import the model file at ``path`` (whose bytes are ``data`` when the caller read them).

    The document is checked before XGBoost loads the same bytes: its loader crashes on some
    corrupt documents. Without XGBoost the document alone is the model.
    """
    if data is None:
        data = model_bytes(path, "xgboost")
    where = str(path)
    document, trees = xgboost_document.load(data, path)
    if not xgboost_library.installed():
        return _from_document(cls, document, trees, None, None, where)
    booster = _call_xgboost(lambda: Booster(data), where)
    if not _holds(booster, document, trees, where):
        document = _written_by(booster, where)
        trees = xgboost_document.forest(document, where)
    return _from_document(cls, document, trees, booster, None, where)


def _holds(booster: Booster, document: dict, trees: xgboost_document.Forest, where: str) -> bool:
    """Whether the thresholds, leaf values and base score read from the file are the float32s
    ``booster`` holds. A JSON file's numbers are decimal text, which XGBoost rounds to float32
    once and Python through float64: one float32 step apart near a midpoint between two. Its
    serialisation is searched, not decoded (3 ms of C and regex for 200 trees)."""
    raw = _call_xgboost(booster.save_ubj, where)
    written = xgboost_document.written_numbers(raw, len(trees.tree_offsets) - 1)
    if written is None:
        return False
    conditions, base = written
    params = document["learner"]["learner_model_param"]
    ours = xgboost_document.base_values(params.get("base_score"))
    theirs = xgboost_document.base_values(base)
    same = (
        ours is not None
        and theirs is not None
        and np.array_equal(ours.view(np.uint32), theirs.view(np.uint32))
    )
    return same and np.array_equal(conditions.view(np.uint32), trees.condition.view(np.uint32))


def _written_by(booster: Booster, where: str) -> object:
    """The document of ``booster`` as XGBoost serialises it in UBJSON."""
    raw = _call_xgboost(booster.save_ubj, where)
    try:
        return ubjson.loads(raw)
    except ubjson.UBJSONError as error:
        raise ModelError(f"{where}: cannot read the model XGBoost wrote ({error})") from None


def _call_xgboost(call, where: str):
    """``call()``, with XGBoost's errors as :class:`ModelError`."""
    try:
        return call()
    except XGBoostLibraryError as error:
        lines = str(error).strip().splitlines() or ["unknown error"]
        # Drop XGBoost's "[time] source/file.h:88: " prefix; users need the reason, not our build.
        reason = re.sub(r"^\[[^\]]*\]\s*\S+:\d+:\s*", "", lines[0])
        raise ModelError(f"{where}: XGBoost cannot load this model ({reason})") from None
    except UnicodeDecodeError:
        # XGBoost quotes the file in its message, and decoding that message fails on binary data.
        raise ModelError(f"{where}: XGBoost cannot load this model") from None


def _from_document(
    cls: type[Ensemble],
    document: object,
    trees: xgboost_document.Forest,
    booster: Booster | None,
    rounds: int | None,
    where: str,
) -> Ensemble:
    """The Ensemble of ``document`` (whose checked ``trees`` are given), with ``booster``, ours
    alone from now on, as its library model (None: XGBoost is not installed)."""
    learner = document["learner"]
    objective = learner.get("objective")
    objective = objective.get("name") if isinstance(objective, dict) else None
    if objective not in _LINK:
        raise ModelError(
            f"{where}: objective {objective!r} is not supported; supported objectives are "
            + ", ".join(SUPPORTED_OBJECTIVES)
        )
    params = learner["learner_model_param"]
    names = learner.get("feature_names", [])
    feature_names = tuple(names) if names else tuple(f"f{i}" for i in range(trees.n_features))
    n_outputs = max(trees.n_classes, 1)

    offsets, tree_info = trees.tree_offsets, trees.tree_info
    if rounds is not None:
        indptr = trees.iteration_indptr
        if indptr is None:
            raise ModelError(f"{where}: the model does not record its iterations")
        n_kept = int(indptr[min(rounds, len(indptr) - 1)])
        offsets, tree_info = offsets[: n_kept + 1], tree_info[:n_kept]
    n_nodes = int(offsets[-1])
    # Pruned trees keep deleted nodes that nothing reaches; they are dropped here.
    left, right = trees.left[:n_nodes], trees.right[:n_nodes]
    order = parent_first_order(left, right, offsets)
    left, right, new_offsets = reorder(order, left, right, offsets)
    leaf = left < 0
    condition = trees.condition[:n_nodes][order]
    value = leaf_table(len(order), n_outputs, where)
    target = np.repeat(tree_info, np.diff(new_offsets))
    value[leaf, target[leaf]] = condition[leaf]

    base = _base_margin(params.get("base_score"), objective, n_outputs, where)
    library = None
    if booster is not None:
        library = _library_model(booster, len(feature_names), n_outputs, rounds)
    try:
        return cls(
            feature=np.where(leaf, -1, trees.feature[:n_nodes][order]),
            threshold=np.where(leaf, np.float32(0), condition),
            left=left,
            right=right,
            value=value,
            tree_offsets=new_offsets,
            base_score=base,
            feature_names=feature_names,
            task=_TASK.get(objective, "regression"),
            class_threshold=0.0,
            probability="logistic" if objective == "binary:logistic" else "",
            source=f"xgboost {objective} ({where})",
            library=library,
        )
    except ModelError as error:
        raise ModelError(f"{where}: {error}") from None


def _base_margin(text: object, objective: str, n_outputs: int, where: str) -> np.ndarray:
    """Parse XGBoost's base score (``"5E-1"`` or ``"[1E-1,2E-1]"``) and map it to margin space."""
    parsed = xgboost_document.base_values(text)
    if parsed is None:
        raise ModelError(f"{where}: base score `{excerpt(text)}` is not a number")
    values = [float(v) for v in parsed]
    if len(values) == 1:
        values = values * n_outputs
    if len(values) != n_outputs:
        raise ModelError(f"{where}: base score `{excerpt(text)}` does not have {n_outputs} entries")
    link = _LINK[objective]
    if link == "logit":
        return np.array([logit(v) for v in values])
    if link == "log":
        if min(values) <= 0:
            raise ModelError(
                f"{where}: base score `{excerpt(text)}` must be positive for {objective}"
            )
        return np.log(values)
    return np.array(values)


#: Predictions on more rows than this use all of XGBoost's threads.
ONE_THREAD_ROWS = 64


def _library_model(booster: Booster, n_features: int, n_outputs: int, rounds: int | None):
    """The library model predicting with ``booster``, which nothing else holds. Its parameters
    are set here, before anything predicts: predicting is thread-safe, setting them is not."""
    # Witnesses are a few rows: on a busy machine, XGBoost's threads made a one-row predict take
    # 10-40 ms, against 1 ms on one thread (the sums are the same: trees in order).
    booster.set_param("nthread", 1)
    threaded = []  # a copy on every thread for many rows (a parity check), made on first use

    def raw_margin(X: np.ndarray) -> np.ndarray:
        model, threads = booster, 1
        if len(X) > ONE_THREAD_ROWS:
            if not threaded:
                threaded.append(booster.copy())  # its nthread left at 0: every thread
            model, threads = threaded[0], 0
        margin = model.margins(X, rounds or 0, threads)
        return margin.reshape(len(X), n_outputs) if n_outputs > 1 else margin.reshape(len(X))

    return LibraryModel("xgboost", raw_margin, np.arange(n_features))


def logit(p: float) -> float:
    """The margin of a probability, as XGBoost turns a logistic base score into one."""
    if not 0.0 < p < 1.0:
        raise ModelError(f"a logistic base score must lie strictly between 0 and 1, got {p}")
    return math.log(p / (1.0 - p))
