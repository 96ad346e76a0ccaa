"""Unlearning: forests that forget training rows, and what a deletion reveals."""

from veritas_dsl.model.certificate import (
    UnstableError,
    UnstableNode,
    certified_fit,
    worst_case,
)
from veritas_dsl.model.dare import DareForest
from veritas_dsl.unlearning.adversary import worst_deletion
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
