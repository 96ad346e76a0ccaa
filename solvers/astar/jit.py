"""How the A* kernels are compiled: Numba's ``njit``, cached in the user's cache directory.

Numba caches a function next to its source by default, in the ``__pycache__`` folder of the
installed package. ``pip uninstall`` leaves those files behind, and the folder left over shadows a
later install as a namespace package. So the kernels are cached in ``$NUMBA_CACHE_DIR`` when it is
set, and otherwise in ``platformdirs.user_cache_dir("veritas-dsl")`` (``~/.cache/veritas-dsl`` on
Linux); never inside the package or the checkout. When that directory cannot be written, the
kernels are compiled in every process instead.

Numba picks a function's cache directory when the function is decorated, from
``numba.config.CACHE_DIR``: :func:`kernel` sets it for the time of the decoration only, so the
user's own Numba settings and other code are untouched.
"""

from __future__ import annotations

import functools
import os
import tempfile

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


def kernel(function=None, /, **options):
    """``njit`` with the cache in :func:`cache_dir`; ``options`` go to ``njit``."""

    def decorate(function):
        where = cache_dir()
        if where is None:
            return njit(**options)(function)
        saved = config.CACHE_DIR
        config.CACHE_DIR = where
        try:
            return njit(cache=True, **options)(function)
        finally:
            config.CACHE_DIR = saved

    return decorate if function is None else decorate(function)


#: A kernel called only by other kernels: without the wrappers that let Python call it, which
#: Numba would otherwise generate and compile for each.
internal = kernel(no_cpython_wrapper=True, no_cfunc_wrapper=True)
