"""Rewrites of the goal: prove as a search for a counterexample, minimise as maximise."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from veritas_dsl.ir.logic import negate
from veritas_dsl.ir.query import (
    Constraint,
    Find,
    Maximize,
    MaximizeMin,
    Minimize,
    MinimizeMax,
    OutputAtom,
    OutputTerm,
    Prove,
    Query,
)
from veritas_dsl.ir.reductions.base import Reduction
from veritas_dsl.result import Result, TracePoint, Witness


def counterexample_constraints(query: Query) -> tuple[Constraint, ...]:
    """What an input must satisfy to answer ``query``: its constraints, and for prove the
    negated conclusion (a witness of a prove query is a counterexample)."""
    if isinstance(query.goal, Prove):
        return (*query.constraints, negate(query.goal.conclusion))
    return query.constraints


@dataclass(frozen=True)
class ProveToFind(Reduction):
    """``prove C`` becomes ``find`` an input meeting the constraints and ``not C``.

    The verdict's inversion lives here, and it is the identity on the Result: a witness found
    (``optimal``) is a counterexample, so the property fails; ``infeasible`` (no counterexample)
    means it holds, when some input meets the premise (the run checks that,
    ``veritas_dsl.vacuity``). Find and prove carry no bounds, so nothing else moves.
    """

    def apply(self, query: Query) -> tuple[Query, None]:
        if not isinstance(query.goal, Prove):
            return query, None
        return dataclasses.replace(
            query, constraints=counterexample_constraints(query), goal=Find()
        ), None


def negated_term(term: OutputTerm) -> OutputTerm:
    """``-term``, exactly: float64 negation rounds nothing."""
    atoms = tuple(OutputAtom(-a.coef, a.model, a.instance, a.output) for a in term.atoms)
    return OutputTerm(atoms, -term.constant)


def _negate(value: float | None) -> float | None:
    return None if value is None else -value


@dataclass(frozen=True)
class MinimizeToMaximize(Reduction):
    """``minimize t`` becomes ``maximize -t``, and ``minimize max(t1, .., tn)`` becomes
    ``maximize min(-t1, .., -tn)``; the inverse negates and swaps the bounds and negates every
    witness's value and trace point (all exact)."""

    def apply(self, query: Query) -> tuple[Query, bool]:
        goal = query.goal
        if isinstance(goal, Minimize):
            return dataclasses.replace(query, goal=Maximize(negated_term(goal.term))), True
        if isinstance(goal, MinimizeMax):
            negated = MaximizeMin(tuple(negated_term(term) for term in goal.terms))
            return dataclasses.replace(query, goal=negated), True
        return query, False

    def invert(self, result: Result, inverse: bool) -> Result:
        if not inverse:
            return result
        return dataclasses.replace(
            result,
            lower=_negate(result.upper),
            upper=_negate(result.lower),
            witnesses=[Witness(w.inputs, _negate(w.value)) for w in result.witnesses],
            trace=[TracePoint(p.time_s, -p.upper, -p.lower) for p in result.trace],
        )

    def invert_bounds(self, lower, upper, inverse: bool):
        return (_negate(upper), _negate(lower)) if inverse else (lower, upper)
