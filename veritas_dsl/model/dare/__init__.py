"""DaRE forests: random forests that forget training rows exactly (see :mod:`.forest`)."""

from veritas_dsl.model.dare.forest import DareForest

__all__ = ["DareForest"]
