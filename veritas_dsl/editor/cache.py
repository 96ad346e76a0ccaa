"""Model and data files read once per version: the language server checks a spec on every
keystroke, and a model file is read again only when its modification time or size changes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from stat import S_ISREG
from typing import TYPE_CHECKING, Any

from veritas_dsl.data import DataError, Dataset
from veritas_dsl.lang.files import Files
from veritas_dsl.model.ensemble import Ensemble, ModelError
from veritas_dsl.model.summary import ModelSummary, summarize

if TYPE_CHECKING:
    from veritas_dsl.unlearning.dare import DareForest


class CachedFiles(Files):
    """:class:`Files` that keep each file's contents, or the error reading it gave, until the
    file changes. Everything kept is only read afterwards (a check derives models on copies)."""

    def __init__(self) -> None:
        super().__init__()
        self._kept: dict[tuple, tuple[tuple[int, int], Any, Exception | None]] = {}
        self._latest: dict[str, Any] = {}  # by resolved path: the last contents read well
        self._summaries: dict[int, tuple[Ensemble, ModelSummary]] = {}
        self.reads = 0  # files actually read (tests count them)

    def model(
        self, path: Path, kind: str, trust_pickle: bool, options: dict[str, float]
    ) -> Ensemble:
        key = ("model", kind, trust_pickle, tuple(sorted(options.items())))
        return self._read(key, path, lambda: Files.model(self, path, kind, trust_pickle, options))

    def forest(self, path: Path) -> DareForest:
        return self._read(("forest",), path, lambda: Files.forest(self, path))

    def csv(self, name: str, path: Path) -> Dataset:
        return self._read(("csv", name), path, lambda: Files.csv(self, name, path))

    def libsvm(self, name: str, path: Path, n_features: int, first_index: int) -> Dataset:
        key = ("libsvm", name, n_features, first_index)
        return self._read(
            key, path, lambda: Files.libsvm(self, name, path, n_features, first_index)
        )

    def latest(self, path: Path) -> Any:
        """What was last read well from ``path`` (a model, a forest or a data set), or None."""
        try:
            return self._latest.get(str(path.resolve()))
        except ValueError:  # a NUL byte: nothing was read
            return None

    def summary(self, model: Ensemble) -> ModelSummary:
        """``ver inspect``'s summary of ``model``, computed once per model."""
        kept = self._summaries.get(id(model))
        if kept is None or kept[0] is not model:
            kept = self._summaries[id(model)] = (model, summarize(model))
        return kept[1]

    def _read(self, key: tuple, path: Path, read: Callable[[], Any]) -> Any:
        try:
            stat = path.stat()
        except (OSError, ValueError):  # ValueError: a NUL byte in the path
            return read()  # raises the error the command line reports
        if not S_ISREG(stat.st_mode):  # a FIFO or a device: the readers refuse it unread
            return read()
        stamp, where = (stat.st_mtime_ns, stat.st_size), str(path.resolve())
        kept = self._kept.get((where, *key))
        if kept is None or kept[0] != stamp:
            self.reads += 1
            try:
                kept = (stamp, read(), None)
            except (ModelError, DataError, OSError) as error:
                kept = (stamp, None, error)
            self._kept[(where, *key)] = kept
        _, value, error = kept
        if error is not None:
            raise error
        self._latest[where] = value
        return value
