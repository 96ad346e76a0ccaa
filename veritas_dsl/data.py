"""Data sets a spec reads rows from: CSV files and LIBSVM / svmlight files.

Values become float32 exactly as the libraries' own readers round them (once, from the decimal
text). A malformed file is a :class:`DataError` naming the file, line and column.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from veritas_dsl.float32 import parse_float32


@dataclass(frozen=True)
class Dataset:
    """Rows of named float32 columns, and the file they came from."""

    name: str
    columns: tuple[str, ...]
    values: np.ndarray  # (n_rows, n_columns) float32
    path: str

    def __len__(self) -> int:
        return len(self.values)


#: The largest table a LIBSVM file may expand to (rows are held densely, one float32 per entry).
MAX_DENSE_BYTES = 4 * 2**30


class DataError(ValueError):
    """A data file that cannot be read as declared; ``line`` and ``column`` count from 1."""

    def __init__(
        self, message: str, path: str, line: int, column: int, width: int = 1, help: str = ""
    ):
        super().__init__(message)
        self.message, self.path, self.line, self.column = message, path, line, column
        self.width, self.help = width, help


def read_csv(name: str, path: Path) -> Dataset:
    """A CSV file whose first line names the columns; every value a number."""
    shown = str(path)
    reader = csv.reader(io.StringIO(_text(path), newline=""))
    try:
        lines = list(reader)
    except csv.Error as error:
        raise DataError(f"not a readable CSV line ({error})", shown, reader.line_num, 1) from None
    if not lines or not lines[0]:
        raise DataError(
            f"data `{name}` is empty", shown, 1, 1, help="the first line names the columns"
        )
    header = tuple(h.strip() for h in lines[0])
    texts: list[str] = []
    n_rows = 0
    for number, record in enumerate(lines[1:], start=2):
        if not record:
            continue
        if len(record) != len(header):
            raise DataError(
                f"line has {len(record)} fields, the header {len(header)}", shown, number, 1
            )
        column = 1
        for text in record:
            if not _is_number(text):
                raise DataError(
                    f"`{text}` is not a number",
                    shown,
                    number,
                    column,
                    max(1, len(text)),
                    help="data values are finite numbers; missing values are not supported",
                )
            column += len(text) + 1
        texts += record
        n_rows += 1
    values = parse_float32(texts).reshape(n_rows, len(header))
    return Dataset(name, header, values, shown)


def read_libsvm(name: str, path: Path, n_features: int, first_index: int = 1) -> Dataset:
    """A LIBSVM / svmlight file: ``label index:value ...`` per line, absent entries 0.

    Columns are ``f0 .. f{n-1}`` and ``label``. Indices count from ``first_index`` (LIBSVM's own
    files count from 1); an index outside ``first_index .. first_index + n_features - 1`` is an
    error, as is anything that is not a number. ``qid:`` entries and ``#`` comments are skipped.
    """
    shown = str(path)
    labels: list[str] = []
    rows: list[int] = []
    columns: list[int] = []
    texts: list[str] = []
    for number, raw in enumerate(io.StringIO(_text(path), newline=None), start=1):
        line = raw.split("#", 1)[0].rstrip("\n")
        stripped = line.strip()
        if not stripped:
            continue
        fields = _fields(line)
        label, label_column = fields[0]
        if not _is_number(label):
            raise DataError(
                f"the label `{label}` is not a number", shown, number, label_column, len(label)
            )
        row = len(labels)
        labels.append(label)
        for text, column in fields[1:]:
            index_text, sep, value = text.partition(":")
            if index_text == "qid":
                continue
            if (
                not sep
                or not (index_text.isascii() and index_text.isdigit())
                or not _is_number(value)
            ):
                raise DataError(f"`{text}` is not index:value", shown, number, column, len(text))
            index = int(index_text) - first_index
            if not 0 <= index < n_features:
                last = first_index + n_features - 1
                raise DataError(
                    f"feature index {index_text} is outside {first_index}..{last}",
                    shown,
                    number,
                    column,
                    len(index_text),
                    help="check the declared feature count and first index",
                )
            rows.append(row)
            columns.append(index)
            texts.append(value)
    size = len(labels) * (n_features + 1) * 4
    if size > MAX_DENSE_BYTES:
        raise DataError(
            f"{len(labels)} rows of {n_features} features take {size / 2**30:.1f} GiB as a "
            f"dense table, more than the {MAX_DENSE_BYTES / 2**30:.0f} GiB allowed",
            shown,
            1,
            1,
            help="check the declared feature count",
        )
    values = np.zeros((len(labels), n_features + 1), dtype=np.float32)
    values[rows, columns] = parse_float32(texts)
    values[:, n_features] = parse_float32(labels)
    names = (*(f"f{i}" for i in range(n_features)), "label")
    return Dataset(name, names, values, shown)


@dataclass(frozen=True)
class RowId:
    """A training-row id read from a file, and where it stands (``line``, ``column`` from 1)."""

    value: int
    line: int
    column: int
    width: int


def read_row_ids(path: Path) -> list[RowId]:
    """A file of training-row ids: one whole number (0, 1, ...) a line; blank lines and ``#``
    comments (to the end of a line) are skipped. Anything else is a :class:`DataError`."""
    shown = str(path)
    ids = []
    for number, raw in enumerate(io.StringIO(_text(path), newline=None), start=1):
        fields = _fields(raw.split("#", 1)[0])
        if not fields:
            continue
        text, column = fields[0]
        if not (text.isascii() and text.isdigit()):
            raise DataError(
                f"`{text}` is not a row id",
                shown,
                number,
                column,
                len(text),
                help="a row id is a whole number, 0 for the first training row",
            )
        if len(fields) > 1:
            extra, column = fields[1]
            raise DataError(
                "one row id a line",
                shown,
                number,
                column,
                len(extra),
                help="put each id on a line of its own",
            )
        ids.append(RowId(int(text), number, column, len(text)))
    return ids


def read_row_sets(path: Path) -> list[list[RowId]]:
    """A file of sets of training-row ids: one set a line, its ids whole numbers separated by
    commas (spaces around them are free); blank lines and ``#`` comments are skipped. Anything
    else (an empty field, a field that is not a whole number) is a :class:`DataError`."""
    shown = str(path)
    sets = []
    for number, raw in enumerate(io.StringIO(_text(path), newline=None), start=1):
        line = raw.split("#", 1)[0]
        if not line.strip():
            continue
        ids, start = [], 0
        for field in line.split(","):
            text = field.strip()
            column = start + len(field) - len(field.lstrip()) + 1
            start += len(field) + 1
            if not (text.isascii() and text.isdigit()):
                raise DataError(
                    f"`{text}` is not a row id" if text else "an empty field, not a row id",
                    shown,
                    number,
                    column,
                    max(1, len(text)),
                    help="a line is a set of row ids separated by commas, e.g. 3, 17, 42",
                )
            ids.append(RowId(int(text), number, column, len(text)))
        sets.append(ids)
    return sets


def _text(path: Path) -> str:
    """The file's text, read as UTF-8 (a leading byte-order mark is dropped)."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line_start = data.rfind(b"\n", 0, error.start) + 1
        column = len(data[line_start : error.start].decode("utf-8", errors="replace")) + 1
        raise DataError(
            f"byte 0x{data[error.start]:02x} is not UTF-8 text",
            str(path),
            data.count(b"\n", 0, error.start) + 1,
            column,
            help="save the file as UTF-8",
        ) from None


def _fields(line: str) -> list[tuple[str, int]]:
    """Whitespace-separated fields with their 1-based columns."""
    return [(m.group(), m.start() + 1) for m in re.finditer(r"\S+", line)]


def _is_number(text: str) -> bool:
    """A finite float32 value: NaN is a missing value, and inputs are never infinite."""
    try:
        value = float(text)
    except ValueError:
        return False
    with np.errstate(over="ignore"):
        return bool(np.isfinite(np.float32(value)))
