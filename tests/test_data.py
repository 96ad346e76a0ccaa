"""Data readers: CSV and LIBSVM, exact float32 values, located errors, agreement with sklearn."""

from __future__ import annotations

import numpy as np
import pytest

from veritas_dsl import data as data_module
from veritas_dsl.data import DataError, read_csv, read_libsvm


def test_csv_values_and_columns(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("a, b,label\n1,2.5,0\n-3,1e-3,1\n")
    data = read_csv("d", path)
    assert data.columns == ("a", "b", "label")
    assert data.values.dtype == np.float32
    assert data.values.tolist() == [[1, 2.5, 0], [-3, np.float32(1e-3), 1]]


@pytest.mark.parametrize(
    "text, line, column, message",
    [
        ("a,b\n1,2\n3,x\n", 3, 3, "`x` is not a number"),
        ("a,b\n1,2,3\n", 2, 1, "3 fields"),
        ("a,b\n1,nan\n", 2, 3, "`nan` is not a number"),
        ("a,b\n-inf,1\n", 2, 1, "`-inf` is not a number"),  # inputs are never infinite
        ("a,b\n1,1e39\n", 2, 3, "`1e39` is beyond the float32 range"),  # would be infinite
        ("", 1, 1, "empty"),
        # Bytes that are not UTF-8, and a field too long for the csv module, were internal errors.
        (b"a,b\n1,2\n3,\xff4\n", 3, 3, "byte 0xff is not UTF-8 text"),
        ("a,b\n1,2\n\u00e9\u00e9,\xff4\n".encode("latin-1"), 3, 1, "byte 0xe9 is not UTF-8"),
        (b"a,b\n" + "\u00e9,".encode() + b"\xa9\n", 2, 3, "byte 0xa9 is not UTF-8"),
        ("a,b\n1,2\n3," + "1" * 200_000 + "\n", 3, 1, "not a readable CSV line"),
    ],
)
def test_csv_errors_are_located(tmp_path, text, line, column, message):
    path = tmp_path / "d.csv"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(DataError, match=message) as error:
        read_csv("d", path)
    assert (error.value.line, error.value.column) == (line, column)


def write_libsvm(path, rows, first_index, rng):
    lines = []
    for label, entries in rows:
        fields = [f"{label:g}"] + [f"{i + first_index}:{v!r}" for i, v in entries]
        lines.append(" ".join(fields))
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("first_index", [0, 1])
def test_libsvm_agrees_with_scikit_learn(tmp_path, first_index):
    sklearn_datasets = pytest.importorskip("sklearn.datasets", reason="scikit-learn is optional")
    rng = np.random.default_rng(first_index)
    n = 12
    rows = []
    for r in range(40):
        count = 0 if r % 7 == 0 else int(rng.integers(1, n))  # some rows have no entries at all
        indices = sorted(rng.choice(n, size=count, replace=False).tolist())
        if r == 3:
            indices = sorted(set(indices) | {n - 1})  # the largest index
        rows.append(
            (
                int(rng.integers(0, 3)),
                [(i, float(rng.normal() * 10.0 ** rng.integers(-3, 4))) for i in indices],
            )
        )
    path = tmp_path / "d.libsvm"
    write_libsvm(path, rows, first_index, rng)
    ours = read_libsvm("d", path, n, first_index)
    X, y = sklearn_datasets.load_svmlight_file(str(path), n_features=n, zero_based=first_index == 0)
    assert ours.columns[-1] == "label" and ours.columns[0] == "f0"
    assert np.array_equal(ours.values[:, :n], X.toarray().astype(np.float32))
    assert np.array_equal(ours.values[:, n], y.astype(np.float32))


@pytest.mark.parametrize(
    "text, line, column, message",
    [
        ("1 1:0.5 2:x\n", 1, 9, "`2:x` is not index:value"),
        ("1 1:0.5\n0 11:1\n", 2, 3, "feature index 11 is outside 1..10"),
        ("1 0:1\n", 1, 3, "feature index 0 is outside 1..10"),
        ("one 1:1\n", 1, 1, "the label `one` is not a number"),
        ("1 1:1\n0 3\n", 2, 3, "`3` is not index:value"),
        (b"1 1:1\n0 2:\xff\n", 2, 5, "byte 0xff is not UTF-8 text"),
        ("1 1:1\n0 \u00b2:1\n", 2, 3, "is not index:value"),  # int("\u00b2") failed
    ],
)
def test_libsvm_errors_are_located(tmp_path, text, line, column, message):
    path = tmp_path / "d.libsvm"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(DataError, match=message) as error:
        read_libsvm("d", path, 10, 1)
    assert (error.value.line, error.value.column) == (line, column)


def test_a_utf8_byte_order_mark_is_not_part_of_the_first_column(tmp_path):
    path = tmp_path / "d.csv"
    path.write_bytes(b"\xef\xbb\xbfa,b\n1,2\n")
    assert read_csv("d", path).columns == ("a", "b")


def test_libsvm_skips_comments_qid_and_blank_lines(tmp_path):
    path = tmp_path / "d.libsvm"
    path.write_text("# header\n1 qid:3 1:2 # trailing\n\n0\t2:1.5\n")
    data = read_libsvm("d", path, 2, 1)
    assert data.values.tolist() == [[2, 0, 1], [0, 1.5, 0]]


def test_libsvm_refuses_a_table_too_large_to_hold(tmp_path, monkeypatch):
    path = tmp_path / "d.libsvm"
    path.write_text("1 1:2\n0 2:1.5\n")
    monkeypatch.setattr(data_module, "MAX_DENSE_BYTES", 2 * 3 * 4 - 1)  # 2 rows of 2 + label
    with pytest.raises(DataError, match="dense table"):
        read_libsvm("d", path, 2, 1)
    monkeypatch.setattr(data_module, "MAX_DENSE_BYTES", 2 * 3 * 4)
    assert read_libsvm("d", path, 2, 1).values.shape == (2, 3)
