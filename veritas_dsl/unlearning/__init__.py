"""Unlearning: forests that forget training rows, and what a deletion reveals.

One package, one sub-package or module per layer (docs/layers.md): ``dare/`` the DaRE forest, its
certificates and the models derived by ``delete`` and ``retrain`` (models); ``checking/`` the
checker's part (language); ``leakage.py`` and ``adversary.py`` (running); ``report.py``
(reports); ``targets.py`` (``ver leakage``'s inputs, an entry point).
"""

from veritas_dsl.unlearning.adversary import worst_deletion
from veritas_dsl.unlearning.dare import DareForest
from veritas_dsl.unlearning.dare.certificate import (
    UnstableError,
    UnstableNode,
    certified_fit,
    worst_case,
)
from veritas_dsl.unlearning.leakage import Leakage, LeakageError, leakage

__all__ = [
    "DareForest",
    "Leakage",
    "LeakageError",
    "UnstableError",
    "UnstableNode",
    "certified_fit",
    "leakage",
    "worst_case",
    "worst_deletion",
]
