"""Saving a DaRE forest to an ``.npz`` file and reading it back, without pickle.

The file holds the parameters, the training rows and labels (deleted ones included, so ids stay
stable), which rows are deleted, every node with its cached counts and seed, each leaf's rows, and
the random generator's state: the same file and the same deletions give the same forest. A file
is checked before it becomes a forest: every node's counts and every leaf's rows must be those the
remaining rows reach, so a corrupt file is a :class:`ModelError` naming it, never a wrong forest.
"""

from __future__ import annotations

import json
import math
import tokenize
import zipfile
import zlib
from pathlib import Path

import numpy as np

from veritas_dsl.inputs import excerpt, size_text
from veritas_dsl.model.archive import check_inflation
from veritas_dsl.model.errors import ModelError
from veritas_dsl.model.forest import check_forest, check_offsets
from veritas_dsl.model.limits import MAX_BYTES, model_size
from veritas_dsl.unlearning.dare.estimator import check_params
from veritas_dsl.unlearning.dare.tree import GREEDY, LEAF, RANDOM, Tree
from veritas_dsl.unlearning.dare.view import ForestView

FILE_FORMAT = "veritas-dsl-dare"
FILE_VERSION = 1
_ARRAYS = {  # name -> (dtype, dimensions)
    "X": (np.float32, 2),
    "y": (np.int8, 1),
    "alive": (np.bool_, 1),
    "kind": (np.int8, 1),
    "feature": (np.int64, 1),
    "threshold": (np.float64, 1),
    "left": (np.int64, 1),
    "right": (np.int64, 1),
    "count": (np.int64, 1),
    "positives": (np.int64, 1),
    "seed": (np.uint64, 1),
    "tree_offsets": (np.int64, 1),
    "leaf_rows": (np.int64, 1),
    "leaf_offsets": (np.int64, 1),
}


def save(forest, path: str | Path) -> None:
    """Write ``forest`` to ``path`` exactly (any name: no suffix is added), whole or not at all:
    the write goes to a temporary file beside it, renamed over it."""
    view = ForestView.of(forest._trees, forest.n_features)
    seeds = np.concatenate([np.asarray(t.seed, dtype=np.uint64) for t in forest._trees])
    leaf_rows = [tree.rows[node] for tree in forest._trees for node in sorted(tree.rows)]
    header = {
        "format": FILE_FORMAT,
        "version": FILE_VERSION,
        "params": _params(forest),
        "rng": forest._rng.bit_generator.state,
        "last_deletion_cost": forest.last_deletion_cost,
        "classes": forest.classes_.tolist(),
    }
    if hasattr(forest, "feature_names_in_"):
        header["feature_names"] = forest.feature_names_in_.tolist()
    arrays = dict(
        header=np.array(json.dumps(header)),
        X=forest._X,
        y=forest._y,
        alive=forest._alive,
        kind=view.kind,
        feature=view.feature,
        threshold=view.threshold,
        left=view.left,
        right=view.right,
        count=view.count,
        positives=view.positives,
        seed=seeds,
        tree_offsets=view.tree_offsets,
        leaf_rows=np.concatenate(leaf_rows).astype(np.int64),
        leaf_offsets=np.cumsum([0] + [len(r) for r in leaf_rows]).astype(np.int64),
    )
    path = Path(path)
    partial = path.with_name(path.name + ".partial")
    try:
        with partial.open("wb") as handle:
            np.savez_compressed(handle, **arrays)
        partial.replace(path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def _params(forest) -> dict:
    """The parameters as JSON; a Generator given as ``random_state`` is stored as None (the
    generator's state is stored apart, so the loaded forest draws on from where it was)."""
    params = forest.get_params()
    if isinstance(params["random_state"], np.random.Generator):
        params["random_state"] = None
    if params["criterion"] == "gini":  # so that a Gini forest's file reads as before it existed
        del params["criterion"]
    return params


def load(cls, path: str | Path):
    """Read a forest written by :func:`save`; anything else is a ModelError naming ``path``."""
    model_size(Path(path), "dare")
    if not zipfile.is_zipfile(path):
        raise ModelError(f"{path}: not a DaRE forest file (not an .npz archive)")
    try:
        _check_sizes(path)
        with np.load(path, allow_pickle=False) as file:
            arrays = {name: file[name] for name in file.files}
    except ModelError:
        raise
    except _DAMAGED as error:
        raise ModelError(f"{path}: not a DaRE forest file ({error})") from None
    except MemoryError:  # an array header claims more than the machine has
        raise ModelError(f"{path}: not a DaRE forest file (an array is too large)") from None
    try:
        return _forest(cls, arrays)
    except ModelError as error:
        raise ModelError(f"{path}: {error}") from None


# What reading a damaged archive raises: zip's own errors, zlib's on damaged compressed data,
# NotImplementedError and RuntimeError on flags it does not support (another version,
# encryption), and numpy's on damaged array headers (TokenError, SyntaxError among them).
_DAMAGED = (
    OSError,
    ValueError,
    EOFError,
    KeyError,
    SyntaxError,
    zipfile.BadZipFile,
    zlib.error,
    NotImplementedError,
    RuntimeError,
    tokenize.TokenError,
)


def _check_sizes(path: str | Path) -> None:
    """The archive's arrays, as its directory and their headers declare them, fit in memory and
    in their members: numpy allocates an array as its header says before reading it."""
    with zipfile.ZipFile(path) as archive:
        members = archive.infolist()
        expanded = sum(member.file_size for member in members)
        if expanded > MAX_BYTES["dare"]:
            raise ModelError(
                f"{path}: its arrays hold {size_text(expanded)}, more than the "
                f"{size_text(MAX_BYTES['dare'])} allowed for a DaRE forest"
            )
        try:
            check_inflation(expanded, Path(path).stat().st_size)
        except ModelError as error:
            raise ModelError(f"{path}: {error}") from None
        for member in members:
            with archive.open(member) as stream:
                version = np.lib.format.read_magic(stream)
                reader = (
                    np.lib.format.read_array_header_1_0
                    if version == (1, 0)
                    else np.lib.format.read_array_header_2_0
                )
                shape, _, dtype = reader(stream)
            if math.prod(shape) * dtype.itemsize > member.file_size:
                raise ModelError(
                    f"{path}: not a DaRE forest file (the header of {member.filename} "
                    "claims more than it holds)"
                )


def _forest(cls, arrays: dict):
    header = _header(arrays)
    for name, (dtype, ndim) in _ARRAYS.items():
        if name not in arrays:
            raise ModelError(f"the array {name} is missing")
        if arrays[name].dtype != dtype or arrays[name].ndim != ndim:
            raise ModelError(f"the array {name} is not {ndim}-d {np.dtype(dtype).name}")
    forest = cls(**header["params"])
    check_params(forest)
    X, y, alive = arrays["X"], arrays["y"], arrays["alive"]
    if not (len(X) == len(y) == len(alive)) or X.shape[1] == 0 or not alive.any():
        raise ModelError("the training rows, labels and deleted marks do not match")
    if not np.isfinite(X).all() or not np.isin(y, (0, 1)).all():
        raise ModelError("the training rows are not finite or the labels not 0 and 1")
    forest._X, forest._y, forest._alive, forest._presorted = X, y, alive, None
    _fitted_attributes(forest, header)
    forest._trees = _trees(arrays, forest)
    try:
        generator = _BIT_GENERATORS[header["rng"]["bit_generator"]]
        forest._rng = np.random.Generator(generator())
        forest._rng.bit_generator.state = header["rng"]
    except (TypeError, ValueError, KeyError) as error:
        raise ModelError(f"the random generator's state is unreadable ({error})") from None
    forest.last_deletion_cost = header["last_deletion_cost"]
    return forest


# The generators a ``random_state`` Generator may hold (numpy's own).
_BIT_GENERATORS = {
    g.__name__: g
    for g in (np.random.PCG64, np.random.PCG64DXSM, np.random.Philox, np.random.SFC64,
              np.random.MT19937)
}  # fmt: skip


def _fitted_attributes(forest, header: dict) -> None:
    """``classes_``, ``n_features_in_`` and ``feature_names_in_`` from the header (a file
    from before labels were kept: 0 and 1)."""
    classes = np.asarray(header.get("classes", [0, 1]))
    if classes.ndim != 1 or len(classes) != 2 or not classes[0] < classes[1]:
        raise ModelError("the classes are damaged")
    forest.classes_, forest.n_features_in_ = classes, forest._X.shape[1]
    if "feature_names" in header:
        names = header["feature_names"]
        if not isinstance(names, list) or len(names) != forest.n_features_in_ or not all(
            isinstance(n, str) for n in names
        ):
            raise ModelError("the feature names are damaged")
        forest.feature_names_in_ = np.asarray(names, dtype=object)


def _header(arrays: dict) -> dict:
    try:
        header = json.loads(str(arrays["header"][()]))
        ok = header["format"] == FILE_FORMAT and isinstance(header["params"], dict)
    except (KeyError, ValueError, TypeError, IndexError):
        ok = False
    if not ok:
        raise ModelError(f"not a {FILE_FORMAT} file")
    if header.get("version") != FILE_VERSION:
        raise ModelError(f"file version `{excerpt(header.get('version'))}`; we read {FILE_VERSION}")
    cost = header.get("last_deletion_cost")
    if not isinstance(cost, int) or cost < 0 or not isinstance(header.get("rng"), dict):
        raise ModelError("the header is damaged")
    known = {"n_trees", "max_depth", "k", "random_depth", "max_features"}
    if not set(header["params"]) <= known | {"min_samples_leaf", "random_state", "criterion"}:
        raise ModelError(f"unknown parameters {sorted(header['params'])}")
    return header


def _trees(arrays: dict, forest) -> list[Tree]:
    """The stored trees, after checking they are trees and hold exactly the remaining rows."""
    offsets, kind = arrays["tree_offsets"], arrays["kind"]
    n = len(kind)
    if any(len(arrays[a]) != n for a in Tree.FIELDS):
        raise ModelError("the node arrays have different lengths")
    check_offsets(offsets, n)
    if len(offsets) - 1 != forest.n_trees:
        raise ModelError(f"{len(offsets) - 1} trees stored, n_trees says {forest.n_trees}")
    leaf = kind == LEAF
    if not np.isin(kind, (LEAF, GREEDY, RANDOM)).all():
        raise ModelError("a node has an unknown kind")
    check_forest(leaf, arrays["left"], arrays["right"], offsets)
    p = arrays["X"].shape[1]
    if np.any(~leaf & ((arrays["feature"] < 0) | (arrays["feature"] >= p))):
        raise ModelError("a split tests a feature the rows do not have")
    if not np.isfinite(arrays["threshold"]).all():
        raise ModelError("a threshold is not finite")
    leaf_offsets = arrays["leaf_offsets"]
    if (
        len(leaf_offsets) != leaf.sum() + 1
        or leaf_offsets[0] != 0
        or np.any(np.diff(leaf_offsets) < 0)
        or leaf_offsets[-1] != len(arrays["leaf_rows"])
    ):
        raise ModelError("the leaves' rows are damaged")
    trees, first_leaf = [], 0
    for t in range(len(offsets) - 1):
        start, end = int(offsets[t]), int(offsets[t + 1])
        tree = Tree()
        for name in Tree.FIELDS:
            values = arrays[name][start:end]
            if name in ("left", "right"):
                values = np.where(values >= 0, values - start, -1)
            setattr(tree, name, [v.item() for v in values])
        for node in np.flatnonzero(leaf[start:end]):
            rows = arrays["leaf_rows"][leaf_offsets[first_leaf] : leaf_offsets[first_leaf + 1]]
            tree.rows[int(node)] = rows
            first_leaf += 1
        _check_rows(tree, forest)
        tree.compact(len(arrays["X"]))  # the caches are built again as deletions need them
        trees.append(tree)
    return trees


def _check_rows(tree: Tree, forest) -> None:
    """Every node's counts are those of the remaining rows that reach it, each leaf holds exactly
    them, every split keeps a row on each side, and node kinds sit at their depths."""
    X, y = forest._X.astype(np.float64), forest._y
    stack = [(0, np.flatnonzero(forest._alive), 0)]
    while stack:
        node, rows, depth = stack.pop()
        kind = tree.kind[node]
        if tree.count[node] != len(rows) or tree.positives[node] != int(y[rows].sum()):
            raise ModelError("a node's cached counts are not those of its rows")
        misplaced = kind != LEAF and (kind == RANDOM) != (depth < forest.random_depth)
        too_deep = forest.max_depth is not None and depth > forest.max_depth
        if too_deep or misplaced:
            raise ModelError("a node's kind does not fit its depth")
        if kind == LEAF:
            if not np.array_equal(tree.rows[node], rows):
                raise ModelError("a leaf's rows are not the rows that reach it")
            continue
        go_left = X[rows, tree.feature[node]] <= tree.threshold[node]
        if go_left.all() or not go_left.any():
            raise ModelError("a split sends every row to one side")
        stack += [(tree.left[node], rows[go_left], depth + 1)]
        stack += [(tree.right[node], rows[~go_left], depth + 1)]
