"""How our Numba kernels are compiled (the A* engine's, the DaRE forest's): ``njit``, cached in the
user's cache directory.

Numba caches a function next to its source by default, in the ``__pycache__`` folder of the
installed package. ``pip uninstall`` leaves those files behind, and the folder left over shadows a
later install as a namespace package. So the kernels are cached in ``$NUMBA_CACHE_DIR`` when it is
set, and otherwise in ``platformdirs.user_cache_dir("veritas-dsl")`` (``~/.cache/veritas-dsl`` on
Linux); never inside the package or the checkout. When that directory cannot be written, the
kernels are compiled in every process instead.

Numba picks a function's cache directory when the function is decorated, from
``numba.config.CACHE_DIR``: :func:`kernel` sets it for the time of the decoration only, so the
user's own Numba settings and other code are untouched.

Numba reuses a cached function while its own source file is unchanged, but the cached code
includes the kernels it calls, which may live in other files: after an upgrade or an edit that
changed only a callee, the stale caller would be loaded. So each folder of kernels is cached
under a digest of its sources (and of this module, which sets the compile options): any change
to any of them starts a fresh cache, and stale entries are never read.

The module sits in the foundation layer so that the model layer's kernels can use it too.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import os
from pathlib import Path

from numba import config, njit

from veritas_dsl.cache_dir import writable


@functools.cache
def cache_dir() -> str | None:
    """The directory the kernels are cached in, or None when it cannot be written."""
    return writable(config.CACHE_DIR)  # NUMBA_CACHE_DIR, or the user's own setting


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


#: A kernel called only by other kernels: without the wrappers that let Python call it, which
#: Numba would otherwise generate and compile for each.
internal = kernel(no_cpython_wrapper=True, no_cfunc_wrapper=True)

#: A step of a kernel, inlined into its caller at Numba's level: it is typed and compiled as
#: part of the caller, never on its own (no library of its own for LLVM to optimise again).
inlined = njit(inline="always", no_cpython_wrapper=True, no_cfunc_wrapper=True)
