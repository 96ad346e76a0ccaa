"""Output files written a line at a time as results finish (:class:`LineFile`); whole files are
written by :func:`veritas_dsl.atomic.write_text`."""

from __future__ import annotations

import os

from veritas_dsl.atomic import OutputError


class LineFile:
    """A file written a line at a time and flushed after each: created (or, when ``append``,
    opened at its end, a last line cut short removed) only when the first line comes, so that
    a run that stops before any row finished leaves it as it was."""

    def __init__(self, path: str, first: str = "", append: bool = False) -> None:
        self.path, self.first, self.append = path, first, append
        self.file = None

    def write(self, text: str) -> None:
        if self.file is None:
            self._open()
        self.file.write(text)
        self.file.flush()

    def _open(self) -> None:
        try:
            if self.append and os.path.exists(self.path):
                with open(self.path, "rb+") as file:  # drop a last line cut short
                    data = file.read()
                    file.truncate(data.rfind(b"\n") + 1)
                self.file = open(self.path, "a")  # noqa: SIM115 (closed by close())
            else:
                self.file = open(self.path, "w")  # noqa: SIM115
                self.file.write(self.first)
        except OSError as error:
            raise OutputError(f"cannot write {self.path}: {error.strerror or error}") from None

    def close(self, create: bool = True) -> None:
        """Close the file; with ``create``, first create it when no line came."""
        if self.file is None and create:
            self._open()
        if self.file is not None:
            self.file.close()
            self.file = None
