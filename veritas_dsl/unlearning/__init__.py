"""Unlearning: forests that forget training rows, and what a deletion reveals.

One package, one sub-package or module per layer (docs/layers.md): ``dare/`` the DaRE forest, its
certificates and the models derived by ``delete`` and ``retrain`` (models); ``checking/`` the
checker's part (language); ``leakage.py``, ``membership.py``, ``cap.py`` and ``adversary.py``
(running); ``shards.py`` (DaRE forests on shards, published privately); ``report.py``
(reports); ``targets.py`` (the inputs of ``ver leakage``, ``ver membership`` and ``ver cap``,
an entry point).

The public names load on first use (:mod:`veritas_dsl.exports`): a model file that is not a
forest, read through this package's ``dare/``, compiles no forest kernels and starts no engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from veritas_dsl.exports import lazy_exports

if TYPE_CHECKING:  # the public names: type checkers read them here, and so does lazy_exports
    from veritas_dsl.unlearning.adversary import worst_deletion
    from veritas_dsl.unlearning.cap import Cap, CapError, cap
    from veritas_dsl.unlearning.dare import DareForest
    from veritas_dsl.unlearning.dare.certificate import (
        UnstableError,
        UnstableNode,
        certified_fit,
        worst_case,
    )
    from veritas_dsl.unlearning.dare.point_bounds import point_bounds
    from veritas_dsl.unlearning.leakage import Leakage, LeakageError, leakage
    from veritas_dsl.unlearning.membership import Membership, MembershipError, membership
    from veritas_dsl.unlearning.shards import ShardedForest

__all__ = [
    "Cap",
    "CapError",
    "DareForest",
    "Leakage",
    "LeakageError",
    "Membership",
    "MembershipError",
    "ShardedForest",
    "UnstableError",
    "UnstableNode",
    "cap",
    "certified_fit",
    "leakage",
    "membership",
    "point_bounds",
    "worst_case",
    "worst_deletion",
]

lazy_exports(__name__)
