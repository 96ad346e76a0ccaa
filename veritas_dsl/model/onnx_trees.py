"""Import ONNX tree ensembles: ``ai.onnx.ml`` ``TreeEnsembleClassifier``/``TreeEnsembleRegressor``
(opsets 1-3) and ``TreeEnsemble`` (opset 5).

The graph must hold exactly one tree-ensemble node fed by the model's one input, through nothing
but ``Cast`` and ``Identity``; what comes after it (``ZipMap``, a ``Cast`` of the label) does not
change the margin. ``onnxruntime`` compares the input with the node's thresholds, float32
attributes (or ``*_as_tensor`` doubles), in the input's type; each branch mode becomes our
``x < s`` with the children in the right order: ``LEQ`` (``s`` the float32 after the largest
float32 not above ``t``), ``LT`` (``s`` the smallest float32 not below ``t``), and ``GTE``/``GT``
as ``LT``/``LEQ`` with the children swapped. ``EQ``/``NEQ`` and set membership are refused.
These are the ONNX model's thresholds: a converter rounds a library's float64 thresholds to
float32, so near a threshold the ONNX model can differ from the library it was converted from; we
verify the ONNX model.

The raw output is the node's score before its post transform (which never changes the predicted
label): for a regressor, the sum (``SUM``) or mean (``AVERAGE``; ``MIN``/``MAX`` are refused) of
the trees plus the base values. For a classifier, as onnxruntime decides labels: with more than two
classes one score per class (sum plus base value), the label being the first largest; with two,
the score of the positive class, which wins above 0.5 when the weights are all one class's and
non-negative (a forest's probabilities) and above 0 otherwise.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from veritas_dsl.model import onnx_graph
from veritas_dsl.model.errors import ModelError
from veritas_dsl.model.forest import parent_first_order, reorder
from veritas_dsl.model.library import LibraryModel, Task, le_threshold_as_lt, leaf_table
from veritas_dsl.model.limits import model_bytes
from veritas_dsl.model.onnx_graph import Trees

if TYPE_CHECKING:
    from veritas_dsl.model.ensemble import Ensemble

_LEQ, _LT, _GTE, _GT = "BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT"
_SUPPORTED_MODES = (_LEQ, _LT, _GTE, _GT)


def from_onnx(cls: type[Ensemble], model: object) -> Ensemble:
    """Import the tree ensemble of an ONNX model (a ``ModelProto`` or the path of a file)."""
    try:
        import onnx
    except ImportError:
        raise ModelError("onnx is not installed (pip install 'veritas-dsl[onnx]')") from None

    if isinstance(model, (str, os.PathLike)):
        path = Path(model)
        where = str(path)
        data = model_bytes(path, "onnx")
        try:
            proto = onnx.load_model_from_string(data)
        except Exception as error:  # DecodeError and others on a file that is not ONNX
            raise ModelError(f"{path}: not an ONNX model ({error})") from None
    elif isinstance(model, onnx.ModelProto):
        proto, where = model, "ModelProto"
    else:
        raise ModelError(f"expected an ONNX ModelProto or model path, got {type(model)}")
    try:
        found = onnx_graph.tree_node(proto)
        trees = onnx_graph.read_trees(found.node)
        ensemble = _ensemble(cls, trees, found.n_features, f"onnx {found.node.op_type} ({where})")
        raw = onnx_graph.raw_runner(proto, found, trees.labels is not None, ensemble.n_features)
    except ModelError as error:
        raise ModelError(f"{where}: {error}") from None
    except (TypeError, ValueError, KeyError, IndexError, AttributeError, OverflowError) as error:
        # a protobuf that parses can still hold attributes of the wrong kind or odd text
        raise ModelError(f"{where}: malformed tree ensemble ({error!r})") from None
    if raw is None:  # without onnxruntime, witnesses are checked on the Ensemble alone
        return ensemble
    return replace(
        ensemble, library=LibraryModel("onnxruntime", raw, np.arange(ensemble.n_features))
    )


def _ensemble(cls: type[Ensemble], trees: Trees, n_features: int | None, source: str) -> Ensemble:
    task, n_outputs, column, base, class_threshold = _outputs(trees)
    tree_ids = np.unique(trees.tree)
    if len(tree_ids) == 0:
        raise ModelError("the ensemble has no trees")
    features = n_features if n_features is not None else int(trees.feature.max(initial=0)) + 1

    order = _root_first_order(trees)
    tree, node = trees.tree[order], trees.node[order]
    modes = [trees.mode[i] for i in order]
    leaf = np.array([m == "LEAF" for m in modes], dtype=bool)
    odd = [(i, m) for i, m in enumerate(modes) if m != "LEAF" and m not in _SUPPORTED_MODES]
    if odd:
        i, m = odd[0]
        raise ModelError(
            f"tree {tree[i]}, node {node[i]} has mode {m}; supported are "
            f"{', '.join(_SUPPORTED_MODES)} (equality and membership splits are not)"
        )
    offsets = np.concatenate([[0], np.cumsum(np.unique(tree, return_counts=True)[1])])
    position = {(int(t), int(n)): i for i, (t, n) in enumerate(zip(tree, node, strict=True))}

    def target(ids: np.ndarray, side: str) -> np.ndarray:
        out = np.full(len(order), -1, dtype=np.int64)
        for i in np.nonzero(~leaf)[0]:
            key = (int(tree[i]), int(ids[i]))
            if key not in position:
                raise ModelError(
                    f"tree {tree[i]}, node {node[i]}: its {side} node {ids[i]} does not exist"
                )
            out[i] = position[key]
        return out

    true, false = target(trees.true[order], "true"), target(trees.false[order], "false")
    t = trees.value[order]
    lower_is_true = np.array([m in (_LEQ, _LT) for m in modes])
    inclusive = np.array([m in (_LEQ, _GT) for m in modes])  # x <= t decides the branch
    threshold = np.where(inclusive, le_threshold_as_lt(t), _lt_threshold(t))
    threshold[leaf] = 0
    left = np.where(leaf, -1, np.where(lower_is_true, true, false))
    right = np.where(leaf, -1, np.where(lower_is_true, false, true))
    feature = np.where(leaf, -1, trees.feature[order])
    bad = np.nonzero(~leaf & ((feature < 0) | (feature >= features)))[0]
    if len(bad):
        i = bad[0]
        raise ModelError(
            f"tree {tree[i]}, node {node[i]} splits on feature {feature[i]} of {features}"
        )

    value = _leaf_values(trees, position, leaf, column, n_outputs)
    if trees.aggregate == "AVERAGE":
        value /= len(tree_ids)

    try:
        kept = parent_first_order(left, right, offsets)
    except ModelError as error:
        raise ModelError(f"{error} (trees counted in order of their ids)") from None
    left, right, offsets = reorder(kept, left, right, offsets)
    return cls(
        feature=feature[kept],
        threshold=threshold[kept],
        left=left,
        right=right,
        value=value[kept],
        tree_offsets=offsets,
        base_score=base,
        feature_names=tuple(f"f{i}" for i in range(features)),
        task=task,
        class_threshold=class_threshold,
        source=source,
    )


def _root_first_order(trees: Trees) -> np.ndarray:
    """The nodes grouped by tree, each tree's root (the node no other names as a child) first."""
    inner = np.array([m != "LEAF" for m in trees.mode], dtype=bool)
    children = {(int(t), int(c)) for t, c in zip(trees.tree[inner], trees.true[inner], strict=True)}
    children |= {
        (int(t), int(c)) for t, c in zip(trees.tree[inner], trees.false[inner], strict=True)
    }
    child = np.array(
        [(int(t), int(n)) in children for t, n in zip(trees.tree, trees.node, strict=True)]
    )
    by_id = np.lexsort((trees.node, trees.tree))
    tree, node = trees.tree[by_id], trees.node[by_id]
    twice = np.nonzero((np.diff(tree) == 0) & (np.diff(node) == 0))[0]
    if len(twice):
        raise ModelError(f"tree {tree[twice[0]]}: node id {node[twice[0]]} appears twice")
    return np.lexsort((trees.node, child, trees.tree))


def _leaf_values(
    trees: Trees, position: dict, leaf: np.ndarray, column: np.ndarray, n_outputs: int
):
    """Each node's values (the weights given for it, added up), one column per output."""
    value = leaf_table(len(leaf), n_outputs, "the tree ensemble")
    for t_id, n_id, out, w in zip(
        trees.leaf_tree, trees.leaf_node, trees.leaf_output, trees.leaf_weight, strict=True
    ):
        i = position.get((int(t_id), int(n_id)))
        if i is None or not leaf[i]:
            what = "no node" if i is None else "not a leaf"
            raise ModelError(f"a weight is given for tree {t_id}, node {n_id}, which is {what}")
        if column[int(out)] >= 0:
            value[i, column[int(out)]] += w
    return value


def _lt_threshold(t: np.ndarray) -> np.ndarray:
    """float32 ``s`` with ``x < s`` exactly when ``x < t``, for every float32 ``x``: the smallest
    float32 not below ``t``."""
    t = np.asarray(t, dtype=np.float64)
    with np.errstate(over="ignore"):
        s = t.astype(np.float32)
    below = s.astype(np.float64) < t
    s[below] = np.nextafter(s[below], np.float32(np.inf))
    return s


def _outputs(trees: Trees) -> tuple[Task, int, np.ndarray, np.ndarray, float]:
    """Task, number of outputs, the output column of each weight id (-1: ignored), the base score
    and the binary class threshold, as onnxruntime scores and labels (see the module doc)."""
    # Checked before anything is sized by it: a few bytes can say n_targets = 10**13.
    if trees.labels is None and trees.n_targets != 1:
        raise ModelError(f"the regressor has {trees.n_targets} targets; only one is supported")
    if trees.labels is not None and trees.n_targets > len(trees.labels):
        raise ModelError(
            f"the classifier has {trees.n_targets} targets for {len(trees.labels)} class labels"
        )
    outputs = np.unique(trees.leaf_output)
    if len(outputs) and (outputs.min() < 0 or outputs.max() >= max(trees.n_targets, 1)):
        raise ModelError(f"a weight is for output {outputs.max()} of {trees.n_targets}")
    column = np.full(max(trees.n_targets, 1), -1, dtype=np.int64)
    base = trees.base
    if trees.labels is None:
        if trees.aggregate not in ("SUM", "AVERAGE"):
            raise ModelError(
                f"aggregate_function {trees.aggregate} is not supported (only SUM and AVERAGE)"
            )
        column[0] = 0
        return "regression", 1, column, _base(base, 1), 0.0
    n = len(trees.labels)
    if n < 2:
        raise ModelError(f"the classifier has {n} class label(s); it has nothing to verify")
    if n > 2:
        missing = sorted(set(range(n)) - set(outputs.tolist()))
        if missing and len(base) == 0:
            raise ModelError(
                f"class {trees.labels[missing[0]]!r} has no weights and no base value; "
                "onnxruntime never predicts it"
            )
        column[:] = np.arange(n)
        return "multiclass", n, column, _base(base, n), 0.0
    if len(outputs) == 1 and outputs[0] == 0 and len(base) <= 1:
        # one weight column: its score is class 1's; a probability wins above one half
        column[0] = 0
        positive = bool(np.all(trees.leaf_weight >= 0))
        start = base[:1] if len(base) else np.zeros(1)
        return "binary", 1, column, start, 0.5 if positive else 0.0
    if set(outputs.tolist()) == {0, 1} and len(base) <= 1:
        column[1] = 0  # onnxruntime decides on class 1's score alone
        return "binary", 1, column, np.zeros(1), 0.0
    raise ModelError(
        f"two classes with weights for class(es) {outputs.tolist()} and {len(base)} base values: "
        "onnxruntime's reading of this is not defined by ONNX; it is not supported"
    )


def _base(base: np.ndarray, n: int) -> np.ndarray:
    if len(base) == 0:
        return np.zeros(n)
    if len(base) != n:
        raise ModelError(f"{len(base)} base values for {n} outputs")
    return base
