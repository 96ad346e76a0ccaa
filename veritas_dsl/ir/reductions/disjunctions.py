"""Disjunctions to disjunctive normal form: one conjunction per branch."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from veritas_dsl.ir.query import AnyOf, Constraint, Query
from veritas_dsl.ir.reductions.base import Reduction, ReductionRefused

#: Most conjunctions a disjunction may expand to, unless a step says otherwise.
MAX_BRANCHES = 256


def expand(
    constraints: tuple[Constraint, ...], limit: int | None = None
) -> list[tuple[Constraint, ...]] | None:
    """The conjunctions whose union is ``constraints``, in order: a constraint outside every
    :class:`AnyOf` joins each branch where it stands. None when they pass ``limit``."""
    branches: list[tuple[Constraint, ...]] = [()]
    for c in constraints:
        if isinstance(c, AnyOf):
            options = []
            for alternative in c.alternatives:
                inner = expand(alternative, limit)
                if inner is None:
                    return None
                options += inner
            branches = [r + b for r in branches for b in options]
        else:
            branches = [(*r, c) for r in branches]
        if limit is not None and len(branches) > limit:
            return None
    return branches


def branches(query: Query) -> tuple[tuple[Constraint, ...], ...]:
    """The conjunctions of a query in the form :class:`ToDNF` leaves."""
    if len(query.constraints) == 1 and isinstance(query.constraints[0], AnyOf):
        return query.constraints[0].alternatives
    return (query.constraints,)


@dataclass(frozen=True)
class ToDNF(Reduction):
    """The constraints become one :class:`AnyOf` of conjunctions without disjunctions (or the
    one conjunction itself), read back with :func:`branches`. Refuses a query whose
    disjunctions expand to more than ``max_branches`` conjunctions. The answer is unchanged, so
    ``invert`` is the identity."""

    max_branches: int = MAX_BRANCHES

    def refusal(self, query: Query) -> str | None:
        if expand(query.constraints, self.max_branches) is None:
            return f"its disjunctions expand to more than {self.max_branches} conjunctions"
        return None

    def apply(self, query: Query) -> tuple[Query, None]:
        found = expand(query.constraints, self.max_branches)
        if found is None:
            raise ReductionRefused(f"query {query.name}: {self.refusal(query)}")
        constraints = found[0] if len(found) == 1 else (AnyOf(tuple(found)),)
        return dataclasses.replace(query, constraints=constraints), None
