"""Run every query of a spec on several engines, side by side, and cross-check exact answers."""

from __future__ import annotations

from dataclasses import dataclass, field

from veritas_dsl.diagnostics import SpecError
from veritas_dsl.ir.lower import Lowered
from veritas_dsl.result import Result
from veritas_dsl.run import EngineDisagreement, cross_check, goal_kind, solve
from veritas_dsl.solvers import registry
from veritas_dsl.solvers.base import Limits, UnsupportedQuery


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
    """Solve each query on each engine (unsupported ones are noted, not fatal)."""
    comparisons = []
    for lowered in lowered_queries:
        comparison = Comparison(lowered)
        for name in engines:
            engine = registry.get(name)
            try:
                registry.check_supports(engine, lowered.query)
            except UnsupportedQuery as error:
                comparison.skipped[name] = str(error).split(": ", 1)[-1]
                continue
            if not engine.available():
                comparison.skipped[name] = f"not available ({engine.available().value})"
                continue
            try:
                comparison.results[name] = solve(lowered, name, Limits(timeout_s=timeout_s))
            except SpecError as error:  # the engine refused it while solving (too large, ...)
                comparison.skipped[name] = error.diagnostics[0].message.split(": ", 1)[-1]
        try:
            cross_check(comparison.name, list(comparison.results.values()))
        except EngineDisagreement as error:
            comparison.disagreement = str(error)
        comparisons.append(comparison)
    return comparisons
