"""Read an XGBoost model document (JSON or UBJSON) and check its trees before XGBoost does.

XGBoost's own loader trusts the document: a byte-flipped file whose ``parents`` array points out
of range makes it read out of bounds and crash the process, and its predictor follows children
and feature indices unchecked. So a model file is parsed and checked here first, and XGBoost only
loads files that passed. The same reading gives the flat arrays of the Ensemble, and
:func:`written_numbers` finds in XGBoost's serialisation the float32 values it holds, to compare.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np

from veritas_dsl.inputs import excerpt
from veritas_dsl.model import ubjson
from veritas_dsl.model.errors import ModelError
from veritas_dsl.model.forest import parent_first_order
from veritas_dsl.model.library import MAX_FEATURES

#: More classes than any model we know of (the spec language's own limit).
MAX_CLASSES = 100_000
#: XGBoost's parent of a root: -1 with its "is a left child" bit masked off.
_NO_PARENT = (-1, 2**31 - 1)
#: A JSON string, and the colon that makes it a key. Outside strings JSON has no quotes, so
#: matches taken in order from the start are exactly the document's strings.
_STRING = re.compile(rb'"((?:[^"\\]|\\.)*)"(\s*:)?', re.DOTALL)


@dataclass(frozen=True)
class Forest:
    """The trees of an XGBoost document as flat arrays (nodes in XGBoost's order).

    ``left``/``right`` are absolute node indices, -1 at leaves (XGBoost's rule: a node is a leaf
    when its left child is -1); a leaf's value is its ``split_condition``.
    """

    feature: np.ndarray  # int64, split_indices
    condition: np.ndarray  # float32, split_conditions
    left: np.ndarray  # int64
    right: np.ndarray  # int64
    tree_offsets: np.ndarray  # int64
    tree_info: np.ndarray  # int64, the output (class) each tree adds to
    iteration_indptr: np.ndarray | None
    n_features: int
    n_classes: int


def load(data: bytes, path: Path) -> tuple[object, Forest]:
    """The document the bytes of the model file at ``path`` hold, and its checked trees.

    A JSON file's numbers are decimal text, which XGBoost rounds to float32 once and Python
    through float64: the two differ where the float64 is exactly halfway between two float32s.
    Such a threshold is rare, and only then is the file parsed again with every number rounded
    once (:func:`float32_of`), so the thresholds are XGBoost's with or without its library.
    """
    document = read(data, path)
    try:
        return document, forest(document, str(path))
    except _RoundedTwice:
        document = read(data, path, parse_float=lambda text: float(float32_of(text)))
        return document, forest(document, str(path))


def read(data: bytes, path: Path, parse_float=float) -> object:
    """The document the bytes of the model file at ``path`` hold (JSON numbers with a fraction
    or exponent parsed by ``parse_float``).

    The format is chosen as XGBoost chooses it for a buffer: JSON when the first character after
    the opening ``{`` is a quote, UBJSON when it is a letter.
    """
    kind = data[1:].lstrip(b" \t\n\r\v\f")[:1] if data[:1] == b"{" else b""
    try:
        if kind == b'"':
            _check_keys(data, path)
            return json.loads(
                data.decode("utf-8"), object_pairs_hook=_unique_keys, parse_float=parse_float
            )
        if kind.isalpha():
            return ubjson.loads(data)
    except UnicodeDecodeError as error:
        raise ModelError(
            f"{path}: not an XGBoost JSON model (byte {error.start} is not UTF-8 text)"
        ) from None
    except (json.JSONDecodeError, ubjson.UBJSONError, _RepeatedKey, RecursionError) as error:
        raise ModelError(f"{path}: not a readable XGBoost model file ({error})") from None
    raise ModelError(f"{path}: not an XGBoost model file (JSON or UBJSON)")


def _check_keys(data: bytes, path: Path) -> None:
    """XGBoost loads the file itself, so it must read the document we check. Its parser keeps
    ``\\u`` escapes as written, where Python's decodes them: ``"parent\\u0073"`` is ``parents``
    to us and another key to XGBoost, which then loaded a ``parents`` we never saw (and crashed).
    XGBoost writes no escape in a key."""
    if b"\\" not in data:
        return
    for match in _STRING.finditer(data):
        if match.group(2) and b"\\" in match.group(1):
            key = match.group(1)[:40].decode("utf-8", "replace")
            raise ModelError(
                f"{path}: the key \"{key}\" is written with an escape; XGBoost reads such a key "
                "as another than we do, so the file is not loaded"
            )


class _RepeatedKey(ValueError):
    pass


class _RoundedTwice(Exception):
    """A threshold read through float64 lies halfway between two float32s (:func:`load`)."""


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """A JSON object whose keys appear once: parsers differ on which of two equal keys they keep
    (XGBoost's UBJSON reader keeps the first), and XGBoost writes none."""
    document = dict(pairs)
    if len(document) != len(pairs):
        seen: set[str] = set()
        twice = next(key for key, _ in pairs if key in seen or seen.add(key))
        raise _RepeatedKey(f"the key {twice[:40]!r} appears twice in one object")
    return document


def forest(document: object, where: str) -> Forest:
    """The trees of ``document``, checked so that XGBoost can load and evaluate them safely."""
    learner = _field(document, "learner", dict, where)
    params = _field(learner, "learner_model_param", dict, where)
    n_features = _count(params, "num_feature", 1, MAX_FEATURES, where)
    n_classes = _count(params, "num_class", 0, MAX_CLASSES, where)
    if _count(params, "num_target", 1, MAX_CLASSES, where, default="1") > 1:
        raise ModelError(f"{where}: multi-target models are not supported")
    for key in ("feature_names", "feature_types"):
        names = learner.get(key, [])
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ModelError(f"{where}: {key} is not a list of strings")
        if names and len(names) != n_features:
            raise ModelError(f"{where}: {len(names)} {key} for {n_features} features")
    booster = _field(learner, "gradient_booster", dict, where)
    name = booster.get("name")
    if name != "gbtree":
        raise ModelError(
            f"{where}: booster {name!r} is not supported; only 'gbtree' (not 'dart' or "
            "'gblinear') describes a fixed sum of trees"
        )
    model = _field(booster, "model", dict, where)
    trees = _field(model, "trees", list, where)
    if not trees:
        raise ModelError(f"{where}: the model has no trees")
    model_param = _field(model, "gbtree_model_param", dict, where)
    if _count(model_param, "num_trees", 1, len(trees), where) != len(trees):
        raise ModelError(f"{where}: num_trees does not match the {len(trees)} trees")
    _count(model_param, "num_parallel_tree", 1, len(trees), where, default="1")
    tree_info = _ints(model, "tree_info", len(trees), where)
    if np.any((tree_info < 0) | (tree_info >= max(n_classes, 1))):
        raise ModelError(f"{where}: tree_info names an output beyond {max(n_classes, 1)}")
    indptr = None
    if "iteration_indptr" in model:
        indptr = _ints(model, "iteration_indptr", None, where)
        if (
            len(indptr) < 1
            or indptr[0] != 0
            or indptr[-1] != len(trees)
            or np.any(np.diff(indptr) < 0)
        ):
            raise ModelError(f"{where}: iteration_indptr does not rise from 0 to the tree count")
    cats = model.get("cats", {})
    if not isinstance(cats, dict) or any(_length(v) for v in cats.values()):
        raise ModelError(f"{where}: the model encodes categories; not supported")

    parts = [_tree(tree, t, n_features, f"{where}: tree {t}") for t, tree in enumerate(trees)]
    sizes = [len(p[0]) for p in parts]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    shift = np.repeat(offsets[:-1], sizes)
    leaf = np.concatenate([p[2] for p in parts]) < 0
    left = np.where(leaf, -1, np.concatenate([p[2] for p in parts]) + shift)
    right = np.where(leaf, -1, np.concatenate([p[3] for p in parts]) + shift)
    try:
        parent_first_order(left, right, offsets)  # children in their tree, no node shared
    except ModelError as error:
        raise ModelError(f"{where}: {error}") from None
    return Forest(
        feature=np.concatenate([p[0] for p in parts]),
        condition=np.concatenate([p[1] for p in parts]),
        left=left,
        right=right,
        tree_offsets=offsets,
        tree_info=tree_info,
        iteration_indptr=indptr,
        n_features=n_features,
        n_classes=n_classes,
    )


def _tree(tree: object, t: int, n_features: int, where: str) -> tuple[np.ndarray, ...]:
    """One tree's split_indices, split_conditions, left and right children (relative)."""
    if not isinstance(tree, dict) or tree.get("id") != t:
        raise ModelError(f"{where} is not a tree with id {t}")
    param = _field(tree, "tree_param", dict, where)
    n = _count(param, "num_nodes", 1, 2**31 - 2, where)
    if _count(param, "size_leaf_vector", 0, 2**31 - 1, where, default="1") > 1:
        raise ModelError(f"{where} has vector leaves (multi_output_tree)")
    _count(param, "num_deleted", 0, n, where, default="0")
    left, right, parents = (_ints(tree, key, n, where) for key in _LINKS)
    feature = _ints(tree, "split_indices", n, where)
    _ints(tree, "default_left", n, where)
    condition = _floats(tree, "split_conditions", n, where, once=True)
    for key in ("loss_changes", "sum_hessian", "base_weights"):
        _floats(tree, key, n, where)
    if "split_type" in tree:
        categorical = np.nonzero(_ints(tree, "split_type", n, where))[0]
        if len(categorical):
            raise ModelError(
                f"{where}, node {categorical[0]} is a categorical split; not supported"
            )
    for key in ("categories", "categories_nodes", "categories_segments", "categories_sizes"):
        if _length(tree.get(key, [])):
            raise ModelError(f"{where} has categorical splits; not supported")

    inner = left != -1
    for name, children in (("left", left), ("right", right)):
        bad = np.nonzero((children < -1) | (children >= n) | ((children == -1) == inner))[0]
        if len(bad):
            node = bad[0]
            other = "right" if name == "left" else "left"
            raise ModelError(
                f"{where}, node {node}: its {name} child {children[node]} is neither -1 nor one "
                f"of the tree's {n} nodes, or does not match its {other} child"
            )
    index = np.arange(n)
    bad = np.nonzero(inner & ((feature < 0) | (feature >= n_features)))[0]
    if len(bad):
        raise ModelError(
            f"{where}, node {bad[0]} splits on feature {feature[bad[0]]} of {n_features}"
        )
    # XGBoost's loader follows every parent link; a child's must name its parent.
    wrong = (index > 0) & ((parents < 0) | (parents >= n))
    wrong[0] = parents[0] not in _NO_PARENT
    for children in (left, right):
        has = inner & (children > 0)
        wrong[children[has]] |= parents[children[has]] != index[has]
    bad = np.nonzero(wrong)[0]
    if len(bad):
        node = bad[0]
        raise ModelError(f"{where}, node {node}: `parents` names {parents[node]}, not its parent")
    return feature, condition, left, right


_LINKS = ("left_children", "right_children", "parents")


def _field(container: object, key: str, kind: type, where: str):
    if not isinstance(container, dict) or not isinstance(container.get(key), kind):
        raise ModelError(
            f"{where}: not an XGBoost model (`{key}` is missing or not a {kind.__name__})"
        )
    return container[key]


def _count(container: dict, key: str, low: int, high: int, where: str, default=None) -> int:
    """A whole number XGBoost stores as text, such as ``"num_feature": "7"``."""
    text = container.get(key, default)
    if not isinstance(text, str) or not text.isascii() or not text.isdigit():
        raise ModelError(f"{where}: `{key}` is `{excerpt(text)}`, not a whole number")
    value = int(text)
    if not low <= value <= high:
        raise ModelError(f"{where}: `{key}` is {value}, outside {low}..{high}")
    return value


def _length(value: object) -> int:
    return len(value) if isinstance(value, (list, np.ndarray)) else 1


def _ints(container: dict, key: str, n: int | None, where: str) -> np.ndarray:
    """An array of whole numbers: a typed UBJSON array, or a JSON list of integers."""
    values = container.get(key)
    if isinstance(values, list) and all(type(v) is int for v in values):
        try:
            values = np.array(values, dtype=np.int64)
        except OverflowError:
            raise ModelError(f"{where}: `{key}` holds a number beyond 64 bits") from None
    if not isinstance(values, np.ndarray) or values.dtype.kind not in "iu" or values.ndim != 1:
        raise ModelError(f"{where}: `{key}` is missing or not a list of whole numbers")
    if n is not None and len(values) != n:
        raise ModelError(f"{where}: `{key}` has {len(values)} entries, not {n}")
    return values.astype(np.int64)


def _floats(container: dict, key: str, n: int, where: str, once: bool = False) -> np.ndarray:
    """The float32s of ``key``; with ``once``, JSON numbers that float64 rounded to halfway
    between two float32s are a :class:`_RoundedTwice`."""
    values = container.get(key)
    if isinstance(values, list) and all(type(v) in (int, float) for v in values):
        listed, values = values, np.array(values, dtype=np.float64)
        for i in np.flatnonzero(halfway(values)) if once else ():
            if type(listed[i]) is float:
                raise _RoundedTwice  # its decimal text is gone
            values[i] = float32_of(str(listed[i]))  # a whole number beyond 2**53
    if not isinstance(values, np.ndarray) or values.dtype.kind not in "iuf" or values.ndim != 1:
        raise ModelError(f"{where}: `{key}` is missing or not a list of numbers")
    if len(values) != n:
        raise ModelError(f"{where}: `{key}` has {len(values)} entries, not {n}")
    with np.errstate(over="ignore"):
        narrow = values.astype(np.float32)
    beyond = np.flatnonzero(np.isfinite(values) & ~np.isfinite(narrow))
    if len(beyond):  # XGBoost writes float32 values: this one was never written by it
        raise ModelError(
            f"{where}: `{key}` holds {values[beyond[0]]:g}, beyond the float32 range that "
            "XGBoost stores numbers in"
        )
    return narrow


def base_values(text: object) -> np.ndarray | None:
    """The float32s of a base score as XGBoost writes it (``"5E-1"`` or ``"[1E-1,2E-1]"``),
    each rounded once; None when it is not a list of numbers."""
    try:
        return np.array(
            [float32_of(v) for v in str(text).strip("[]").split(",") if v.strip()],
            dtype=np.float32,
        )
    except ValueError:
        return None


def halfway(values: np.ndarray) -> np.ndarray:
    """Elementwise: whether a float64 lies exactly halfway between two adjacent float32s (the
    sum of two float32s, and its half, are exact in float64)."""
    with np.errstate(over="ignore", invalid="ignore"):
        near = values.astype(np.float32)
        toward = np.where(values > near, np.float32(np.inf), np.float32(-np.inf))
        other = np.nextafter(near, toward.astype(np.float32))
        middle = (near.astype(np.float64) + other.astype(np.float64)) / 2
    return (near != values) & (middle == values)


def float32_of(text: str) -> np.float32:
    """The float32 nearest the decimal ``text`` (ties to even), rounded once as XGBoost rounds
    it; a ``ValueError`` when it is no number. Through float64 first, which is right unless that
    lands exactly halfway between two float32s: then the exact decimal decides."""
    value = float(text)
    with np.errstate(over="ignore"):
        near = np.float32(value)
    if not halfway(np.array([value]))[0]:
        return near
    exact = Fraction(text.strip())
    if exact == Fraction(value):
        return near  # a tie: float32() rounded it to even
    # Compared as Python floats: numpy would compare a Python float with a float32 in float32.
    other = np.nextafter(near, np.float32(np.inf if value > float(near) else -np.inf))
    return other if (exact > value) == (other > near) else near


#: In XGBoost's UBJSON: a tree's split_conditions key and the header of its float32 array up to
#: the marker of its count; the base score's key and the marker of its string's length.
_CONDITIONS = re.compile(rb"split_conditions\[\$d#([iUIlL])")
_BASE_SCORE = re.compile(rb"base_scoreS([iUIlL])")


def written_numbers(raw: bytes, n_trees: int) -> tuple[np.ndarray, str] | None:
    """The split_conditions of every tree (concatenated) and the base score text in ``raw``,
    a model as XGBoost serialises it in UBJSON, found without decoding the rest; None unless
    there are ``n_trees`` arrays and one base score. (A match inside another array's bytes
    makes one more: None, never a wrong array.)"""
    conditions = []
    for match in _CONDITIONS.finditer(raw):
        found = _counted(raw, match)
        if found is None:
            return None
        start, n = found
        if start + 4 * n > len(raw):
            return None
        conditions.append(np.frombuffer(raw, ">f4", n, start))
    scores = list(_BASE_SCORE.finditer(raw))
    if len(conditions) != n_trees or len(scores) != 1:
        return None
    found = _counted(raw, scores[0])
    if found is None:
        return None
    start, n = found
    text = bytes(raw[start : start + n]).decode("ascii", "replace")
    return np.concatenate(conditions).astype(np.float32), text


def _counted(raw: bytes, match: re.Match) -> tuple[int, int] | None:
    """Where the items counted after ``match`` (ending at the count's marker) start, and how
    many there are."""
    size = {b"i": 1, b"U": 1, b"I": 2, b"l": 4, b"L": 8}[match.group(1)]
    start = match.end()
    n = int.from_bytes(raw[start : start + size], "big", signed=match.group(1) != b"U")
    return (start + size, n) if n >= 0 and start + size <= len(raw) else None
