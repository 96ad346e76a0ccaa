"""Read LightGBM's text model format strictly, and write back the part of it we understood.

LightGBM's own reader trusts its input: on a corrupt file it reads out of bounds or aborts the
process (a byte-flipped model file crashed it in load, in ``dump_model`` and in parameter parsing).
So a model text is read here first, every field we use checked; LightGBM only ever reads the
:func:`canonical_text` of a model that passed, which holds nothing but those checked fields.

A tree's split ``i`` sends ``x`` left on ``x <= threshold[i]``; ``left_child``/``right_child``
name a split by its index and a leaf ``j`` as ``~j``. ``decision_type`` packs three fields: bit 0
is a categorical split, bit 1 sends missing values left, bits 2-3 say what counts as missing
(0 none, 1 zero, 2 NaN).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from veritas_dsl.inputs import excerpt
from veritas_dsl.model.errors import ModelError

_INT = re.compile(r"[-+]?\d{1,10}")
_FLOAT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")
MISSING_ZERO = 1
END_OF_TREES = "end of trees"
#: More leaves than LightGBM grows in one tree (its num_leaves is at most 131072).
MAX_LEAVES = 1 << 20


@dataclass(frozen=True)
class Tree:
    """One tree as LightGBM stores it; ``leaf_value`` is the constant a leaf predicts."""

    split_feature: np.ndarray  # int, (n_leaves - 1,)
    threshold: np.ndarray  # float64
    decision_type: np.ndarray  # int
    left_child: np.ndarray  # int
    right_child: np.ndarray  # int
    leaf_value: np.ndarray  # float64, (n_leaves,)


@dataclass(frozen=True)
class Model:
    feature_names: tuple[str, ...]
    objective: str
    logistic: bool  # binary, with the slope LightGBM's probability takes by default (sigmoid:1)
    n_classes: int
    per_iteration: int
    average_output: bool
    trees: tuple[Tree, ...]


def parse(text: str, where: str) -> Model:
    """The model in ``text``; a :class:`ModelError` naming the field, tree and split otherwise."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    header, at = _block(lines, 0, stop=lambda line: line.startswith("Tree="))
    missing = [
        key for key in ("feature_names", "max_feature_idx", "num_class") if key not in header
    ]
    if missing:
        raise ModelError(f"{where}: not a LightGBM text model (it has no `{missing[0]}=` line)")
    names = tuple(t for t in _require(header, "feature_names", where).split(" ") if t)
    last = _int(_require(header, "max_feature_idx", where), "max_feature_idx", where)
    if len(names) != last + 1:
        raise ModelError(f"{where}: {len(names)} feature_names for max_feature_idx {last}")
    n_classes = _int(_require(header, "num_class", where), "num_class", where)
    per_iteration = _int(header.get("num_tree_per_iteration", str(n_classes)), "trees", where)
    if not 1 <= n_classes <= 100_000 or not 1 <= per_iteration <= n_classes:
        raise ModelError(f"{where}: num_class {n_classes}, num_tree_per_iteration {per_iteration}")
    trees = []
    while at < len(lines) and lines[at].startswith("Tree="):
        if lines[at] != f"Tree={len(trees)}":
            raise ModelError(f"{where}: expected `Tree={len(trees)}`, found `{excerpt(lines[at])}`")
        fields, at = _block(lines, at + 1, stop=lambda line: not line)
        trees.append(_tree(fields, len(names), f"{where}: tree {len(trees)}"))
        while at < len(lines) and not lines[at]:
            at += 1
    if not trees:
        raise ModelError(f"{where}: the model has no trees")
    _check_whole(header, lines[at] if at < len(lines) else "", len(trees), where)
    if len(trees) % per_iteration:
        raise ModelError(f"{where}: {len(trees)} trees is not a whole number of iterations")
    return Model(
        feature_names=names,
        objective=header.get("objective", "regression").split(" ")[0],
        logistic=header.get("objective", "").split(" ") in (["binary"], ["binary", "sigmoid:1"]),
        n_classes=n_classes,
        per_iteration=per_iteration,
        average_output="average_output" in header,
        trees=tuple(trees),
    )


def canonical_text(model: Model) -> str:
    """A LightGBM model text of ``model`` alone: what LightGBM reads to predict for it.

    Numbers are written as the shortest decimals that read back to the same float64, which
    LightGBM's parser rounds correctly, so the model it loads is the one we checked.
    """

    def row(values) -> str:
        return " ".join(repr(float(v)) if isinstance(v, float) else str(v) for v in values.tolist())

    head = [
        "tree",
        "version=v4",
        f"num_class={model.n_classes}",
        f"num_tree_per_iteration={model.per_iteration}",
        "label_index=0",
        f"max_feature_idx={len(model.feature_names) - 1}",
        *(["average_output"] if model.average_output else []),
        "feature_names=" + " ".join(model.feature_names),
        "feature_infos=" + " ".join("none" for _ in model.feature_names),
        "",
    ]
    blocks = []
    for t, tree in enumerate(model.trees):
        lines = [f"Tree={t}", f"num_leaves={len(tree.leaf_value)}", "num_cat=0"]
        if len(tree.leaf_value) > 1:
            lines += [
                "split_feature=" + row(tree.split_feature),
                "threshold=" + row(tree.threshold),
                "decision_type=" + row(tree.decision_type),
                "left_child=" + row(tree.left_child),
                "right_child=" + row(tree.right_child),
            ]
        lines += ["leaf_value=" + row(tree.leaf_value), "is_linear=0", "shrinkage=1", "", ""]
        blocks.append("\n".join(lines))
    return "\n".join(head) + "\n" + "".join(blocks) + END_OF_TREES + "\n"


def _check_whole(header: dict[str, str], after: str, n_trees: int, where: str) -> None:
    """A file cut short reads as fewer trees: LightGBM closes its trees with ``end of trees``,
    and declares their number in ``tree_sizes=`` (absent from files older than 2.3)."""
    if "tree_sizes" in header:
        declared = len(header["tree_sizes"].split())
        if declared != n_trees:
            raise ModelError(
                f"{where}: the file holds {n_trees} trees, but its `tree_sizes=` line declares "
                f"{declared}: it is cut short or damaged"
            )
    if after != END_OF_TREES:
        raise ModelError(
            f"{where}: no `{END_OF_TREES}` line after tree {n_trees - 1}: the file is cut short "
            "or damaged"
        )


def _block(lines: list[str], at: int, stop) -> tuple[dict[str, str], int]:
    """``key=value`` lines from ``at`` up to the first line ``stop`` accepts; a bare ``key`` maps
    to the empty string. The first of a repeated key wins."""
    fields: dict[str, str] = {}
    while at < len(lines) and not stop(lines[at]):
        key, _, value = lines[at].partition("=")
        fields.setdefault(key, value)
        at += 1
    return fields, at


def _require(fields: dict[str, str], key: str, where: str) -> str:
    if key not in fields:
        raise ModelError(f"{where} has no `{key}=` line")
    return fields[key]


def _int(text: str, what: str, where: str) -> int:
    if not _INT.fullmatch(text):
        raise ModelError(f"{where}: {what} `{excerpt(text)}` is not a whole number")
    return int(text)


def _numbers(fields, key: str, count: int, pattern, where: str) -> list[str]:
    tokens = [t for t in _require(fields, key, where).split(" ") if t]
    if len(tokens) != count:
        raise ModelError(f"{where}: {key} has {len(tokens)} entries, not {count}")
    # One match of the whole line is fast; the token at fault is looked for only on failure.
    if not re.fullmatch(f"(?:(?:{pattern.pattern}) )*(?:{pattern.pattern})?", " ".join(tokens)):
        i, token = next((i, t) for i, t in enumerate(tokens) if not pattern.fullmatch(t))
        raise ModelError(f"{where}: entry {i} of {key}, `{excerpt(token)}`, is not a number")
    return tokens


def _ints(fields, key: str, count: int, where: str) -> np.ndarray:
    return np.array(_numbers(fields, key, count, _INT, where), dtype=np.int64)


def _floats(fields, key: str, count: int, where: str) -> np.ndarray:
    values = np.array(_numbers(fields, key, count, _FLOAT, where), dtype=np.float64)
    bad = np.nonzero(~np.isfinite(values))[0]
    if len(bad):
        raise ModelError(f"{where}: entry {bad[0]} of {key} is not a finite number")
    return values


def _tree(fields: dict[str, str], n_features: int, where: str) -> Tree:
    n_leaves = _int(_require(fields, "num_leaves", where), "num_leaves", where)
    if not 1 <= n_leaves <= MAX_LEAVES:
        raise ModelError(f"{where}: num_leaves {n_leaves} is outside 1..{MAX_LEAVES}")
    if _int(fields.get("num_cat", "0"), "num_cat", where) != 0:
        raise ModelError(f"{where} has categorical splits; not supported")
    leaf_value = _floats(fields, "leaf_value", n_leaves, where)
    if _int(fields.get("is_linear", "0"), "is_linear", where):
        counts = _ints(fields, "num_features", n_leaves, where)
        if np.any(counts != 0):
            leaf = int(np.nonzero(counts)[0][0])
            raise ModelError(f"{where}, leaf {leaf} is linear (linear_tree); not supported")
        # A linear tree's leaf without coefficients predicts its constant term.
        leaf_value = _floats(fields, "leaf_const", n_leaves, where)
    n_splits = n_leaves - 1
    split_feature = _ints(fields, "split_feature", n_splits, where)
    decision_type = _ints(fields, "decision_type", n_splits, where)
    left = _ints(fields, "left_child", n_splits, where)
    right = _ints(fields, "right_child", n_splits, where)
    threshold = _floats(fields, "threshold", n_splits, where)
    for name, values, low, high in (
        ("split_feature", split_feature, 0, n_features - 1),
        ("decision_type", decision_type, 0, 11),
        ("left_child", left, -n_leaves, n_splits - 1),
        ("right_child", right, -n_leaves, n_splits - 1),
    ):
        bad = np.nonzero((values < low) | (values > high))[0]
        if len(bad):
            raise ModelError(
                f"{where}, split {bad[0]}: {name} {values[bad[0]]} is outside {low}..{high}"
            )
    categorical = np.nonzero(decision_type & 1)[0]
    if len(categorical):
        raise ModelError(f"{where}, split {categorical[0]} is categorical; not supported")
    return Tree(split_feature, threshold, decision_type, left, right, leaf_value)
