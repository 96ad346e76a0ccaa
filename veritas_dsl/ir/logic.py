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

#: The comparison operators' one table: ``not (a op b)`` is ``a NEGATED[op] b``.
NEGATED = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}
#: ``a op b`` is ``b MIRRORED[op] a``.
MIRRORED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
_HOLDS = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
}


def compare(value, op: str, rhs) -> bool:
    """``value op rhs`` for any comparison operator (floats or exact rationals)."""
    try:
        holds = _HOLDS[op]
    except KeyError:
        raise ValueError(f"unknown comparison {op!r}") from None
    return holds(value, rhs)


def negate(conjunction: tuple[Constraint, ...]) -> AnyOf:
    """The negation of a conjunction of output constraints, votes and :class:`AnyOf` of them.

    ``not (a and b)`` is ``(not a) or (not b)``; ``not (p or q)`` is ``(not p) and (not q)``.
    """
    return AnyOf(tuple(_negate_one(c) for c in conjunction))


def _negate_one(constraint: Constraint) -> tuple[Constraint, ...]:
    if isinstance(constraint, OutputConstraint):
        return (OutputConstraint(constraint.term, NEGATED[constraint.op], constraint.rhs),)
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
            if not compare(0.0, c.op, c.rhs):  # any finite value compares as 0 does
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
