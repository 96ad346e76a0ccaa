"""DaRE forests: random forests that forget training rows exactly (see :mod:`.forest`).

``DareForest`` loads on first use (:mod:`veritas_dsl.exports`): the checker reads this package's
light modules (:mod:`.derive`) for every spec, and only a spec that reads a forest imports its
kernels (Numba).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from veritas_dsl.exports import lazy_exports

if TYPE_CHECKING:  # the public names: type checkers read them here, and so does lazy_exports
    from veritas_dsl.unlearning.dare.forest import DareForest

__all__ = ["DareForest"]

lazy_exports(__name__)
