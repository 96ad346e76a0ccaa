"""Load a model file of any supported format into an :class:`Ensemble`.

Formats: ``xgboost`` (JSON or UBJSON model files), ``xgboost_dump`` (JSON tree dumps, with the
options they lack), ``lightgbm`` (text model files), ``sklearn`` (skops files, which load without
pickle; pickle and joblib files only when the caller passes ``trust_pickle=True``, since
unpickling runs code), ``catboost`` (JSON files of ``save_model(format="json")``), ``onnx``
(``.onnx`` files with a tree-ensemble node), ``ensemble`` (our own JSON) and ``dare`` (a
:class:`DareForest` saved by its ``save``; the forest as it is now, validated against its own
``predict_proba``).

A process reads a model file once: :func:`load_file` keeps the last models it loaded, each under
its file's path, size, modification time and SHA-256, and gives the same model while all four
stay the same (specs that share a model file share the model; everything reads it, nothing
changes it).
"""

from __future__ import annotations

import contextlib
import hashlib
from collections import OrderedDict
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from veritas_dsl.model import skops_file
from veritas_dsl.model.ensemble import FILE_FORMAT, Ensemble, ModelError
from veritas_dsl.model.limits import model_bytes, model_size
from veritas_dsl.names import MODEL_FORMATS

if TYPE_CHECKING:
    from veritas_dsl.unlearning.dare import DareForest

FORMATS = MODEL_FORMATS

#: Options each format takes (name -> what it is); only tree dumps need any.
FORMAT_OPTIONS: dict[str, dict[str, str]] = {
    "xgboost_dump": {
        "base_score": "a number (the margin the dump does not record)",
        "classes": "a whole number: 1, or the classes of a multiclass dump",
        "features": "a whole number of features",
    },
}

_PICKLE_SUFFIXES = (".pkl", ".pickle", ".joblib")
# How the caller's user allows pickles, as they would write it; None where nothing can.
_PICKLE_OPTION: ContextVar[str | None] = ContextVar("pickle_option", default="trust_pickle=True")
# The first key of a CatBoost JSON model (its keys are written in alphabetical order).
_CATBOOST_KEYS = (b'"ctr_data"', b'"features_info"')


def detect_format(path: Path) -> str:
    """Guess a model file's format from its name and, for JSON, its first bytes."""
    suffix = path.suffix.lower()
    if suffix == ".ubj":
        return "xgboost"
    if suffix == ".txt":
        return "lightgbm"
    if suffix in (".skops", *_PICKLE_SUFFIXES):
        return "sklearn"
    if suffix == ".dare":
        return "dare"
    if suffix == ".onnx":
        return "onnx"
    if suffix == ".json":
        with path.open("rb") as handle:
            head = handle.read(256)
        if FILE_FORMAT.encode() in head:
            return "ensemble"
        if any(key in head for key in _CATBOOST_KEYS):
            return "catboost"
        return "xgboost_dump" if head.lstrip().startswith(b"[") else "xgboost"
    raise ModelError(
        f"{path}: cannot tell the model format from the name; give one of {', '.join(FORMATS)}"
    )


def load_model(
    path: str | Path,
    format: str | None = None,
    trust_pickle: bool = False,
    options: dict[str, float] | None = None,
) -> Ensemble:
    """Load the model at ``path``; ``format`` is detected from the file when not given.

    ``options`` are those of :data:`FORMAT_OPTIONS` for the format.
    """
    return load_file(path, format, trust_pickle, options).model


@dataclass(frozen=True)
class Loaded:
    """A model and the SHA-256 of the bytes it was loaded from."""

    model: Ensemble
    sha256: bytes


#: How many loaded models a process keeps (the language server's files change as users edit).
KEPT_MODELS = 8
_kept: OrderedDict[tuple, Loaded] = OrderedDict()


def load_file(
    path: str | Path,
    format: str | None = None,
    trust_pickle: bool = False,
    options: dict[str, float] | None = None,
) -> Loaded:
    """:func:`load_model`, with the digest of the bytes read; a file this process loaded
    already, unchanged, is not parsed again."""
    options = options or {}
    path = Path(path)
    model_size(path, format)  # before anything reads it (detect_format reads its first bytes)
    try:
        if format is None:
            format = detect_format(path)
        stat = path.stat()
        data = model_bytes(path, format)
        sha256 = hashlib.sha256(data).digest()
        key = (
            str(path.resolve()),
            format,
            trust_pickle,
            tuple(sorted(options.items())),
            stat.st_size,
            stat.st_mtime_ns,
            sha256,
        )
        loaded = _kept.get(key)
        if loaded is None:
            loaded = Loaded(_load(path, format, trust_pickle, options, data), sha256)
            _kept[key] = loaded
            while len(_kept) > KEPT_MODELS:
                _kept.popitem(last=False)
        return loaded
    except OSError as error:
        raise ModelError(
            f"{path}: cannot read the model file ({error.strerror or error})"
        ) from None


def load_forest(path: str | Path) -> DareForest:
    """The :class:`DareForest` saved at ``path`` (format ``dare``), for the models derived from
    it; a missing, unreadable or corrupt file is a ``ModelError`` naming the path."""
    # Imported here: the forest's kernels (Numba) load only for a spec that reads a forest.
    from veritas_dsl.unlearning.dare import DareForest

    path = Path(path)
    try:
        return DareForest.load(path)  # checks the path and the size first
    except OSError as error:
        raise ModelError(
            f"{path}: cannot read the model file ({error.strerror or error})"
        ) from None


def _load(
    path: Path, format: str, trust_pickle: bool, options: dict[str, float], data: bytes
) -> Ensemble:
    """The model of the file at ``path``, whose bytes are ``data`` (the XGBoost reader takes
    them; the other readers read the file themselves)."""
    if format == "xgboost":
        from veritas_dsl.model.xgboost import from_file

        return from_file(Ensemble, path, data)
    if format == "xgboost_dump":
        return Ensemble.from_xgboost_dump(
            path,
            base_score=float(options.get("base_score", 0.0)),
            n_classes=int(options.get("classes", 1)),
            n_features=int(options["features"]) if "features" in options else None,
        )
    if format == "lightgbm":
        return Ensemble.from_lightgbm(path)
    if format == "catboost":
        return Ensemble.from_catboost(path)
    if format == "onnx":
        return Ensemble.from_onnx(path)
    if format == "ensemble":
        return Ensemble.load(path)
    if format == "dare":
        return load_forest(path).to_ensemble()
    if format == "sklearn":
        estimator = _load_sklearn(path, trust_pickle)
        try:
            return Ensemble.from_sklearn(estimator)
        except ModelError as error:
            raise ModelError(f"{path}: {error}") from None
        except Exception as error:  # a corrupt file can rebuild an estimator with broken state
            raise ModelError(f"{path}: the estimator in this file is broken ({error!r})") from None
    raise ModelError(f"unknown model format {format!r}; expected one of {', '.join(FORMATS)}")


@contextlib.contextmanager
def pickle_option(option: str | None):
    """Meanwhile, a refused pickle names ``option`` as the way to allow it (``--trust-pickle``
    for the command line; None: the caller has no such option). Python's keyword otherwise."""
    token = _PICKLE_OPTION.set(option)
    try:
        yield
    finally:
        _PICKLE_OPTION.reset(token)


class PickleRefused(ModelError):
    """A pickle or joblib file loaded without trust; ``reason`` and ``help`` are the parts of
    the message that a diagnostic shows apart."""

    def __init__(self, path: Path) -> None:
        option = _PICKLE_OPTION.get()
        self.reason = "loading a pickle runs code from the file"
        self.help = "save the model with skops instead" + (
            f", or pass {option} if you trust this file" if option else "; it is never loaded here"
        )
        super().__init__(f"{path}: {self.reason}; {self.help}")


def _load_sklearn(path: Path, trust_pickle: bool) -> object:
    if path.suffix.lower() in _PICKLE_SUFFIXES:
        if not trust_pickle:
            raise PickleRefused(path)
        try:
            if path.suffix.lower() == ".joblib":
                import joblib

                return joblib.load(path)
            import pickle

            with path.open("rb") as handle:
                return pickle.load(handle)
        except OSError:
            raise
        except Exception as error:  # unpickling a corrupt file raises almost anything
            raise ModelError(f"{path}: cannot unpickle this file ({error!r})") from None
    return skops_file.read(path)
