"""Data sets a spec reads rows from: CSV files and LIBSVM / svmlight files; and the files of
training-row ids that `delete(...)` and `models(...)` read.

Values become float32 exactly as the libraries' own readers round them (once, from the decimal
text). A malformed file is a :class:`DataError` naming the file, line and column, quoting at most
a short excerpt of it (:func:`veritas_dsl.inputs.excerpt`). Files are read a line at a time and
their values parsed in chunks, so that memory follows the values kept, not the text; a file
larger than its limit, or a path that names no regular file, is refused before it is read.
"""

from __future__ import annotations

import array
import contextlib
import csv
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import numpy as np

from veritas_dsl.float32 import parse_float32
from veritas_dsl.inputs import checked_size, excerpt


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
#: The largest CSV or LIBSVM file: at about 10 bytes a value, a hundred million values (a million
#: rows of 100 features), more rows than a batch verifies; and no more than 400 MB as float32.
MAX_FILE_BYTES = 2**30
#: The largest file of row ids: about ten million ids, more rows than a deletion request names.
MAX_ROWS_FILE_BYTES = 64 * 2**20
#: Values parsed at once (their text is held until then).
_CHUNK = 1 << 16
_LARGEST = float(np.finfo(np.float32).max)


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
    with _opened(path, MAX_FILE_BYTES, "a data file", newline="") as handle:
        reader = csv.reader(handle)
        values = _Values()
        header: tuple[str, ...] = ()
        line = 1  # where the next record starts
        try:
            for record in reader:
                number, line = line, reader.line_num + 1
                if not header:
                    if not record:
                        break
                    header = tuple(h.strip() for h in record)
                    continue
                if not record:
                    continue
                if len(record) != len(header):
                    raise DataError(
                        f"line has {len(record)} fields, the header {len(header)}", shown, number, 1
                    )
                column = 1
                for text in record:
                    if problem := _number_problem(text):
                        raise DataError(
                            f"`{excerpt(text)}` {problem}",
                            shown,
                            number,
                            column,
                            max(1, len(text)),
                            help=_NUMBER_HELP[problem],
                        )
                    column += len(text) + 1
                values.add(record)
        except csv.Error as error:
            raise DataError(f"not a readable CSV line ({error})", shown, line, 1) from None
    if not header:
        raise DataError(
            f"data `{name}` is empty", shown, 1, 1, help="the first line names the columns"
        )
    return Dataset(name, header, values.array().reshape(-1, len(header)), shown)


def read_libsvm(name: str, path: Path, n_features: int, first_index: int = 1) -> Dataset:
    """A LIBSVM / svmlight file: ``label index:value ...`` per line, absent entries 0.

    Columns are ``f0 .. f{n-1}`` and ``label``. Indices count from ``first_index`` (LIBSVM's own
    files count from 1); an index outside ``first_index .. first_index + n_features - 1`` is an
    error, as is anything that is not a number. ``qid:`` entries and ``#`` comments are skipped.
    """
    shown = str(path)
    labels, entries = _Values(), _Values()
    rows, columns = array.array("q"), array.array("q")  # of each entry: 8 bytes, not 40
    n_rows = 0
    with _opened(path, MAX_FILE_BYTES, "a data file", newline=None) as handle:
        for number, raw in enumerate(handle, start=1):
            line = raw.split("#", 1)[0].rstrip("\n")
            if not line.strip():
                continue
            fields = _fields(line)
            label, label_column = fields[0]
            if problem := _number_problem(label):
                message = f"the label `{excerpt(label)}` {problem}"
                help = _NUMBER_HELP[problem]
                raise DataError(message, shown, number, label_column, len(label), help=help)
            labels.add([label])
            for text, column in fields[1:]:
                index_text, sep, value = text.partition(":")
                if index_text == "qid":
                    continue
                problem = _number_problem(value)
                if not sep or not (index_text.isascii() and index_text.isdigit()) or problem:
                    message = f"`{excerpt(text)}` is not index:value"
                    if sep and problem == _BEYOND:
                        message = f"`{excerpt(value)}` {problem}"
                    raise DataError(message, shown, number, column, len(text))
                index = int(index_text) - first_index
                if not 0 <= index < n_features:
                    last = first_index + n_features - 1
                    raise DataError(
                        f"feature index {excerpt(index_text)} is outside {first_index}..{last}",
                        shown,
                        number,
                        column,
                        len(index_text),
                        help="check the declared feature count and first index",
                    )
                rows.append(n_rows)
                columns.append(index)
                entries.add([value])
            n_rows += 1
            size = n_rows * (n_features + 1) * 4
            if size > MAX_DENSE_BYTES:
                raise DataError(
                    f"{n_rows} rows of {n_features} features take {size / 2**30:.1f} GiB as a "
                    f"dense table, more than the {MAX_DENSE_BYTES / 2**30:.0f} GiB allowed",
                    shown,
                    number,
                    1,
                    help="check the declared feature count",
                )
    values = np.zeros((n_rows, n_features + 1), dtype=np.float32)
    values[np.frombuffer(rows, np.int64), np.frombuffer(columns, np.int64)] = entries.array()
    values[:, n_features] = labels.array()
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
    with _opened(path, MAX_ROWS_FILE_BYTES, "a file of row ids", newline=None) as handle:
        for number, raw in enumerate(handle, start=1):
            fields = _fields(raw.split("#", 1)[0])
            if not fields:
                continue
            text, column = fields[0]
            if not (text.isascii() and text.isdigit()):
                raise DataError(
                    f"`{excerpt(text)}` is not a row id",
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
    with _opened(path, MAX_ROWS_FILE_BYTES, "a file of row ids", newline=None) as handle:
        for number, raw in enumerate(handle, start=1):
            line = raw.split("#", 1)[0].rstrip("\n")
            if not line.strip():
                continue
            ids, start = [], 0
            for field in line.split(","):
                text = field.strip()
                column = start + len(field) - len(field.lstrip()) + 1
                start += len(field) + 1
                if not (text.isascii() and text.isdigit()):
                    not_an_id = f"`{excerpt(text)}` is not a row id"
                    raise DataError(
                        not_an_id if text else "an empty field, not a row id",
                        shown,
                        number,
                        column,
                        max(1, len(text)),
                        help="a line is a set of row ids separated by commas, e.g. 3, 17, 42",
                    )
                ids.append(RowId(int(text), number, column, len(text)))
            sets.append(ids)
    return sets


@contextlib.contextmanager
def _opened(path: Path, limit: int, what: str, newline: str | None) -> Iterator[TextIO]:
    """The file as UTF-8 text (a leading byte-order mark dropped), once :func:`checked_size`
    allows it; a byte that is not UTF-8, met while reading, is a located :class:`DataError`."""
    checked_size(path, limit, what)
    with open(path, encoding="utf-8-sig", newline=newline) as handle:
        try:
            yield handle
        except UnicodeDecodeError:
            raise _not_utf8(path) from None


def _not_utf8(path: Path) -> DataError:
    """Where the first byte that is not UTF-8 stands (a line at a time: a character never spans
    a line end)."""
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            encoding = "utf-8-sig" if number == 1 else "utf-8"
            try:
                raw.decode(encoding)
            except UnicodeDecodeError as error:
                before = raw[: error.start].decode(encoding, errors="replace")
                return DataError(
                    f"byte 0x{raw[error.start]:02x} is not UTF-8 text",
                    str(path),
                    number,
                    len(before) + 1,
                    help="save the file as UTF-8",
                )
    return DataError("the file changed while it was read", str(path), 1, 1)


class _Values:
    """Decimal texts parsed to float32 a chunk at a time (text takes ten times the memory)."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.chunks: list[np.ndarray] = []

    def add(self, texts: list[str]) -> None:
        self.texts += texts
        if len(self.texts) >= _CHUNK:
            self.chunks.append(parse_float32(self.texts))
            self.texts = []

    def array(self) -> np.ndarray:
        """Every value added, in order: float32, one dimension."""
        return np.concatenate([*self.chunks, parse_float32(self.texts)])


def _fields(line: str) -> list[tuple[str, int]]:
    """Whitespace-separated fields with their 1-based columns."""
    return [(m.group(), m.start() + 1) for m in re.finditer(r"\S+", line)]


_NOT_A_NUMBER = "is not a number"
_BEYOND = "is beyond the float32 range"
_NUMBER_HELP = {
    _NOT_A_NUMBER: "data values are finite numbers; missing values are not supported",
    _BEYOND: "models read float32 values, at most 3.4028235e38 in magnitude",
}


def _number_problem(text: str) -> str:
    """What keeps ``text`` from being a value: NaN is a missing value, inputs are never
    infinite, and a number beyond the float32 range would be read as infinite; "" when none."""
    try:
        value = float(text)
    except ValueError:
        return _NOT_A_NUMBER
    if not math.isfinite(value):
        return _NOT_A_NUMBER
    if abs(value) <= _LARGEST:  # most values: no errstate, which is slow
        return ""
    with np.errstate(over="ignore"):  # within half a step above the largest, it rounds to it
        return _BEYOND if np.isinf(np.float32(value)) else ""
