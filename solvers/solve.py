"""The one way to run an engine on a query: the engine contract, applied the same to every engine.

Before the engine runs, its declared capabilities are checked: the query's constructs and the
limits asked (a limit it would ignore is refused), each refusal naming the engines that can (a
run checks them once, for all its queries, before any runs: :func:`answer` skips it). While
it runs, an exception of the engine (a fault, never an answer) becomes an ``error`` Result that
carries it. Limits and Ctrl-C are the engine's own business: it reports them in its Result (a
``KeyboardInterrupt`` it lets through is left to the caller, who knows what else was under way).
"""

from __future__ import annotations

import logging
import time

from veritas_dsl.ir.bounds import trivial_bounds
from veritas_dsl.ir.query import Query, goal_terms
from veritas_dsl.ir.reductions import CancelTrees, Chain
from veritas_dsl.result import Result, Termination
from veritas_dsl.solvers import registry
from veritas_dsl.solvers.base import Engine, Limits, UnsupportedQuery, route
from veritas_dsl.solvers.lazy import Lazy, lazily
from veritas_dsl.solvers.nogoods import NoGoods

logger = logging.getLogger("veritas_dsl")

#: Rewrites every engine's query goes through before its own chain: trees that cancel in a term
#: of outputs (``after(x) - before(x)``) are gone before any engine sees them.
SHARED = Chain((CancelTrees(),))


def check(engine: Engine, query: Query, limits: Limits) -> None:
    """Raise :class:`UnsupportedQuery` when ``engine`` lacks a construct of ``query`` or cannot
    honour one of ``limits``, naming the engines that can, or when ``solutions`` are asked of a
    query without an objective of model outputs to rank them."""
    registry.check_supports(engine, query)
    registry.check_limits(engine, limits)
    if limits.solutions and not goal_terms(query.goal):
        raise UnsupportedQuery(
            f"query {query.name}: solutions = N ranks the values of an objective of model "
            "outputs (maximize or minimize); this query has none"
        )


def solve(
    engine: Engine,
    query: Query,
    limits: Limits | None = None,
    progress=None,
    shared: Chain = SHARED,
) -> Result:
    """``engine``'s answer to ``query`` within ``limits``.

    Raises :class:`UnsupportedQuery` when the engine refuses the query, before it runs (see
    :func:`check`) or while it prepares (a combination it cannot decide, a problem too large:
    the message then names the other engines that declare the query's constructs).
    Any other exception of the engine gives an ``error`` Result with the trivial bounds, its
    message naming the exception and ``error`` holding it; its traceback is logged (debug level,
    logger ``veritas_dsl``: ``ver --debug`` shows it). ``progress`` is handed to the engine
    (see :class:`~veritas_dsl.solvers.base.Engine`). A query of many output constraints is
    answered in rounds that add them as they are needed: ``engine`` wrapped in
    :class:`~veritas_dsl.solvers.lazy.Lazy`, on the same route.
    ``shared`` replaces :data:`SHARED` only to measure what the shared rewrites save.
    """
    limits = limits or Limits()
    check(engine, query, limits)
    return answer(engine, query, limits, progress, shared)


def answer(
    engine: Engine,
    query: Query,
    limits: Limits,
    progress=None,
    shared: Chain = SHARED,
) -> Result:
    """:func:`solve` without the check of capabilities, for callers that checked them once
    before (``veritas_dsl.run.plan``, for every query of a run, before any runs)."""
    if lazily(engine, query, limits):
        engine = Lazy(engine)
    if limits.solutions and not engine.capabilities.ranks:
        engine = NoGoods(engine)
    start = time.monotonic()
    try:
        return route(engine, query, limits, progress, shared)
    except UnsupportedQuery as refusal:
        others = registry.able(query, but=engine)
        hint = f"; engines that can: {', '.join(others)}" if others else ""
        raise UnsupportedQuery(f"{refusal}{hint}") from None
    except Exception as error:  # an engine's fault is reported, never raised
        logger.debug("engine %s failed on query %s", engine.name, query.name, exc_info=error)
        return _fault(query, engine.name, error, time.monotonic() - start)


def _fault(query: Query, engine: str, error: Exception, time_s: float = 0.0) -> Result:
    """The ``error`` Result of ``engine`` raising ``error`` on ``query``."""
    return Result(
        query.name,
        engine,
        Termination.ERROR,
        *trivial_bounds(query),
        time_s=time_s,
        message=f"{type(error).__name__}: {error}",  # reports say which engine failed
        error=error,
    )
