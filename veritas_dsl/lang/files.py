"""How checking a spec reads the model and data files it names. The command line reads each file
afresh; the language server (``veritas_dsl.editor``) passes a subclass that keeps what it read,
by path and modification time, so that checking on every keystroke stays fast. Either keeps the
SHA-256 of each model file's bytes as it loaded them, for the spec's digest."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from veritas_dsl.data import Dataset, read_csv, read_libsvm
from veritas_dsl.model.ensemble import Ensemble
from veritas_dsl.model.load import load_file, load_forest

if TYPE_CHECKING:
    from veritas_dsl.unlearning.dare import DareForest


class Files:
    """Reads files as the functions it wraps do, with their errors (``ModelError``,
    ``DataError``, ``OSError``)."""

    def __init__(self) -> None:
        self.sha256: dict[str, bytes] = {}  # by the path as given: of each model file loaded

    def model(
        self, path: Path, kind: str, trust_pickle: bool, options: dict[str, float]
    ) -> Ensemble:
        loaded = load_file(path, kind, trust_pickle, options)
        self.sha256[str(path)] = loaded.sha256
        return loaded.model

    def forest(self, path: Path) -> DareForest:
        return load_forest(path)

    def csv(self, name: str, path: Path) -> Dataset:
        return read_csv(name, path)

    def libsvm(self, name: str, path: Path, n_features: int, first_index: int) -> Dataset:
        return read_libsvm(name, path, n_features, first_index)
