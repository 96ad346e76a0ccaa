"""The engines, listed explicitly, under the names the language uses."""

from __future__ import annotations

from veritas_dsl.ir.constructs import constructs
from veritas_dsl.ir.query import Query
from veritas_dsl.solvers.astar.engine import AStarEngine
from veritas_dsl.solvers.base import Engine, Limits, UnsupportedQuery
from veritas_dsl.solvers.milp.engine import MilpEngine
from veritas_dsl.solvers.oracle.engine import OracleEngine
from veritas_dsl.solvers.sat.engine import SatEngine

ENGINES: dict[str, Engine] = {
    engine.name: engine
    for engine in (
        OracleEngine(),
        AStarEngine(),
        MilpEngine("milp", "auto"),
        MilpEngine("gurobi", "gurobi"),
        SatEngine(),
    )
}


def get(name: str) -> Engine:
    """The engine called ``name``."""
    try:
        return ENGINES[name]
    except KeyError:
        raise UnsupportedQuery(
            f"unknown engine {name!r}; engines are {', '.join(sorted(ENGINES))}"
        ) from None


def able(query: Query, but: Engine | None = None) -> list[str]:
    """The engines (other than ``but``, or the engine it wraps) that declare every construct of
    ``query``."""
    needed = constructs(query)
    return [
        name
        for name, other in ENGINES.items()
        if (but is None or name != but.name) and needed <= other.capabilities.constructs
    ]


def check_supports(engine: Engine, query: Query) -> None:
    """Raise :class:`UnsupportedQuery` naming the constructs ``engine`` lacks and who has them."""
    missing = sorted(constructs(query) - engine.capabilities.constructs)
    if not missing:
        return
    names = ", ".join(able(query))
    hint = f"; engines that can: {names}" if names else "; no engine supports all of them"
    raise UnsupportedQuery(
        f"query {query.name}: engine {engine.name} does not support {', '.join(missing)}{hint}"
    )


def check_limits(engine: Engine, limits: Limits) -> None:
    """Raise :class:`UnsupportedQuery` when ``limits`` sets one ``engine`` cannot honour, naming
    the engines that can: a limit that would be ignored is refused instead."""
    missing = sorted(limits.asked() - engine.capabilities.limits)
    if not missing:
        return
    able = [name for name, other in ENGINES.items() if limits.asked() <= other.capabilities.limits]
    hint = f"; engines that can: {', '.join(able)}" if able else ""
    raise UnsupportedQuery(f"engine {engine.name} cannot honour {', '.join(missing)}{hint}")
