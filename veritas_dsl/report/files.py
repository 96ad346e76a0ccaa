"""Output files written a line at a time as results finish (:class:`LineFile`); whole files are
written by :func:`veritas_dsl.atomic.write_text`."""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat

from veritas_dsl.atomic import OutputError


class FileLockedError(OutputError):
    """Another process holds the lock of a file this run would write."""


class LineFile:
    """A file written a line at a time and flushed after each: created (or, when ``append``,
    opened at its end, a last line cut short removed) only when the first line comes, so that
    a run that stops before any row finished leaves it as it was.

    With ``lock``, the file is opened at once and held under an exclusive ``flock`` until
    :meth:`close`: a second writer fails at once (:class:`FileLockedError`) instead of
    interleaving its lines. ``flock`` rather than a lock file beside it: the kernel releases it
    when the process dies, even by SIGKILL, so a killed run leaves no stale lock for the resume
    that follows. A file created only to hold the lock is removed when no line came."""

    def __init__(self, path: str, first: str = "", append: bool = False, lock: bool = False):
        self.path, self.first, self.append = path, first, append
        self.file = None
        self.descriptor: int | None = None
        self.created = False
        if lock:
            self._lock()

    def write(self, text: str) -> None:
        if self.file is None:
            self._open()
        self.file.write(text)
        self.file.flush()

    def _lock(self) -> None:
        # Retried when the path no longer names the file locked: a writer that created it for
        # its lock removed it meanwhile.
        for _ in range(10):
            self.descriptor, self.created = self._descriptor()
            try:
                fcntl.flock(self.descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                self._release()
                raise FileLockedError(
                    f"{self.path} is being written by another run (its lock is held); wait for "
                    "that run to end, or write to another file"
                ) from None
            except OSError as error:
                self._release()
                raise OutputError(f"cannot lock {self.path}: {error.strerror or error}") from None
            if self._names_locked_file():
                return
            self._release()
        raise OutputError(f"cannot lock {self.path}: it keeps being replaced")

    def _descriptor(self) -> tuple[int, bool]:
        """A descriptor open for appending, and whether this call created the file."""
        flags = os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC
        try:
            if self.append:
                return os.open(self.path, flags), False
            try:
                return os.open(self.path, flags | os.O_CREAT | os.O_EXCL, 0o666), True
            except FileExistsError:
                return os.open(self.path, flags), False
        except OSError as error:
            raise OutputError(f"cannot write {self.path}: {error.strerror or error}") from None

    def _names_locked_file(self) -> bool:
        try:
            named = os.stat(self.path)
        except OSError:
            return False
        held = os.fstat(self.descriptor)
        return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)

    def _open(self) -> None:
        try:
            if self.descriptor is None:
                self.descriptor, self.created = self._descriptor()
            regular = stat.S_ISREG(os.fstat(self.descriptor).st_mode)
            if self.append and regular:  # drop a last line cut short
                with open(self.path, "rb") as file:
                    data = file.read()
                os.ftruncate(self.descriptor, data.rfind(b"\n") + 1)
            elif regular:
                os.ftruncate(self.descriptor, 0)
            self.file = os.fdopen(self.descriptor, "a")
            self.file.write("" if self.append else self.first)
        except OSError as error:
            raise OutputError(f"cannot write {self.path}: {error.strerror or error}") from None

    def close(self, create: bool = True) -> None:
        """Close the file (releasing its lock); with ``create``, first create it when no line
        came, else remove it when it was created only for its lock."""
        if self.file is None and create:
            self._open()
        if self.file is not None:
            self.file.close()
            self.file = self.descriptor = None
        elif self.descriptor is not None:
            if self.created:  # while still locked: no other writer can have it yet
                with contextlib.suppress(OSError):
                    os.unlink(self.path)
            self._release()

    def _release(self) -> None:
        if self.descriptor is not None:
            os.close(self.descriptor)  # releases the lock
            self.descriptor = None
