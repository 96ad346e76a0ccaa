"""The engines, listed explicitly, under the names the language uses.

An engine's package is imported when the engine is first asked to work: what each one declares
(its capabilities) and whether it can run here are read from the light ``__init__`` of its
package, so that choosing engines, checking a spec or listing the engines imports no Numba,
PySAT or HiGHS.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from veritas_dsl.ir.constructs import constructs
from veritas_dsl.ir.query import Query
from veritas_dsl.solvers import astar, milp, oracle, sat
from veritas_dsl.solvers.base import Availability, Capabilities, Engine, Limits, UnsupportedQuery


class Registered:
    """An engine as the registry lists it: its name, capabilities and availability, and the
    engine itself (``build()``), built when first asked for anything else (``chain``,
    ``solve_reduced``, ``solve``, an engine's own methods), which are then the engine's."""

    def __init__(
        self,
        name: str,
        capabilities: Capabilities,
        available: Callable[[], Availability],
        build: Callable[[], Engine],
    ) -> None:
        self.name = name
        self.capabilities = capabilities
        self.available = available
        self.build = build

    @functools.cached_property
    def engine(self) -> Engine:
        engine = self.build()
        assert (engine.name, engine.capabilities) == (self.name, self.capabilities), self.name
        return engine

    def __getattr__(self, attribute: str) -> object:
        # copy and pickle probe for dunders, which the engine lacks too; and an AttributeError
        # raised while building the engine must not come back here for it
        if attribute.startswith("__") or attribute == "engine":
            raise AttributeError(attribute)
        return getattr(self.engine, attribute)


def _oracle() -> Engine:
    from veritas_dsl.solvers.oracle.engine import OracleEngine

    return OracleEngine()


def _astar() -> Engine:
    from veritas_dsl.solvers.astar.engine import AStarEngine

    return AStarEngine()


def _milp(name: str, driver: milp.Driver) -> Engine:
    from veritas_dsl.solvers.milp.engine import MilpEngine

    return MilpEngine(name, driver)


def _sat() -> Engine:
    from veritas_dsl.solvers.sat.engine import SatEngine

    return SatEngine()


ENGINES: dict[str, Engine] = {
    engine.name: engine
    for engine in (
        Registered("oracle", oracle.CAPABILITIES, oracle.available, _oracle),
        Registered("astar", astar.CAPABILITIES, astar.available, _astar),
        Registered(
            "milp",
            milp.capabilities("auto"),
            functools.partial(milp.available, "auto"),
            functools.partial(_milp, "milp", "auto"),
        ),
        Registered(
            "gurobi",
            milp.capabilities("gurobi"),
            functools.partial(milp.available, "gurobi"),
            functools.partial(_milp, "gurobi", "gurobi"),
        ),
        Registered("sat", sat.CAPABILITIES, sat.available, _sat),
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
