"""The ONNX side of :mod:`veritas_dsl.model.onnx_trees`: finding the tree-ensemble node in a graph,
reading its attributes (opsets 1-3 and the opset-5 ``TreeEnsemble``) into one vocabulary, and
running it alone in onnxruntime, post transform off, for the raw output."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from veritas_dsl.model.errors import ModelError

_TREE_OPS = ("TreeEnsembleClassifier", "TreeEnsembleRegressor", "TreeEnsemble")
_PASS_THROUGH = ("Cast", "Identity")
_FLOAT, _DOUBLE, _INT64, _STRING = 1, 11, 7, 8
# Opset 5 numbers its enumerations.
_V5_MODES = ("BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ")
_V5_AGGREGATE = ("AVERAGE", "SUM", "MIN", "MAX")
_MAX_NODES = 1 << 26


@dataclass(frozen=True)
class Found:
    """The tree-ensemble node, the element type of its input, and the model's input width (None
    when the graph leaves it open)."""

    node: object  # onnx.NodeProto
    input_type: int
    n_features: int | None


@dataclass(frozen=True)
class Trees:
    """A tree-ensemble node's content in the opset-3 vocabulary, one entry per node or leaf
    weight; ``leaf_*`` give ``(tree, node, output, weight)`` of each weight."""

    tree: np.ndarray
    node: np.ndarray
    feature: np.ndarray
    value: np.ndarray  # float64 thresholds
    mode: list[str]
    true: np.ndarray
    false: np.ndarray
    leaf_tree: np.ndarray
    leaf_node: np.ndarray
    leaf_output: np.ndarray
    leaf_weight: np.ndarray
    base: np.ndarray
    aggregate: str
    labels: tuple | None  # class labels of a classifier, None for a regressor
    n_targets: int


def tree_node(proto) -> Found:
    """The one tree-ensemble node of ``proto``, fed by the graph's input through Cast/Identity."""
    graph = proto.graph
    # Protobuf has no end marker: a file cut after its graph parses, without its opset imports.
    imported = {_domain(o.domain) for o in proto.opset_import}
    missing = sorted({_domain(n.domain) for n in graph.node} - imported)
    if missing:
        raise ModelError(
            f"the graph uses the operator set {missing[0]!r}, which the model does not import "
            "(a file cut short loses its imports)"
        )
    trees = [n for n in graph.node if n.domain == "ai.onnx.ml" and n.op_type in _TREE_OPS]
    if len(trees) != 1:
        raise ModelError(
            f"the graph has {len(trees)} tree-ensemble nodes ({', '.join(_TREE_OPS)}); "
            "exactly one is supported"
        )
    initialised = {i.name for i in graph.initializer}
    inputs = [i for i in graph.input if i.name not in initialised]
    if len(inputs) != 1:
        raise ModelError(
            f"the model has {len(inputs)} inputs; one (a matrix of features) is needed"
        )
    made_by = {out: n for n in graph.node for out in n.output}
    name, kind = trees[0].input[0], None
    while name != inputs[0].name:
        node = made_by.get(name)
        if node is None or node.op_type not in _PASS_THROUGH or node.domain not in ("", "ai.onnx"):
            what = f"{node.op_type} node `{node.name}`" if node is not None else "nothing"
            raise ModelError(
                f"the tree ensemble reads `{name}`, made by {what}; only Cast and Identity may "
                "stand between the model's input and its tree ensemble"
            )
        if node.op_type == "Cast" and kind is None:
            kind = int(_attributes(node)["to"])
        name = node.input[0]
    tensor = inputs[0].type.tensor_type
    kind = kind if kind is not None else tensor.elem_type
    if kind not in (_FLOAT, _DOUBLE) or tensor.elem_type not in (_FLOAT, _DOUBLE):
        raise ModelError("the tree ensemble's input must be float or double")
    dims = tensor.shape.dim
    n_features = dims[1].dim_value if len(dims) == 2 and dims[1].HasField("dim_value") else None
    return Found(trees[0], kind, n_features)


def _domain(name: str) -> str:
    return "ai.onnx" if name in ("", "ai.onnx") else name


def _attributes(node) -> dict:
    from onnx import helper, numpy_helper

    out = {}
    for attribute in node.attribute:
        value = helper.get_attribute_value(attribute)
        if attribute.type == attribute.TENSOR:
            # onnx would read the file it names, relative to the working directory
            if value.data_location == value.EXTERNAL:
                raise ModelError(
                    f"attribute {attribute.name} keeps its data in another file (external "
                    "data); a tree ensemble's attributes must be in the model file"
                )
            value = numpy_helper.to_array(value)
        out[attribute.name] = value
    return out


def read_trees(node) -> Trees:
    """The node's trees as :class:`Trees`."""
    a = _attributes(node)
    if node.op_type == "TreeEnsemble":
        return _read_v5(a)
    classifier = node.op_type == "TreeEnsembleClassifier"
    prefix = "class" if classifier else "target"

    def ints(key: str) -> np.ndarray:
        return np.asarray(a.get(key, []), dtype=np.int64)

    def floats(key: str) -> np.ndarray:
        value = a.get(f"{key}_as_tensor", a.get(key, []))
        return np.asarray(value, dtype=np.float64).reshape(-1)

    n = len(ints("nodes_nodeids"))
    if n > _MAX_NODES:
        raise ModelError(f"{n} nodes is more than {_MAX_NODES:,}")
    columns = {
        "nodes_treeids": ints("nodes_treeids"),
        "nodes_featureids": ints("nodes_featureids"),
        "nodes_values": floats("nodes_values"),
        "nodes_truenodeids": ints("nodes_truenodeids"),
        "nodes_falsenodeids": ints("nodes_falsenodeids"),
        "nodes_modes": a.get("nodes_modes", []),
    }
    short = [key for key, value in columns.items() if len(value) != n]
    if short:
        raise ModelError(f"{short[0]} has {len(columns[short[0]])} entries for {n} nodes")
    weights = [ints(f"{prefix}_treeids"), ints(f"{prefix}_nodeids"), ints(f"{prefix}_ids")]
    weights.append(floats(f"{prefix}_weights"))
    if len({len(w) for w in weights}) != 1:
        raise ModelError(f"the {prefix}_* attributes have different lengths")
    labels = None
    if classifier:
        strings = [_text(s) for s in a.get("classlabels_strings", [])]
        labels = tuple(strings) if strings else tuple(int(v) for v in ints("classlabels_int64s"))
    return Trees(
        tree=columns["nodes_treeids"],
        node=ints("nodes_nodeids"),
        feature=columns["nodes_featureids"],
        value=columns["nodes_values"],
        mode=[_text(m) for m in columns["nodes_modes"]],
        true=columns["nodes_truenodeids"],
        false=columns["nodes_falsenodeids"],
        leaf_tree=weights[0],
        leaf_node=weights[1],
        leaf_output=weights[2],
        leaf_weight=weights[3],
        base=floats("base_values"),
        aggregate=_text(a.get("aggregate_function", "SUM")),
        labels=labels,
        n_targets=int(a.get("n_targets", len(labels) if labels else 1)),
    )


def _read_v5(a: dict) -> Trees:
    """Opset 5 keeps splits and leaves in two arrays and names each tree's root; we number the
    leaves after the splits and find each node's tree by walking down from the roots."""
    features = np.asarray(a.get("nodes_featureids", []), dtype=np.int64)
    n = len(features)
    splits = np.asarray(a.get("nodes_splits", []), dtype=np.float64).reshape(-1)
    modes = np.asarray(a.get("nodes_modes", []), dtype=np.int64).reshape(-1)
    true = np.asarray(a.get("nodes_truenodeids", []), dtype=np.int64)
    false = np.asarray(a.get("nodes_falsenodeids", []), dtype=np.int64)
    true_leaf = np.asarray(a.get("nodes_trueleafs", []), dtype=bool)
    false_leaf = np.asarray(a.get("nodes_falseleafs", []), dtype=bool)
    if any(len(v) != n for v in (splits, modes, true, false, true_leaf, false_leaf)):
        raise ModelError("the nodes_* attributes have different lengths")
    targets = np.asarray(a.get("leaf_targetids", []), dtype=np.int64)
    weights = np.asarray(a.get("leaf_weights", []), dtype=np.float64).reshape(-1)
    if len(targets) != len(weights):
        raise ModelError("leaf_targetids and leaf_weights have different lengths")
    n_leaves = len(weights)
    true_id = np.where(true_leaf, true + n, true)
    false_id = np.where(false_leaf, false + n, false)
    if np.any(
        (true_id < 0) | (true_id >= n + n_leaves) | (false_id < 0) | (false_id >= n + n_leaves)
    ):
        raise ModelError("a split's child is outside the nodes and leaves")
    tree = np.full(n + n_leaves, -1, dtype=np.int64)
    for t, root in enumerate(a.get("tree_roots", [])):
        stack = [int(root)]
        while stack:
            k = stack.pop()
            if not 0 <= k < n + n_leaves or tree[k] >= 0:
                raise ModelError(f"tree {t} reaches node {k} twice, or a node outside the model")
            tree[k] = t
            if k < n:
                stack += [int(true_id[k]), int(false_id[k])]
    if np.any(modes > 3):
        k = int(np.nonzero(modes > 3)[0][0])
        name = _V5_MODES[modes[k]] if modes[k] < len(_V5_MODES) else "BRANCH_MEMBER"
        modes_text = [name if i == k else "BRANCH_LEQ" for i in range(n)]
    else:
        modes_text = [_V5_MODES[m] for m in modes]
    aggregate = int(a.get("aggregate_function", 1))
    reached = tree >= 0
    node_ids = np.arange(n + n_leaves)
    return Trees(
        tree=tree[reached],
        node=node_ids[reached],
        feature=np.concatenate([features, np.zeros(n_leaves, dtype=np.int64)])[reached],
        value=np.concatenate([splits, np.zeros(n_leaves)])[reached],
        mode=[m for m, r in zip(modes_text + ["LEAF"] * n_leaves, reached, strict=True) if r],
        true=np.concatenate([true_id, np.zeros(n_leaves, dtype=np.int64)])[reached],
        false=np.concatenate([false_id, np.zeros(n_leaves, dtype=np.int64)])[reached],
        leaf_tree=tree[n:],
        leaf_node=np.arange(n, n + n_leaves),
        leaf_output=targets,
        leaf_weight=weights,
        base=np.zeros(0),
        aggregate=_V5_AGGREGATE[aggregate] if 0 <= aggregate < 4 else str(aggregate),
        labels=None,
        n_targets=int(a.get("n_targets", 1)),
    )


def _text(value) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def raw_runner(
    proto, found: Found, classifier: bool, n_features: int
) -> Callable[[np.ndarray], np.ndarray] | None:
    """The node's raw output computed by onnxruntime (None when it is not installed): the node
    alone in a graph, its post transform set to none. It runs once here, on zeros, so that a node
    onnxruntime cannot evaluate is refused now rather than when a witness is checked."""
    try:
        import onnxruntime
    except ImportError:
        return None
    from onnx import TensorProto, helper

    node = found.node
    attributes = [a for a in node.attribute if a.name != "post_transform"]
    if node.op_type == "TreeEnsemble":
        attributes.append(helper.make_attribute("post_transform", 0))
        outputs = [helper.make_tensor_value_info("Y", found.input_type, None)]
    else:
        attributes.append(helper.make_attribute("post_transform", "NONE"))
        outputs = [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)]
        if classifier:
            strings = any(a.name == "classlabels_strings" for a in node.attribute)
            label = helper.make_tensor_value_info("label", _STRING if strings else _INT64, None)
            outputs = [label, outputs[0]]
    alone = helper.make_node(
        node.op_type, ["X"], [o.name for o in outputs], domain="ai.onnx.ml", name="trees"
    )
    alone.attribute.extend(attributes)
    graph = helper.make_graph(
        [alone],
        "trees",
        [helper.make_tensor_value_info("X", found.input_type, [None, None])],
        outputs,
    )
    model = helper.make_model(graph, opset_imports=list(proto.opset_import))
    model.ir_version = proto.ir_version
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3  # errors only: engines never print
    try:
        session = onnxruntime.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
    except Exception as error:  # onnxruntime's own exceptions, on a model it refuses
        raise ModelError(f"onnxruntime cannot run the tree ensemble ({error})") from None
    dtype = np.float64 if found.input_type == _DOUBLE else np.float32
    score = outputs[-1].name

    def raw(X: np.ndarray) -> np.ndarray:
        (Z,) = session.run([score], {"X": np.ascontiguousarray(X, dtype=dtype)})
        Z = np.asarray(Z, dtype=np.float64)
        if classifier:
            return Z[:, 1] if Z.shape[1] == 2 else Z
        return Z[:, 0]

    try:
        raw(np.zeros((1, n_features), dtype=np.float32))
    except Exception as error:  # onnxruntime's own exceptions
        raise ModelError(f"onnxruntime cannot run the tree ensemble ({error})") from None
    return raw
