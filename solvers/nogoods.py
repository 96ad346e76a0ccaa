"""The N best distinct solutions (``solutions = N``) from an exact engine that finds one optimum:
solve, then solve again with that solution's leaf combination excluded (a no-good: the inputs
lie outside the box of inputs reaching the same leaves, :func:`~veritas_dsl.ir.distinct.
elsewhere`), N times or until nothing is left.

Each solve is exact, so the optima come best first and each is the best of what the ones before
left: the N best leaf combinations, as the oracle's enumeration and A*'s search give them. The
bounds are those of the first solve (the optimum's); the later solves bound only what is left.
A limit or Ctrl-C during a later solve keeps the solutions found before it, all proven in
order. The time limit is the whole run's; steps count per solve.
"""

from __future__ import annotations

import dataclasses
import time

from veritas_dsl.ir.distinct import elsewhere
from veritas_dsl.ir.query import Query
from veritas_dsl.result import Result, Termination
from veritas_dsl.solvers.base import ALONE, Availability, Capabilities, Engine, Limits, route


class NoGoods:
    """``engine`` giving the N best distinct solutions by solving again with no-goods: an engine
    itself, which the solving route wraps ``engine`` in when N are asked of an engine that does
    not rank its solutions itself (:attr:`Capabilities.ranks`)."""

    chain = ALONE

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.name = engine.name
        own = engine.capabilities
        self.capabilities = Capabilities(own.constructs, own.limits, own.lazy, ranks=True)

    def available(self) -> Availability:
        return self.engine.available()

    def solve_reduced(self, query: Query, limits: Limits, *, progress=None) -> Result:
        start = time.monotonic()
        once = dataclasses.replace(limits, solutions=None, stop=None)
        first = route(self.engine, query, once, progress)
        first.solutions_proven = 0
        if first.termination is not Termination.OPTIMAL or not first.witnesses:
            first.solutions_proven = len(first.witnesses) if first.exact else 0
            return first
        first.witnesses, first.solutions_proven = first.witnesses[:1], 1
        excluded = query
        while len(first.witnesses) < limits.solutions:
            other = elsewhere(excluded, first.witnesses[-1].inputs)
            if other is None:
                break  # every tree the objective reads has one leaf: one combination in all
            excluded = dataclasses.replace(excluded, constraints=(*excluded.constraints, other))
            left = _left(limits, start)
            if left is not None and left <= 0:
                first.termination = Termination.TIME_LIMIT
                break
            next_best = route(self.engine, excluded, dataclasses.replace(once, timeout_s=left))
            first.stats["solves"] = first.stats.get("solves", 1) + 1
            if next_best.termination is Termination.INFEASIBLE:
                break  # fewer than N combinations have an input
            if next_best.termination is not Termination.OPTIMAL or not next_best.witnesses:
                first.termination = next_best.termination  # a limit, Ctrl-C or a failure
                first.message = "; ".join(m for m in (first.message, next_best.message) if m)
                break
            first.witnesses.append(next_best.witnesses[0])
            first.solutions_proven += 1
        first.time_s = time.monotonic() - start
        return first

    def solve(self, query: Query, limits: Limits | None = None, *, progress=None) -> Result:
        return route(self, query, limits, progress)


def _left(limits: Limits, start: float) -> float | None:
    """Seconds left of the run's time limit, None without one."""
    if limits.timeout_s is None:
        return None
    return limits.timeout_s - (time.monotonic() - start)
