"""Rewrites of a query, each mapping answers back (see :mod:`.base`); engines declare a
:class:`Chain` of them and read what they attach (:class:`Variables`)."""

from veritas_dsl.ir.reductions.base import Chain, Reduction, ReductionRefused
from veritas_dsl.ir.reductions.cancel import CancelTrees
from veritas_dsl.ir.reductions.disjunctions import ToDNF, branches
from veritas_dsl.ir.reductions.goals import (
    MinimizeToMaximize,
    ProveToFind,
    counterexample_constraints,
)
from veritas_dsl.ir.reductions.variables import (
    MergeTies,
    StaticBounds,
    VariableQuery,
    Variables,
    variables_of,
)

__all__ = [
    "CancelTrees",
    "Chain",
    "MergeTies",
    "MinimizeToMaximize",
    "ProveToFind",
    "Reduction",
    "ReductionRefused",
    "StaticBounds",
    "ToDNF",
    "VariableQuery",
    "Variables",
    "branches",
    "counterexample_constraints",
    "variables_of",
]
