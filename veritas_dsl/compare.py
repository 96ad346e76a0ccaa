"""Run every query of a spec on several engines, side by side, and cross-check exact answers."""

from __future__ import annotations

from dataclasses import dataclass, field

from veritas_dsl.ir.lowered import Lowered
from veritas_dsl.outcome import Interrupted, goal_kind
from veritas_dsl.result import Result, Termination
from veritas_dsl.run import EngineDisagreement, cross_check, solve
from veritas_dsl.solvers import registry
from veritas_dsl.solvers.base import Limits, UnsupportedQuery
from veritas_dsl.solvers.solve import check


@dataclass
class Comparison:
    """One lowered query on every engine: a Result, or why the engine could not take it."""

    lowered: Lowered
    results: dict[str, Result] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    disagreement: str | None = None

    @property
    def name(self) -> str:
        return self.lowered.query.name

    @property
    def kind(self) -> str:
        return goal_kind(self.lowered.query.goal)


def compare(lowered_queries, engines: list[str], timeout_s: float) -> list[Comparison]:
    """Solve each query on each engine (unsupported ones are noted, not fatal).

    Ctrl-C stops at the engine it interrupts: raises :class:`Interrupted` whose ``partial`` holds
    the comparisons so far, the interrupted one last.
    """
    comparisons: list[Comparison] = []
    try:
        for lowered in lowered_queries:
            comparison = Comparison(lowered)
            comparisons.append(comparison)
            for name in engines:
                if not _solve(comparison, name, timeout_s):
                    raise Interrupted(comparisons)
            try:
                cross_check(comparison.name, list(comparison.results.values()))
            except EngineDisagreement as error:
                comparison.disagreement = str(error)
    except Interrupted:
        raise
    except KeyboardInterrupt:
        raise Interrupted(comparisons) from None
    return comparisons


def _solve(comparison: Comparison, name: str, timeout_s: float) -> bool:
    """Run one engine on one query, or note why it cannot; False when Ctrl-C stopped it."""
    engine = registry.get(name)
    limits = Limits(timeout_s=timeout_s)
    try:
        check(engine, comparison.lowered.query, limits)
    except UnsupportedQuery as error:
        comparison.skipped[name] = str(error).split(": ", 1)[-1]
        return True
    if not engine.available():
        comparison.skipped[name] = f"not available ({engine.available().value})"
        return True
    result = solve(comparison.lowered, name, limits)
    if result.termination is Termination.UNSUPPORTED:  # refused while solving (too large, ...)
        comparison.skipped[name] = result.message
        return True
    comparison.results[name] = result
    return result.termination is not Termination.INTERRUPTED
