"""``DareForest.save`` / ``load``: the same file and the same deletions give the same forest; a
corrupt or foreign file is a ModelError naming the path."""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pytest
from dare_helpers import structure

from veritas_dsl.model import ModelError
from veritas_dsl.unlearning import DareForest


def _forest(**params) -> tuple[DareForest, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    X = rng.integers(0, 6, (60, 4)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] + rng.integers(0, 3, 60) > 6).astype(int)
    settings = dict(n_trees=4, max_depth=5, k=2, random_depth=1, random_state=11)
    return DareForest(**(settings | params)).fit(X, y), X, y


def test_same_file_and_same_deletions_give_the_same_forest(tmp_path):
    forest, _, _ = _forest()
    forest.delete([3, 4])
    path = tmp_path / "forest.npz"
    forest.save(path)
    again = DareForest.load(path)
    assert structure(again) == structure(forest)
    assert (
        again.params() == forest.params() and again.last_deletion_cost == forest.last_deletion_cost
    )
    # Deletions that regrow random nodes draw from the saved generator state: same draws.
    rows = np.random.default_rng(0).permutation(forest.remaining())[:30]
    for chunk in np.array_split(rows, 10):
        forest.delete(chunk)
        again.delete(chunk)
        assert structure(again) == structure(forest)
        assert again.last_deletion_cost == forest.last_deletion_cost
    assert np.array_equal(
        again.to_ensemble().eval(np.eye(4)), forest.predict_proba(np.eye(4))[:, 1]
    )


def test_a_loaded_forest_still_forgets_exactly(tmp_path):
    forest, X, y = _forest(k=None, max_features=None, random_depth=0)
    forest.save(tmp_path / "f.npz")
    loaded = DareForest.load(tmp_path / "f.npz").delete([0, 1, 2])
    keep = np.arange(3, len(X))
    assert structure(loaded) == structure(DareForest(**forest.params()).fit(X[keep], y[keep]), keep)


def _rewrite(path, **changes) -> None:
    """Save the file again with ``changes``; an array changed to None is left out."""
    with np.load(path, allow_pickle=False) as file:
        arrays = {name: file[name] for name in file.files}
    arrays.update(changes)
    np.savez(path, **{name: array for name, array in arrays.items() if array is not None})


def _header(path) -> dict:
    with np.load(path, allow_pickle=False) as file:
        return json.loads(str(file["header"][()]))


@pytest.mark.parametrize(
    "damage",
    [
        "truncated",
        "text",
        "pickle",
        "count",
        "leaf_rows",
        "threshold",
        "child",
        "format",
        "params",
        "rng",
        "X",
        "missing",
        "claimed",
        "inflated",
    ],
)
def test_a_corrupt_or_foreign_file_is_a_model_error_naming_it(tmp_path, damage):
    forest, _, _ = _forest()
    path = tmp_path / "forest.npz"
    forest.save(path)
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[:300])
    elif damage == "text":
        path.write_text("model = 1\n")
    elif damage == "pickle":
        np.savez(path, header=np.array([{"format": "veritas-dsl-dare"}], dtype=object))
    elif damage == "count":
        count = np.load(path)["count"].copy()
        count[3] += 1
        _rewrite(path, count=count)
    elif damage == "leaf_rows":
        rows = np.load(path)["leaf_rows"].copy()
        rows[[0, -1]] = rows[[-1, 0]]
        _rewrite(path, leaf_rows=rows)
    elif damage == "threshold":
        threshold = np.load(path)["threshold"].copy()
        threshold[0] = 1e9  # every row goes left
        _rewrite(path, threshold=threshold)
    elif damage == "child":
        left = np.load(path)["left"].copy()
        left[0] = 10**9
        _rewrite(path, left=left)
    elif damage in ("format", "params", "rng"):
        header = _header(path)
        header.update(
            {
                "format": {"format": "something-else"},
                "params": {"params": {"n_trees": -3}},
                "rng": {"rng": {"bit_generator": "nonsense"}},
            }[damage]
        )
        _rewrite(path, header=np.array(json.dumps(header)))
    elif damage == "X":
        X = np.load(path)["X"].copy()
        X[0, 0] = np.nan
        _rewrite(path, X=X)
    elif damage == "claimed":  # numpy allocates what a header claims: refused before it does
        header = io.BytesIO()
        shape = {"descr": "<f4", "fortran_order": False, "shape": (10**11, 4)}
        np.lib.format.write_array_header_1_0(header, shape)
        _rewrite(path, X=None)
        with zipfile.ZipFile(path, "a") as archive:
            archive.writestr("X.npy", header.getvalue())
    elif damage == "inflated":  # 300 MB of zeros in 300 kB: a few more, and memory runs out
        _rewrite(path, X=None)
        with (
            zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED) as archive,
            archive.open("X.npy", "w") as member,
        ):
            for _ in range(300):
                member.write(bytes(1 << 20))
    else:
        _rewrite(path)
        with np.load(path) as file:
            arrays = {n: file[n] for n in file.files if n != "kind"}
        np.savez(path, **arrays)
    reason = {"claimed": "claims more than it holds", "inflated": "inflate its"}.get(damage, "")
    with pytest.raises(ModelError, match=str(path).replace(".", r"\.") + ".*" + reason):
        DareForest.load(path)


def test_a_missing_file_is_a_model_error(tmp_path):
    with pytest.raises(ModelError, match="no such model file"):
        DareForest.load(tmp_path / "absent.npz")


def test_save_writes_the_name_given_and_nothing_else(tmp_path):
    forest, _, _ = _forest()
    forest.save(tmp_path / "forest.dare")
    assert [p.name for p in tmp_path.iterdir()] == ["forest.dare"]
    assert structure(DareForest.load(tmp_path / "forest.dare")) == structure(forest)


def test_a_failed_save_leaves_no_file(tmp_path, monkeypatch):
    forest, _, _ = _forest()

    def full_disk(file, **arrays):  # part of the archive is written, then the disk is full
        file.write(b"PK\x03\x04")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np, "savez_compressed", full_disk)
    with pytest.raises(OSError, match="No space left"):
        forest.save(tmp_path / "forest.dare")
    assert list(tmp_path.iterdir()) == []
