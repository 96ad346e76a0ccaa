"""The files a spec or a command names as input (models, data sets, row lists): what may be read,
and how their content may be quoted.

A path is refused before anything is read from it when it cannot name a regular file (a NUL byte,
a name too long, a directory, a device, a pipe) or when the file is larger than its reader allows:
``/dev/zero`` or a sparse file of gigabytes would otherwise be read until memory runs out. Text
from such a file reaches messages, editors and CI logs only through :func:`excerpt`: short, with
control characters escaped, so that an error never echoes a whole line of an arbitrary file.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

#: How many characters of a file's content a message quotes at most.
EXCERPT_CHARS = 20

# What a path that is not a regular file names, by the test of its mode.
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a device"),
    (stat.S_ISBLK, "a device"),
    (stat.S_ISFIFO, "a pipe"),
    (stat.S_ISSOCK, "a socket"),
)


class InputError(OSError):
    """A path we do not read from; ``strerror`` says why in plain words (callers that report an
    ``OSError`` by its ``strerror`` need nothing more)."""


def checked_size(path: str | Path, limit: int, what: str = "the file") -> int:
    """The size in bytes of the regular file at ``path``, at most ``limit``.

    Raises :class:`InputError` for a path with a NUL byte or one too long for the file system,
    for anything but a regular file (symbolic links are followed), and for a file over
    ``limit`` bytes (its message names ``what`` the file is for); other ``OSError`` (no such
    file, no permission) as ``os.stat`` raises them. Nothing is opened, so a pipe or a device
    is never read.
    """
    if "\0" in str(path):
        raise InputError(errno.EINVAL, "the path contains a NUL byte")
    try:
        mode = os.stat(path)
    except OSError as error:
        if error.errno == errno.ENAMETOOLONG:
            raise InputError(
                errno.ENAMETOOLONG, "the path is too long for the file system"
            ) from None
        raise
    if not stat.S_ISREG(mode.st_mode):
        kind = next((name for test, name in _KINDS if test(mode.st_mode)), "a special file")
        raise InputError(errno.EINVAL, f"it is {kind}, not a file")
    if mode.st_size > limit:
        raise _too_large(mode.st_size, limit, what)
    return mode.st_size


def read_bytes(path: str | Path, limit: int, what: str = "the file") -> bytes:
    """The bytes of the file at ``path``, checked as :func:`checked_size` checks it; a file
    that grows past ``limit`` while it is read (or a ``/proc`` file, whose size says 0) is
    refused as too large."""
    checked_size(path, limit, what)
    with open(path, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise _too_large(len(data), limit, what)
    return data


def _too_large(size: int, limit: int, what: str) -> InputError:
    shown, allowed = size_text(size), size_text(limit)
    return InputError(
        errno.EFBIG, f"the file holds {shown}, more than the {allowed} allowed for {what}"
    )


def size_text(n_bytes: int) -> str:
    """A number of bytes for people: ``1.5 GiB``, ``64 MiB``, ``312 bytes``."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n_bytes >= size:
            return f"{n_bytes / size:.3g} {unit}"
    return f"{n_bytes} bytes"


def excerpt(text: object, limit: int = EXCERPT_CHARS) -> str:
    """``text`` (read from a file; anything but a string as its ``repr``) as a message may quote
    it: control and other unprintable characters escaped (``\\x00``, ``\\n``, ``\\u200b``),
    and cut after at most ``limit`` characters as shown, with ``…`` after the cut."""
    text = text if isinstance(text, str) else repr(text)
    shown, width = [], 0
    for char in text:
        piece = char if char.isprintable() else repr(char)[1:-1]
        if width + len(piece) > limit:
            return "".join(shown) + "…"
        shown.append(piece)
        width += len(piece)
    return "".join(shown)
