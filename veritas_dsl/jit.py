"""How Numba kernels below the engines are compiled: ``njit``, cached in the user's cache directory.

The same rules as the A* kernels' (``solvers/astar/jit.py``, which says why): the cache lives in
``$NUMBA_CACHE_DIR`` or ``platformdirs.user_cache_dir("veritas-dsl")``, never inside the package,
under a digest of the sources of the kernel's folder, so a stale kernel is never loaded. This
module sits in the foundation so that the model layer (the DaRE forest's kernels) can use it.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import os
import tempfile
from pathlib import Path

from numba import config, njit


@functools.cache
def cache_dir() -> str | None:
    """The directory the kernels are cached in, or None when it cannot be written."""
    path = config.CACHE_DIR  # NUMBA_CACHE_DIR, or the user's own setting
    if not path:
        import platformdirs

        path = platformdirs.user_cache_dir("veritas-dsl")
    try:
        os.makedirs(path, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
    except OSError:
        return None
    return path


@functools.cache
def sources_digest(folder: Path) -> str:
    """A digest of the Python sources in ``folder`` and of this module."""
    digest = hashlib.sha256()
    for path in (*sorted(folder.glob("*.py")), Path(__file__)):
        source = path.read_bytes()
        digest.update(f"{path.name}:{len(source)}:".encode())
        digest.update(source)
    return digest.hexdigest()[:16]


def kernel(function=None, /, **options):
    """``njit`` with the cache in :func:`cache_dir`, under the digest of the sources beside
    ``function``; ``options`` go to ``njit``."""

    def decorate(function):
        where = cache_dir()
        if where is None:
            return njit(**options)(function)
        folder = Path(inspect.getfile(function)).resolve().parent
        saved = config.CACHE_DIR
        config.CACHE_DIR = os.path.join(where, sources_digest(folder))
        try:
            return njit(cache=True, **options)(function)
        finally:
            config.CACHE_DIR = saved

    return decorate if function is None else decorate(function)
