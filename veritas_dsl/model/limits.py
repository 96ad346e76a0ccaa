"""How large a model file of each format may be, and reading one no larger.

The limits are generous: a node takes 30 to 100 bytes in these files (measured on XGBoost JSON
and UBJSON, LightGBM text, skops and our own JSON), so 1 GiB holds 10 to 35 million nodes, ten
thousand trees of depth 10 and more, far beyond what an exact engine verifies. scikit-learn files
get 4 GiB because fully grown random forests are the largest tree models in use, and DaRE forests
because they keep their training rows (4 GiB, as a data set's dense table). A larger file, or a
path that names no regular file (a directory, a device, a pipe), is refused before it is read:
``/dev/zero`` or a sparse file of gigabytes would otherwise be read until memory runs out.
"""

from __future__ import annotations

from pathlib import Path

from veritas_dsl.inputs import InputError, checked_size, read_bytes
from veritas_dsl.model.errors import ModelError

#: The largest model file of each format, in bytes (see the module docstring for why).
MAX_BYTES = {
    "xgboost": 2**30,
    "xgboost_dump": 2**30,
    "lightgbm": 2**30,
    "sklearn": 4 * 2**30,
    "catboost": 2**30,
    "onnx": 2**30,
    "ensemble": 2**30,
    "dare": 4 * 2**30,
}


def model_size(path: Path, format: str | None) -> int:
    """The size of the model file at ``path``, checked against the limit of ``format`` (the
    largest limit when None); a :class:`ModelError` naming ``path`` when it is missing, not a
    regular file, too large or unreadable."""
    return _checked(checked_size, path, format)


def model_bytes(path: Path, format: str) -> bytes:
    """The bytes of the model file at ``path``, checked as :func:`model_size` checks it."""
    return _checked(read_bytes, path, format)


def _checked(read, path: Path, format: str | None):
    limit = MAX_BYTES.get(format, max(MAX_BYTES.values()))
    what = f"a model file of format {format}" if format in MAX_BYTES else "a model file"
    try:
        return read(path, limit, what)
    except FileNotFoundError:
        raise ModelError(f"{path}: no such model file") from None
    except InputError as error:
        raise ModelError(f"{path}: {error.strerror}") from None
    except OSError as error:
        raise ModelError(
            f"{path}: cannot read the model file ({error.strerror or error})"
        ) from None
