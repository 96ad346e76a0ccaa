"""Writing a file whole or not at all: a reader never sees half of it, and a failed write leaves
the old file as it was."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from veritas_dsl.errors import UserError


class OutputError(UserError):
    """A file could not be written."""


def write_text(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path``: a temporary file beside it, renamed over it. Raises
    :class:`OutputError` naming the file when that fails."""
    target = Path(path)
    try:
        handle, temporary = tempfile.mkstemp(dir=target.resolve().parent, prefix=f".{target.name}.")
    except OSError as error:
        raise OutputError(f"cannot write {path}: {error.strerror or error}") from None
    try:
        with os.fdopen(handle, "w") as file:
            file.write(text)
        os.chmod(temporary, 0o666 & ~_umask())
        os.replace(temporary, target)
    except OSError as error:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise OutputError(f"cannot write {path}: {error.strerror or error}") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
