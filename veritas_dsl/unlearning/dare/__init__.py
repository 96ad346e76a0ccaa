"""DaRE forests: random forests that forget training rows exactly (see :mod:`.forest`)."""

from veritas_dsl.unlearning.dare.forest import DareForest

__all__ = ["DareForest"]
