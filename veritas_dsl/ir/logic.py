"""Negation of output conditions, which turns "prove P" into "find a counterexample to P"."""

from __future__ import annotations

import math

from veritas_dsl.ir.query import (
    AnyOf,
    Constraint,
    IRError,
    Linear,
    OutputConstraint,
    VoteMargin,
)

_OPPOSITE = {"<": ">=", "<=": ">", ">": "<=", ">=": "<"}


def negate(conjunction: tuple[Constraint, ...]) -> AnyOf:
    """The negation of a conjunction of output constraints, votes and :class:`AnyOf` of them.

    ``not (a and b)`` is ``(not a) or (not b)``; ``not (p or q)`` is ``(not p) and (not q)``.
    """
    return AnyOf(tuple(_negate_one(c) for c in conjunction))


def _negate_one(constraint: Constraint) -> tuple[Constraint, ...]:
    if isinstance(constraint, OutputConstraint):
        return (OutputConstraint(constraint.term, _OPPOSITE[constraint.op], constraint.rhs),)
    if isinstance(constraint, VoteMargin):
        c = constraint
        return (VoteMargin(c.model, c.instance, c.other, c.label, 1 - c.k),)
    if isinstance(constraint, AnyOf):
        return tuple(negate(alternative) for alternative in constraint.alternatives)
    raise IRError(f"only output conditions can be negated, not {type(constraint).__name__}")


def drop_infinite(conjunction: tuple[Constraint, ...]) -> tuple[Constraint, ...]:
    """The conjunction without comparisons to an infinite right-hand side, which every input
    decides alike (inputs, hence outputs and linear sums, are finite): one that always holds is
    dropped, one that never holds becomes ``AnyOf(())``."""
    kept: list[Constraint] = []
    for c in conjunction:
        if isinstance(c, OutputConstraint | Linear) and math.isinf(c.rhs):
            if not _holds_at_zero(c.op, c.rhs):
                return (AnyOf(()),)
        elif isinstance(c, AnyOf):
            alternatives = tuple(drop_infinite(alt) for alt in c.alternatives)
            alternatives = tuple(alt for alt in alternatives if alt != (AnyOf(()),))
            if () in alternatives:
                continue  # an alternative that always holds
            kept.append(AnyOf(alternatives))
        else:
            kept.append(c)
    return tuple(kept)


def _holds_at_zero(op: str, rhs: float) -> bool:
    """``v op rhs`` for any finite ``v``, ``rhs`` infinite."""
    return {"<": rhs > 0, "<=": rhs > 0, ">": rhs < 0, ">=": rhs < 0, "==": False}[op]
