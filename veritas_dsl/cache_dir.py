"""The directory where this package keeps what it computes once and reuses across processes (the
compiled kernels, the parser's tables): ``platformdirs.user_cache_dir("veritas-dsl")``
(``~/.cache/veritas-dsl`` on Linux), never inside the package or the checkout."""

from __future__ import annotations

import os
import tempfile


def writable(path: str | None = None) -> str | None:
    """``path`` (by default the user's cache directory for this package), made if missing, or
    None when it cannot be written: callers then compute in every process instead."""
    if not path:
        import platformdirs

        path = platformdirs.user_cache_dir("veritas-dsl")
    try:
        os.makedirs(path, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
    except OSError:
        return None
    return path
