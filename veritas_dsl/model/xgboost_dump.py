"""Import XGBoost JSON tree dumps (``Booster.dump_model(path, dump_format="json")``).

Much of the robustness literature ships its models only in this form. A dump is a JSON array of
trees; a node has ``nodeid``, ``split`` (``"f7"``, ``7`` or a feature name), ``split_condition``,
``yes`` (taken when ``x < split_condition``), ``no``, ``missing`` and ``children``; a leaf has
``leaf``. Numbers are decimal text, parsed straight to the float32 XGBoost holds. A dump carries
no base score, objective or class count: they are given by the caller.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from veritas_dsl.float32 import parse_float32
from veritas_dsl.inputs import excerpt
from veritas_dsl.model.errors import ModelError
from veritas_dsl.model.library import MAX_FEATURES, leaf_table
from veritas_dsl.model.limits import model_bytes

if TYPE_CHECKING:
    from veritas_dsl.model.ensemble import Ensemble

_INDEXED = re.compile(r"f?([0-9]+)")


def from_xgboost_dump(
    cls: type[Ensemble],
    source: str | os.PathLike | Sequence[str],
    base_score: float | Sequence[float] = 0.0,
    n_classes: int = 1,
    n_features: int | None = None,
    feature_names: Sequence[str] | None = None,
) -> Ensemble:
    """Import a JSON tree dump as a ``cls``.

    Parameters
    ----------
    source : path or list of str
        A dump file (a JSON array of trees), or ``Booster.get_dump(dump_format="json")``.
    base_score : float or list of float
        The margin added to the trees' sum, or one per class (the dump does not record it).
    n_classes : int
        1 for one output (read as a binary margin: class 1 above 0); k >= 3 for a multiclass
        dump with one tree per class per round (tree ``i`` feeds class ``i % k``).
    n_features : int, optional
        The number of features; by default one more than the largest index split on.
    feature_names : list of str, optional
        Names for features ``f0, f1, ...``; required when the dump splits on names.
    """
    trees, where = _read(source)
    if n_classes < 1 or n_classes == 2:
        raise ModelError(f"{where}: classes must be 1 (one output) or at least 3, got {n_classes}")
    if not trees:
        raise ModelError(f"{where}: the dump has no trees")

    nodes: list[dict] = []
    sizes = []
    for t, tree in enumerate(trees):
        before = len(nodes)
        _flatten(tree, f"{where}: tree {t}", nodes)
        sizes.append(len(nodes) - before)
    index = _feature_index(nodes, feature_names, where)
    is_leaf = np.array(["leaf" in n for n in nodes])
    try:
        with np.errstate(over="ignore"):
            numbers = parse_float32(
                [n["leaf"] if "leaf" in n else n["split_condition"] for n in nodes]
            )
    except ValueError as error:
        raise ModelError(f"{where}: {error}") from None
    feature = np.array(
        [-1 if leaf else index[n["split"]] for n, leaf in zip(nodes, is_leaf, strict=True)]
    )
    names = _names(feature_names, n_features, int(feature.max(initial=-1)) + 1, where)
    value = leaf_table(len(nodes), n_classes, where)
    output = np.repeat(np.arange(len(trees)) % n_classes, sizes)
    value[is_leaf, output[is_leaf]] = numbers[is_leaf]
    try:
        return cls(
            feature=feature,
            threshold=np.where(is_leaf, np.float32(0), numbers),
            left=[n.get("left", -1) for n in nodes],
            right=[n.get("right", -1) for n in nodes],
            value=value,
            tree_offsets=np.concatenate([[0], np.cumsum(sizes)]),
            base_score=np.broadcast_to(np.asarray(base_score, dtype=np.float64), (n_classes,)),
            feature_names=names,
            task="binary" if n_classes == 1 else "multiclass",
            class_threshold=0.0,
            source=f"xgboost dump ({where})",
        )
    except ModelError as error:
        raise ModelError(f"{where}: {error}") from None


def _names(
    feature_names: Sequence[str] | None, n_features: int | None, width: int, where: str
) -> tuple[str, ...]:
    """The model's feature names, given or ``f0, f1, ...``; ``width`` features are split on."""
    if n_features is None:
        n_features = len(feature_names) if feature_names is not None else width
    if n_features > MAX_FEATURES:
        raise ModelError(f"{where}: {n_features} features is more than {MAX_FEATURES:,}")
    if width > n_features:
        raise ModelError(
            f"{where}: the dump splits on feature f{width - 1}, beyond {n_features} features"
        )
    names = (
        tuple(feature_names)
        if feature_names is not None
        else tuple(f"f{i}" for i in range(n_features))
    )
    if len(names) != n_features:
        raise ModelError(f"{where}: {len(names)} feature names for {n_features} features")
    return names


def _read(source) -> tuple[list[dict], str]:
    # Numbers stay text so that they can be rounded to float32 once, exactly.
    def load(text: str):
        return json.loads(text, parse_float=str, parse_int=str)

    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        try:
            document = load(model_bytes(path, "xgboost_dump").decode("utf-8"))
        except UnicodeDecodeError as error:
            raise ModelError(
                f"{path}: not a JSON tree dump (byte {error.start} is not UTF-8 text)"
            ) from None
        except (OSError, json.JSONDecodeError, RecursionError) as error:
            raise ModelError(f"{path}: not a JSON tree dump ({error})") from None
        if not isinstance(document, list) or not all(isinstance(t, dict) for t in document):
            raise ModelError(f"{path}: a tree dump is a JSON array of trees")
        return document, str(path)
    try:
        trees = [load(text) for text in source]
    except (json.JSONDecodeError, RecursionError) as error:
        raise ModelError(f"dump: a tree is not valid JSON ({error})") from None
    if not all(isinstance(t, dict) for t in trees):
        raise ModelError("dump: a tree is not a JSON object")
    return trees, "dump"


def _feature_index(nodes: list[dict], names: Sequence[str] | None, where: str) -> dict[str, int]:
    """Feature index of every split name: a given feature name, ``f7`` or ``7`` (feature 7).

    Names are looked at in the order the splits come, so any message is the same on every run.
    """
    position = {}
    if names is not None:
        position = {name: i for i, name in enumerate(names)}
        position.update({f"f{i}": i for i in range(len(names))})
    for name in dict.fromkeys(n["split"] for n in nodes if "split" in n):
        if name in position:
            continue
        match = _INDEXED.fullmatch(name)
        if not match:
            hint = "it is not among the feature names" if names else "give the feature names"
            raise ModelError(f"{where}: the dump splits on feature `{excerpt(name)}`; {hint}")
        if len(match.group(1)) > 7:  # beyond MAX_FEATURES; int() of a huge text is slow
            raise ModelError(
                f"{where}: the dump splits on feature {excerpt(name)}, beyond {MAX_FEATURES:,}"
            )
        position[name] = int(match.group(1))
    return position


def _flatten(tree: dict, where: str, nodes: list[dict]) -> None:
    """Append a tree in preorder, with ``left``/``right`` as absolute positions.

    Nodes are found by ``nodeid``, each reachable once from the root through ``yes``/``no``.
    """
    by_id = {}
    stack = [tree]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            raise ModelError(f"{where}: a node is not a JSON object")
        node_id = _whole(node, "nodeid", where)
        if node_id in by_id:
            raise ModelError(f"{where}: two nodes have nodeid {node_id}")
        by_id[node_id] = node
        children = node.get("children", [])
        if not isinstance(children, list):
            raise ModelError(f"{where}, node {node_id}: `children` is not a list")
        stack += children
    order = [(0, -1, "")]
    seen = set()
    while order:
        node_id, parent, side = order.pop()
        if node_id not in by_id:
            raise ModelError(f"{where} refers to node {node_id}, which it lacks")
        if node_id in seen:
            raise ModelError(f"{where}: node {node_id} is reached twice (a cycle or a shared node)")
        seen.add(node_id)
        node = by_id[node_id]
        position = len(nodes)
        if parent >= 0:
            nodes[parent][side] = position
        if "leaf" in node:
            nodes.append({"leaf": _number(node, "leaf", node_id, where)})
            continue
        if "split_condition" not in node:
            raise ModelError(
                f"{where}, node {node_id} has no split_condition "
                "(a categorical split?); not supported"
            )
        split = node.get("split")
        if not isinstance(split, str):
            raise ModelError(f"{where}, node {node_id}: `split` is not a feature name or number")
        condition = _number(node, "split_condition", node_id, where)
        nodes.append({"split": split, "split_condition": condition})
        order.append((_whole(node, "no", where), position, "right"))
        order.append((_whole(node, "yes", where), position, "left"))


def _whole(node: dict, key: str, where: str) -> int:
    """A node id, parsed as text (see :func:`_read`)."""
    text = node.get(key)
    if not isinstance(text, str) or not text.isascii() or not text.isdigit() or len(text) > 9:
        raise ModelError(f"{where}: `{key}` is `{excerpt(text)}`, not a node id")
    return int(text)


def _number(node: dict, key: str, node_id: int, where: str) -> str:
    text = node.get(key)
    if not isinstance(text, str):
        raise ModelError(f"{where}, node {node_id}: `{key}` is `{excerpt(text)}`, not a number")
    return text
