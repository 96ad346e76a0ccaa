"""Reductions: small rewrites of a query that keep what they need to map answers back.

In the manner of cvxpy's ``reductions/`` (``reduction.py``, ``chain.py``): a :class:`Reduction`
says whether it ``accepts`` a query, ``apply`` rewrites it and returns what ``invert`` needs to
turn an answer to the rewritten query into an answer to the original. A :class:`Chain` applies
its steps in order and inverts them in reverse. No step mutates its input.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from veritas_dsl.ir.query import Query
from veritas_dsl.result import Result


class ReductionRefused(ValueError):
    """A reduction does not accept a query; the message says why, for a refusal by an engine."""


@dataclass(frozen=True)
class Reduction:
    """One rewrite of a query (a base class; each step overrides what it needs).

    Contract: for every query it accepts, ``apply`` returns a query with the same answer up to
    ``invert``: the rewritten query's optimum, feasibility and witnesses map back exactly. A step
    with nothing to rewrite returns the query itself and ``None``.
    """

    def accepts(self, query: Query) -> bool:
        """Whether ``apply`` can rewrite ``query``."""
        return self.refusal(query) is None

    def refusal(self, query: Query) -> str | None:
        """Why the step does not accept ``query`` (None when it does)."""
        return None

    def apply(self, query: Query) -> tuple[Query, Any]:
        """The rewritten query and the data ``invert`` needs."""
        return query, None

    def invert(self, result: Result, inverse: Any) -> Result:
        """An answer to the rewritten query turned into an answer to the original."""
        return result

    def invert_bounds(
        self, lower: float | None, upper: float | None, inverse: Any
    ) -> tuple[float | None, float | None]:
        """Bounds on the rewritten query's optimum as bounds on the original's (for progress
        reports, which carry bounds but are no Result)."""
        return lower, upper


@dataclass(frozen=True)
class Chain(Reduction):
    """Steps applied in order and inverted in reverse; itself a reduction."""

    steps: tuple[Reduction, ...] = ()

    def refusal(self, query: Query) -> str | None:
        for step in self.steps:
            why = step.refusal(query)
            if why is not None:
                return why
            query, _ = step.apply(query)
        return None

    def apply(self, query: Query) -> tuple[Query, tuple]:
        """Raises :class:`ReductionRefused` when a step does not accept its input."""
        inverses = []
        for step in self.steps:
            why = step.refusal(query)
            if why is not None:
                raise ReductionRefused(f"query {query.name}: {why}")
            query, inverse = step.apply(query)
            inverses.append(inverse)
        return query, tuple(inverses)

    def invert(self, result: Result, inverse: tuple) -> Result:
        for step, data in zip(reversed(self.steps), reversed(inverse), strict=True):
            result = step.invert(result, data)
        return result

    def invert_bounds(self, lower, upper, inverse: tuple):
        for step, data in zip(reversed(self.steps), reversed(inverse), strict=True):
            lower, upper = step.invert_bounds(lower, upper, data)
        return lower, upper

    def invert_progress(self, progress: Callable | None, inverse: tuple) -> Callable | None:
        """``progress`` seeing reports of the rewritten query as reports of the original: every
        report with ``lower`` and ``upper`` fields (a frozen dataclass) has them inverted."""
        if progress is None or not self.steps:
            return progress

        def report(state) -> None:
            lower, upper = getattr(state, "lower", None), getattr(state, "upper", None)
            if lower is not None or upper is not None:
                lower, upper = self.invert_bounds(lower, upper, inverse)
                state = dataclasses.replace(state, lower=lower, upper=upper)
            progress(state)

        return report
