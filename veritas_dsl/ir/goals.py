"""The goals of a query (what :class:`~veritas_dsl.ir.query.Query` asks to find), and what a
goal implies before any input is known: its terms, its sense, its optimum over no inputs.

``veritas_dsl.ir.query`` re-exports every name here; the types of the terms and constraints a
goal holds live there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from veritas_dsl.ir.query import Constraint, Norm, OutputTerm, Reference, Weights


@dataclass(frozen=True)
class Maximize:
    """Find the largest value of ``term`` over the inputs that satisfy the constraints."""

    term: OutputTerm


@dataclass(frozen=True)
class Minimize:
    """Find the smallest value of ``term``."""

    term: OutputTerm


@dataclass(frozen=True)
class MaximizeMin:
    """Find the largest value of ``min(terms)``: the worst of several terms (each a model of a
    family, say) made as good as it can be. Its value at an input is the least of the terms'
    values there (each as :class:`Maximize` would compute it)."""

    terms: tuple[OutputTerm, ...]


@dataclass(frozen=True)
class MinimizeMax:
    """Find the smallest value of ``max(terms)``; ``-max(terms) = min(-terms)``, so it is a
    :class:`MaximizeMin` negated (``ir.reductions.MinimizeToMaximize``)."""

    terms: tuple[OutputTerm, ...]


@dataclass(frozen=True)
class MinimizeDistance:
    """Find the smallest ``norm`` distance from ``instance`` to ``center`` (a closest example),
    weighted by ``weights`` (see :data:`Weights`)."""

    norm: Norm
    instance: str
    center: Reference
    weights: Weights = None

    def __post_init__(self) -> None:
        normalise_weights(self)


def normalise_weights(distance) -> None:
    if distance.weights is not None:
        object.__setattr__(distance, "weights", tuple(float(w) for w in distance.weights))


@dataclass(frozen=True)
class Find:
    """Find any input that satisfies the constraints, or show that none does."""


@dataclass(frozen=True)
class Prove:
    """Show that every input satisfying the constraints satisfies ``conclusion`` (a conjunction
    of output constraints and :class:`AnyOf` of them), or find a counterexample."""

    conclusion: tuple[Constraint, ...]


Goal: TypeAlias = (
    "Maximize | Minimize | MaximizeMin | MinimizeMax | MinimizeDistance | Find | Prove"
)


def goal_terms(goal: Goal) -> tuple[OutputTerm, ...]:
    """The output terms ``goal`` optimises (none for a distance, find and prove)."""
    if isinstance(goal, Maximize | Minimize):
        return (goal.term,)
    if isinstance(goal, MaximizeMin | MinimizeMax):
        return tuple(goal.terms)
    return ()


def maximizes(goal: Goal) -> bool:
    """Whether ``goal`` asks for a largest value."""
    return isinstance(goal, Maximize | MaximizeMin)


def infeasible_optimum(goal: Goal) -> float | None:
    """The optimum of ``goal`` over no inputs: -inf for a maximisation, +inf for a minimisation,
    None for find and prove (which have no bounds)."""
    if maximizes(goal):
        return -math.inf
    if isinstance(goal, Minimize | MinimizeMax | MinimizeDistance):
        return math.inf
    return None
