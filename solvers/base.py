"""What every engine is: a name, declared capabilities, an availability probe, and ``solve``."""

from __future__ import annotations

import dataclasses
import enum
import time
from dataclasses import dataclass
from typing import Protocol

from veritas_dsl.errors import UserError
from veritas_dsl.ir.bounds import trivial_bounds
from veritas_dsl.ir.constructs import CONSTRUCTS
from veritas_dsl.ir.query import Query
from veritas_dsl.ir.reductions import Chain, ReductionRefused
from veritas_dsl.result import Result, Termination, TracePoint


class Availability(enum.Enum):
    """Whether an engine can run here. Truthy only when it can."""

    AVAILABLE = "available"
    """Installed and usable without restriction."""
    LIMITED_LICENCE = "limited_licence"
    """Usable, but its licence caps the problem size."""
    NOT_INSTALLED = "not_installed"
    """Its package is missing."""
    BAD_LICENCE = "bad_licence"
    """Installed, but no licence lets it run."""

    def __bool__(self) -> bool:
        return self in (Availability.AVAILABLE, Availability.LIMITED_LICENCE)


@dataclass(frozen=True)
class Capabilities:
    """What an engine answers, as data checked before solving.

    Attributes
    ----------
    constructs : frozenset of str
        The query constructs it supports (names from :data:`veritas_dsl.ir.constructs.CONSTRUCTS`).
    limits : frozenset of str
        The limits it honours (names from :data:`LIMITS`); a spec asking it for another one is
        refused before solving, rather than ignored.
    lazy : bool
        It may answer a query of many output constraints in rounds that add them as they are
        needed (:mod:`~veritas_dsl.solvers.lazy`). The oracle does not: it checks the rounds.
    ranks : bool
        It gives the N best distinct solutions itself (``solutions`` among its limits); an
        engine that honours ``solutions`` without it solves again with no-goods
        (:mod:`~veritas_dsl.solvers.nogoods`).
    """

    constructs: frozenset[str]
    limits: frozenset[str] = frozenset({"timeout"})
    lazy: bool = True
    ranks: bool = False

    def __post_init__(self) -> None:
        unknown = (self.constructs - CONSTRUCTS) | (self.limits - LIMITS)
        if unknown:
            raise ValueError(f"unknown constructs or limits {sorted(unknown)}")


#: The limits a spec can ask of an engine (the options of ``solve with``); ``solutions`` asks
#: for the N best distinct solutions (:attr:`Limits.solutions`), which an engine may not give.
LIMITS = frozenset({"timeout", "steps", "memory", "solutions"})


class Stop(Protocol):
    """When a solve may stop before its optimum is proven: ``reached(lower, upper)``, asked of the
    bounds the engine holds (in its own query's sense). :class:`~veritas_dsl.ir.decided.StopRule`
    is one; :func:`route` hands the engine one that reads the bounds in the original query's."""

    def reached(self, lower: float | None, upper: float | None) -> bool: ...

    def all_settled(self, lower: float | None, upper: float | None) -> bool:
        """Whether the bounds settle the checks themselves (not only a gap asked)."""
        ...


@dataclass(frozen=True)
class Limits:
    """Resource limits of one solve; None means unlimited. ``stop``, when given, lets the engine
    stop early once its bounds reach it (termination ``decided``): it is no limit an engine may
    refuse, since running on to the optimum gives the same verdict. ``solutions``, when given,
    asks for the N best distinct solutions of an objective, best first, in the Result's
    witnesses (:func:`veritas_dsl.ir.distinct.leaf_combination` says what distinct means); the
    engine then runs until they are proven, whatever ``stop`` says."""

    timeout_s: float | None = None
    max_steps: int | None = None
    max_memory_bytes: int | None = None
    stop: Stop | None = None
    solutions: int | None = None

    def asked(self) -> frozenset[str]:
        """The names (from :data:`LIMITS`) of the limits set."""
        values = {"timeout": self.timeout_s, "steps": self.max_steps}
        values["memory"] = self.max_memory_bytes
        values["solutions"] = self.solutions
        return frozenset(name for name, value in values.items() if value is not None)


class OutOfTime(Exception):
    """The deadline passed in a phase of an engine's own (building a program, an encoding);
    engines catch it and report ``time_limit`` with the bounds they have."""


@dataclass(frozen=True)
class Deadline:
    """When a solve must stop: ``at`` on the :func:`time.monotonic` clock, None for never."""

    at: float | None = None

    @classmethod
    def after(cls, timeout_s: float | None, start: float) -> Deadline:
        return cls(None if timeout_s is None else start + timeout_s)

    def remaining(self) -> float | None:
        """Seconds left (negative once passed), None without a deadline."""
        return None if self.at is None else self.at - time.monotonic()

    def passed(self) -> bool:
        return self.at is not None and time.monotonic() > self.at

    def check(self) -> None:
        """Raise :class:`OutOfTime` once the deadline has passed."""
        if self.passed():
            raise OutOfTime


class UnsupportedQuery(UserError, ValueError):
    """An engine was asked for a construct it does not support, or a problem beyond its size."""


class Engine(Protocol):
    """The engine interface. ``solve`` never raises for a limit; it reports it in the Result.

    Callers run an engine through :func:`veritas_dsl.solvers.solve.solve`, which checks
    ``capabilities`` (constructs and limits) before ``solve`` runs, so ``solve`` may assume its
    query and limits are within them, and which turns any exception ``solve`` raises, other than
    :class:`UnsupportedQuery` (a refusal found while preparing) and ``KeyboardInterrupt``, into
    an ``error`` Result. Engines never import the registry.

    Every engine stops within about 10 % (plus half a second) of its time limit, whatever phase
    it is in, and then reports the best bounds it has: never less than
    :func:`veritas_dsl.ir.bounds.trivial_bounds`. Ctrl-C (``KeyboardInterrupt``) during ``solve``
    ends it the same way, with termination ``interrupted``.

    ``progress``, when given, is called now and then with an object carrying ``time_s``,
    ``lower``, ``upper`` (and whatever else the engine measures); engines that have nothing to
    report while they work may ignore it.
    """

    name: str
    capabilities: Capabilities
    #: The reductions the engine needs (see :func:`route`); the oracle needs none.
    chain: Chain

    def available(self) -> Availability: ...

    def solve_reduced(self, query: Query, limits: Limits, *, progress=None) -> Result:
        """The engine's own work: answer ``query`` after the route's reductions rewrote it."""
        ...

    def solve(self, query: Query, limits: Limits | None = None, *, progress=None) -> Result:
        """The engine alone, through its own chain (:func:`route` without the shared steps),
        for tests and benchmarks; ``veritas_dsl.solvers.solve.solve`` is the checked route."""
        ...


def unfinished(query: Query, engine: str, termination: Termination, start: float) -> Result:
    """The Result of a solve that a limit or Ctrl-C stopped before it knew more than the
    trivial bounds (while building a program or an encoding, say)."""
    lower, upper = trivial_bounds(query)
    elapsed = time.monotonic() - start
    result = Result(query.name, engine, termination, lower, upper, time_s=elapsed)
    if lower is not None:
        result.trace.append(TracePoint(elapsed, lower, upper))
    return result


def within_trivial(query: Query, result: Result) -> Result:
    """``result``, its bounds narrowed to the trivial bounds when it is not an exact answer (a
    search stopped early may know less than the largest leaves tell)."""
    if result.exact or result.lower is None or result.upper is None:
        return result
    lower, upper = trivial_bounds(query)
    narrowed = (max(result.lower, lower), min(result.upper, upper))
    if narrowed != (result.lower, result.upper):
        result.lower, result.upper = narrowed
        result.trace.append(TracePoint(result.time_s, *narrowed))
    return result


#: No shared steps: an engine's own chain alone.
ALONE = Chain()


def route(
    engine, query: Query, limits: Limits | None = None, progress=None, shared: Chain = ALONE
) -> Result:
    """Answer ``query`` on ``engine`` through one chain of reductions, ``shared`` then the
    engine's own (``engine.chain``), with the engine's :meth:`~Engine.solve_reduced` as its last
    step: the chain rewrites the query, the engine answers the rewritten one, and the chain maps
    the answer (and every progress report) back. The one place a chain is applied. Raises
    :class:`UnsupportedQuery` when a step of the chain refuses the query."""
    chain = Chain(shared.steps + engine.chain.steps)
    try:
        reduced, inverse = chain.apply(query)
    except ReductionRefused as error:
        raise UnsupportedQuery(f"{error}; engine {engine.name} refuses it") from None
    progress = chain.invert_progress(progress, inverse)
    limits = limits or Limits()
    stop = limits.stop
    if limits.stop is not None and chain.steps:
        limits = dataclasses.replace(limits, stop=_InvertedStop(limits.stop, chain, inverse))
    result = chain.invert(engine.solve_reduced(reduced, limits, progress=progress), inverse)
    if result.termination is Termination.DECIDED and not _checks_settled(stop, result):
        result.termination = Termination.GAP  # the gap asked stopped it, not the checks
    return result


def _checks_settled(stop: Stop | None, result: Result) -> bool:
    """Whether ``result``'s bounds settle the checks of ``stop`` (else a gap stopped it)."""
    return stop is None or stop.all_settled(result.lower, result.upper)


@dataclass(frozen=True)
class _InvertedStop:
    """``stop`` asked of a rewritten query's bounds, read as the original query's."""

    stop: Stop
    chain: Chain
    inverse: tuple

    def reached(self, lower: float | None, upper: float | None) -> bool:
        return self.stop.reached(*self.chain.invert_bounds(lower, upper, self.inverse))

    def all_settled(self, lower: float | None, upper: float | None) -> bool:
        return self.stop.all_settled(*self.chain.invert_bounds(lower, upper, self.inverse))


class ChainedEngine:
    """What every engine shares: :meth:`solve`, the engine alone through its own chain."""

    def solve(self, query: Query, limits: Limits | None = None, *, progress=None) -> Result:
        return route(self, query, limits, progress)
