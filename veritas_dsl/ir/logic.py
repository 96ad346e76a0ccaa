"""Negation of output conditions, which turns "prove P" into "find a counterexample to P"."""

from __future__ import annotations

from veritas_dsl.ir.query import AnyOf, Constraint, IRError, OutputConstraint, VoteMargin

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
