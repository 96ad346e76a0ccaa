"""Read a scikit-learn estimator from a skops file, trusting only what a tree model is made of.

skops rebuilds an object by calling the types its file names, with arguments from the file: a
type named there is code that runs. So a file is read only when every node of it is one of
:data:`ALLOWED`, a reviewed table of (skops loader, type) pairs: the estimators
:func:`~veritas_dsl.model.sklearn.from_sklearn` imports, their trees, the loss, link and binning
objects of gradient boosting, random states, numpy arrays and scalars, and plain containers.
Anything else (a function, a numpy routine, a pipeline) is refused, naming it, before skops
imports or calls anything. skops' own audit (``get_untrusted_types``) runs as well and must name
nothing outside the table: it also sees names a file hides in data, such as a random generator's
bit generator.

Trees are trusted here though skops leaves them to the caller, because a crafted tree can send
scikit-learn's predictor out of bounds: the importers check every node array before scikit-learn
evaluates a tree.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

from veritas_dsl.model.archive import check_inflation
from veritas_dsl.model.errors import ModelError

_BUILTIN_TYPES = ("builtins.str", "builtins.int", "builtins.float", "builtins.bool")
_NUMPY_SCALARS = tuple(
    f"numpy.{name}"
    for name in (
        "bool",
        "bool_",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float16",
        "float32",
        "float64",
        "str_",
    )
)
_ESTIMATORS = (
    "sklearn.tree._classes.DecisionTreeClassifier",
    "sklearn.tree._classes.DecisionTreeRegressor",
    "sklearn.tree._classes.ExtraTreeClassifier",
    "sklearn.tree._classes.ExtraTreeRegressor",
    "sklearn.ensemble._forest.RandomForestClassifier",
    "sklearn.ensemble._forest.RandomForestRegressor",
    "sklearn.ensemble._forest.ExtraTreesClassifier",
    "sklearn.ensemble._forest.ExtraTreesRegressor",
    "sklearn.ensemble._gb.GradientBoostingClassifier",
    "sklearn.ensemble._gb.GradientBoostingRegressor",
    "sklearn.ensemble._hist_gradient_boosting.gradient_boosting.HistGradientBoostingClassifier",
    "sklearn.ensemble._hist_gradient_boosting.gradient_boosting.HistGradientBoostingRegressor",
)
# What those estimators hold: gradient boosting's constant first stage, its loss and link
# objects; histogram boosting's binning, predictors and label encoder.
_PARTS = (
    "sklearn.dummy.DummyClassifier",
    "sklearn.dummy.DummyRegressor",
    "sklearn.ensemble._hist_gradient_boosting.binning._BinMapper",
    "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor",
    "sklearn.preprocessing._label.LabelEncoder",
    *(
        f"sklearn._loss.loss.{name}"
        for name in (
            "AbsoluteError",
            "ExponentialLoss",
            "HalfBinomialLoss",
            "HalfGammaLoss",
            "HalfMultinomialLoss",
            "HalfPoissonLoss",
            "HalfSquaredError",
            "HuberLoss",
            "PinballLoss",
        )
    ),
    *(
        f"sklearn._loss.link.{name}"
        for name in (
            "HalfLogitLink",
            "IdentityLink",
            "Interval",
            "LogLink",
            "LogitLink",
            "MultinomialLogit",
        )
    ),
)
# The compiled halves of the losses above, which skops rebuilds by calling them.
_CY_LOSSES = tuple(
    f"sklearn._loss._loss.{name}"
    for name in (
        "CyAbsoluteError",
        "CyExponentialLoss",
        "CyHalfBinomialLoss",
        "CyHalfGammaLoss",
        "CyHalfMultinomialLoss",
        "CyHalfPoissonLoss",
        "CyHalfSquaredError",
        "CyHuberLoss",
        "CyPinballLoss",
    )
)

#: skops loader -> the types a file may name with it. Each loader rebuilds its node in one fixed
#: way (an object's ``__new__`` and state, an array from numpy's own format, a container), so a
#: type is trusted only in the role a tree model gives it.
ALLOWED: dict[str, frozenset[str]] = {
    "JsonNode": frozenset({"builtins.str"}),
    "DictNode": frozenset({"builtins.dict"}),
    "ListNode": frozenset({"builtins.list"}),
    "TupleNode": frozenset({"builtins.tuple"}),
    "SliceNode": frozenset({"builtins.slice"}),
    "TypeNode": frozenset(_BUILTIN_TYPES + _NUMPY_SCALARS),  # a dict's key types
    "NdArrayNode": frozenset(("numpy.ndarray", *_NUMPY_SCALARS)),
    "RandomStateNode": frozenset({"numpy.random.mtrand.RandomState"}),
    "RandomGeneratorNode": frozenset({"numpy.random._generator.Generator"}),
    "ObjectNode": frozenset(_ESTIMATORS + _PARTS),
    "TreeNode": frozenset({"sklearn.tree._tree.Tree"}),
    "LossNode": frozenset(_CY_LOSSES),
}
_TYPES = frozenset().union(*ALLOWED.values())


def read(path: Path) -> object:
    """The estimator saved in the skops file at ``path``; a :class:`ModelError` when the file is
    not a readable skops file or names anything outside :data:`ALLOWED`."""
    try:
        import skops.io
    except ImportError:
        raise ModelError("skops is not installed (pip install 'veritas-dsl[sklearn]')") from None
    data = path.read_bytes()
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            sizes = {info.filename: info.file_size for info in archive.infolist()}
            if "schema.json" not in sizes:
                raise ValueError("it has no schema.json")
            check_inflation(sizes["schema.json"], len(data))
            schema = json.loads(archive.read("schema.json"))
        foreign, members = _walk(schema)
        unknown = [m for m in members if not isinstance(m, str) or m not in sizes]
        if unknown:
            raise ValueError(f"it has no member {repr(unknown[0])[:100]}")
        # skops reads a member once for each node that names it, before anything is checked
        check_inflation(sizes["schema.json"] + sum(sizes[m] for m in members), len(data))
    except (zipfile.BadZipFile, KeyError, ValueError, RecursionError, EOFError) as error:
        raise ModelError(f"{path}: not a readable skops file ({error})") from None
    except Exception as error:  # zipfile raises more kinds on a corrupt archive
        raise ModelError(f"{path}: not a readable skops file ({error!r})") from None
    _refuse(path, foreign)
    try:
        untrusted = skops.io.get_untrusted_types(data=data)
    except Exception as error:  # skops raises many kinds on a corrupt file
        raise ModelError(f"{path}: not a readable skops file ({error})") from None
    _refuse(path, sorted(set(untrusted) - _TYPES))
    try:
        return skops.io.loads(data, trusted=untrusted)
    except Exception as error:  # as above
        raise ModelError(f"{path}: not a readable skops file ({error})") from None


def _refuse(path: Path, names: list[str]) -> None:
    if names:
        shown = [n if len(n) <= 100 and n.isprintable() else repr(n[:100]) for n in names[:5]]
        more = f" and {len(names) - 5} more" if len(names) > 5 else ""
        raise ModelError(
            f"{path}: the file names {', '.join(shown)}{more}, which no scikit-learn tree model "
            "holds; it is not loaded, since skops would call them to load it"
        )


def _walk(schema: object) -> tuple[list[str], list[object]]:
    """Every node of ``schema`` whose (loader, type) pair is not allowed, as ``type`` (or
    ``type (loader)`` when the type is allowed in another role); and the archive member each
    node that names one (``file``) reads, as often as named. Iterative: a file may nest
    deeply."""
    found: set[str] = set()
    members: list[object] = []
    stack = [schema]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            if "__loader__" in item:
                loader = str(item["__loader__"])
                name = f"{item.get('__module__')}.{item.get('__class__')}"
                if name not in ALLOWED.get(loader, ()):
                    found.add(name if name not in _TYPES else f"{name} ({loader})")
                if "file" in item:
                    members.append(item["file"])
            stack.extend(item.values())
    return sorted(found), members
