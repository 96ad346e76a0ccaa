"""Saving a :class:`ShardedForest` to one file and reading it back, without pickle.

The file is a zip archive: ``header.json`` (format, version, the constructor's arguments with the
secret ``random_state``, the accountant's state, the noise generator's state), ``rows.npz`` (the
rows, labels, deleted marks, each row's shard and each shard's global ids) and ``shard_<i>.npz``
per shard, a :class:`DareForest` file checked as :meth:`DareForest.load` checks it. Each shard's
rows must be the file's rows of that shard, so a damaged or foreign file is a ModelError naming it.
"""

from __future__ import annotations

import io
import json
import tempfile
import zipfile
from fractions import Fraction
from pathlib import Path

import numpy as np

from veritas_dsl.model.archive import check_inflation
from veritas_dsl.model.errors import ModelError
from veritas_dsl.model.limits import model_size
from veritas_dsl.unlearning.dare.forest import DareForest
from veritas_dsl.unlearning.dare.store import _DAMAGED

FILE_FORMAT = "veritas-dsl-shards"
FILE_VERSION = 1


def save(forest, path: str | Path) -> None:
    """Write ``forest`` to ``path``, whole or not at all (a temporary file renamed over it)."""
    accountant = forest.accountant
    header = {
        "format": FILE_FORMAT,
        "version": FILE_VERSION,
        "params": forest.params(),
        "accountant": {
            "spent": str(accountant.spent),
            "answers": accountant.answers,
            "draws": accountant.draws,
        },
        "noise": forest._noise.bit_generator.state,
    }
    rows = io.BytesIO()
    ids = {f"ids_{i}": np.asarray(a, dtype=np.int64) for i, a in enumerate(forest._ids)}
    np.savez_compressed(
        rows, X=forest._X, y=forest._y, alive=forest._alive, shard=forest._shard, **ids
    )
    path = Path(path)
    partial = path.with_name(path.name + ".partial")
    try:
        with tempfile.TemporaryDirectory() as folder, zipfile.ZipFile(partial, "w") as archive:
            archive.writestr("header.json", json.dumps(header))
            archive.writestr("rows.npz", rows.getvalue())
            for i, shard in enumerate(forest._shards):
                shard.save(Path(folder) / "shard.npz")
                archive.write(Path(folder) / "shard.npz", f"shard_{i}.npz")
        partial.replace(path)
    except OSError as error:
        partial.unlink(missing_ok=True)
        raise ModelError(f"{path}: cannot write the forest ({error.strerror})") from None
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def load(cls, path: str | Path):
    """Read a forest written by :func:`save`; anything else is a ModelError naming ``path``."""
    size = model_size(Path(path), "dare")
    if not zipfile.is_zipfile(path):
        raise ModelError(f"{path}: not a sharded forest file (not a zip archive)")
    try:
        with zipfile.ZipFile(path) as archive, tempfile.TemporaryDirectory() as folder:
            # what extracting it would write, before writing it
            check_inflation(sum(m.file_size for m in archive.infolist()), size)
            if "header.json" not in archive.namelist():
                raise ModelError(f"not a {FILE_FORMAT} file")
            header = _header(archive.read("header.json"))
            forest = cls(**header["params"])
            with np.load(io.BytesIO(archive.read("rows.npz")), allow_pickle=False) as file:
                arrays = {name: file[name] for name in file.files}
            shards = []
            for i in range(forest.n_shards):
                archive.extract(f"shard_{i}.npz", folder)
                shards.append(DareForest.load(Path(folder) / f"shard_{i}.npz"))
        _assemble(forest, header, arrays, shards)
    except ModelError as error:
        raise ModelError(f"{path}: {error}") from None
    except _DAMAGED as error:
        raise ModelError(f"{path}: not a sharded forest file ({error})") from None
    return forest


def _header(text: bytes) -> dict:
    try:
        header = json.loads(text)
        ok = header["format"] == FILE_FORMAT and isinstance(header["params"], dict)
    except (KeyError, ValueError, TypeError):
        ok = False
    if not ok:
        raise ModelError(f"not a {FILE_FORMAT} file")
    if header.get("version") != FILE_VERSION:
        raise ModelError(f"file version {header.get('version')!r}; we read {FILE_VERSION}")
    return header


def _assemble(forest, header: dict, arrays: dict, shards: list) -> None:
    """Set the forest's state from the file, after checking each shard holds its rows."""
    try:
        X, y, alive, shard = (arrays[k] for k in ("X", "y", "alive", "shard"))
        ids = [arrays[f"ids_{i}"] for i in range(forest.n_shards)]
        spent = Fraction(header["accountant"]["spent"])
        answers, draws = int(header["accountant"]["answers"]), int(header["accountant"]["draws"])
    except (KeyError, ValueError, TypeError, ZeroDivisionError):
        raise ModelError("the rows or the accountant's state are damaged") from None
    n = len(X)
    if X.ndim != 2 or y.shape != (n,) or alive.shape != (n,) or shard.shape != (n,):
        raise ModelError("the training rows, labels, marks and shards do not match")
    if alive.dtype != np.bool_ or not np.issubdtype(shard.dtype, np.integer):
        raise ModelError("the deleted marks or the shards are damaged")
    for i, (mine, part) in enumerate(zip(ids, shards, strict=True)):
        if not _holds(part, mine, i, X, y, alive, shard):
            raise ModelError(f"shard {i}'s forest does not hold its rows")
    if not (0 <= spent <= Fraction(repr(forest.accountant.budget)) and answers >= 0 <= draws):
        raise ModelError("the accountant's state is damaged")
    try:
        noise = np.random.Generator(np.random.PCG64())
        noise.bit_generator.state = header["noise"]
    except (TypeError, ValueError, KeyError):
        raise ModelError("the noise generator's state is unreadable") from None
    forest._X, forest._y, forest._alive, forest._shard = X, y, alive, shard.astype(np.int64)
    forest._ids, forest._shards, forest._noise = ids, shards, noise
    forest.accountant.spent, forest.accountant.answers = spent, answers
    forest.accountant.draws = draws


def _holds(part, mine: np.ndarray, i: int, X, y, alive, shard) -> bool:
    """``part`` holds exactly the file's rows ``mine`` (increasing ids of shard ``i``), with their
    labels and deleted marks, and every remaining row of shard ``i`` is among them."""
    n = len(X)
    if mine.ndim != 1 or not np.issubdtype(mine.dtype, np.integer) or len(mine) != part.n_rows:
        return False
    if len(mine) and (np.any(np.diff(mine) <= 0) or mine[0] < 0 or mine[-1] >= n):
        return False
    if np.any(shard[mine] != i) or part._X.shape[1] != X.shape[1]:
        return False
    if np.any(alive & (shard == i) & ~np.isin(np.arange(n), mine)):
        return False
    return (
        np.array_equal(part._X, X[mine])
        and np.array_equal(part.classes_[part._y], y[mine])
        and np.array_equal(part._alive, alive[mine])
    )
