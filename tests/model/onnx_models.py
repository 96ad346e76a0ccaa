"""Small ONNX tree models for the importer tests: made by skl2onnx, onnxmltools and CatBoost, and
rewritten by hand (branch modes, aggregates, the opset-5 TreeEnsemble)."""

from __future__ import annotations

import warnings

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(29)
X = (RNG.normal(size=(200, 3)) * np.array([1.0, 50.0, 0.01])).astype(np.float32)
Z = X / np.array([1.0, 50.0, 0.01], dtype=np.float32)
TARGETS = {
    "binary": (Z[:, 0] + Z[:, 1] > 0).astype(int),
    "multiclass": np.digitize(Z[:, 0] - Z[:, 2], [-0.6, 0.6]),
    "regression": Z[:, 0] * 2 + Z[:, 1] * Z[:, 2],
}


def _skl2onnx(estimator) -> onnx.ModelProto:
    import skl2onnx.common.tree_ensemble as tree_ensemble
    from skl2onnx import to_onnx

    add_node = tree_ensemble.add_node

    def whole_missing_flags(*args, nodes_missing_value_tracks_true=0, **kwargs):
        # skl2onnx passes a Python bool for HistGradientBoosting leaves; onnx>=1.17 refuses it
        flag = int(nodes_missing_value_tracks_true)
        return add_node(*args, nodes_missing_value_tracks_true=flag, **kwargs)

    options = {id(estimator): {"zipmap": False}} if hasattr(estimator, "predict_proba") else None
    tree_ensemble.add_node = whole_missing_flags
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return to_onnx(
                estimator, X[:1], options=options, target_opset={"": 17, "ai.onnx.ml": 3}
            )
    finally:
        tree_ensemble.add_node = add_node


def sklearn_model(kind: str, task: str) -> onnx.ModelProto:
    from sklearn import ensemble

    classes = {
        "RandomForest": (ensemble.RandomForestClassifier, ensemble.RandomForestRegressor),
        "GradientBoosting": (
            ensemble.GradientBoostingClassifier,
            ensemble.GradientBoostingRegressor,
        ),
        "HistGradientBoosting": (
            ensemble.HistGradientBoostingClassifier,
            ensemble.HistGradientBoostingRegressor,
        ),
    }[kind]
    size = {"max_iter": 3} if kind.startswith("Hist") else {"n_estimators": 3}
    estimator = classes[task == "regression"](max_depth=3, random_state=0, **size)
    return _skl2onnx(estimator.fit(X, TARGETS[task]))


def onnxmltools_model(kind: str, task: str) -> onnx.ModelProto:
    from onnxmltools import convert_lightgbm, convert_xgboost
    from onnxmltools.convert.common.data_types import FloatTensorType

    types = [("input", FloatTensorType([None, X.shape[1]]))]
    if kind == "XGBoost":
        import xgboost

        kind_ = xgboost.XGBRegressor if task == "regression" else xgboost.XGBClassifier
        fitted = kind_(n_estimators=3, max_depth=2).fit(X, TARGETS[task])
        return convert_xgboost(fitted, initial_types=types, target_opset=15)
    import lightgbm

    kind_ = lightgbm.LGBMRegressor if task == "regression" else lightgbm.LGBMClassifier
    fitted = kind_(n_estimators=3, num_leaves=4, verbose=-1).fit(X, TARGETS[task])
    return convert_lightgbm(fitted, initial_types=types, target_opset=15, zipmap=False)


def catboost_model(task: str, folder) -> onnx.ModelProto:
    import catboost

    if task == "regression":
        fitted = catboost.CatBoostRegressor(iterations=3, depth=2, verbose=0)
    else:
        loss = "Logloss" if task == "binary" else "MultiClass"
        fitted = catboost.CatBoostClassifier(iterations=3, depth=2, verbose=0, loss_function=loss)
    fitted.set_params(allow_writing_files=False, thread_count=1, random_seed=0)
    fitted.fit(X, TARGETS[task])
    path = folder / f"catboost-{task}.onnx"
    fitted.save_model(str(path), format="onnx")
    return onnx.load(path)


def attributes(node) -> dict:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def with_attributes(model: onnx.ModelProto, **changes) -> onnx.ModelProto:
    """A copy of ``model`` whose tree node has the attributes ``changes`` (lists or tensors)."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    node = next(n for n in copy.graph.node if n.op_type.startswith("TreeEnsemble"))
    kept = [a for a in node.attribute if a.name not in changes]
    del node.attribute[:]
    node.attribute.extend(kept)
    for name, value in changes.items():
        node.attribute.append(helper.make_attribute(name, value))
    return copy


def thresholds(model: onnx.ModelProto) -> list[tuple[int, float]]:
    """(feature, threshold) of every split of a model's (opset 1-3) tree node."""
    node = next(n for n in model.graph.node if n.op_type.startswith("TreeEnsemble"))
    a = attributes(node)
    return [
        (int(f), float(t))
        for f, t, m in zip(a["nodes_featureids"], a["nodes_values"], a["nodes_modes"], strict=True)
        if m != b"LEAF"
    ]


def as_tree_ensemble_v5(model: onnx.ModelProto) -> onnx.ModelProto:
    """A one-target TreeEnsembleRegressor (opset 1-3, SUM) rewritten as an opset-5 TreeEnsemble."""
    a = attributes(model.graph.node[0])
    tree, node = np.array(a["nodes_treeids"]), np.array(a["nodes_nodeids"])
    modes = [m.decode() for m in a["nodes_modes"]]
    inner = [i for i, m in enumerate(modes) if m != "LEAF"]
    leaves = [i for i, m in enumerate(modes) if m == "LEAF"]
    at_inner = {(tree[i], node[i]): k for k, i in enumerate(inner)}
    at_leaf = {(tree[i], node[i]): k for k, i in enumerate(leaves)}

    def refer(t, child):
        return (at_inner[t, child], 0) if (t, child) in at_inner else (at_leaf[t, child], 1)

    true = [refer(tree[i], a["nodes_truenodeids"][i]) for i in inner]
    false = [refer(tree[i], a["nodes_falsenodeids"][i]) for i in inner]
    weights = np.zeros(len(leaves), dtype=np.float32)
    for t, n, w in zip(a["target_treeids"], a["target_nodeids"], a["target_weights"], strict=True):
        weights[at_leaf[t, n]] += w
    codes = {"BRANCH_LEQ": 0, "BRANCH_LT": 1, "BRANCH_GTE": 2, "BRANCH_GT": 3}
    trees = helper.make_node(
        "TreeEnsemble",
        ["X"],
        ["Y"],
        domain="ai.onnx.ml",
        nodes_featureids=[a["nodes_featureids"][i] for i in inner],
        nodes_splits=numpy_helper.from_array(
            np.array([a["nodes_values"][i] for i in inner], dtype=np.float32)
        ),
        nodes_modes=numpy_helper.from_array(
            np.array([codes[modes[i]] for i in inner], dtype=np.uint8)
        ),
        nodes_truenodeids=[k for k, _ in true],
        nodes_trueleafs=[leaf for _, leaf in true],
        nodes_falsenodeids=[k for k, _ in false],
        nodes_falseleafs=[leaf for _, leaf in false],
        leaf_targetids=[0] * len(leaves),
        leaf_weights=numpy_helper.from_array(weights),
        tree_roots=[at_inner[t, 0] for t in sorted(set(tree))],
        aggregate_function=1,
        post_transform=0,
        n_targets=1,
    )
    graph = helper.make_graph(
        [trees],
        "v5",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, X.shape[1]])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [None, 1])],
    )
    opsets = [helper.make_opsetid("", 21), helper.make_opsetid("ai.onnx.ml", 5)]
    return helper.make_model(graph, opset_imports=opsets)


def ort_outputs(model: onnx.ModelProto, P: np.ndarray) -> list[np.ndarray]:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    return session.run(None, {session.get_inputs()[0].name: P})
