"""Engines that misbehave on purpose, registered for one test: one that fails, one that raises, one
that stands for Ctrl-C during a search (as every engine reports it), one that lets Ctrl-C escape,
and one that is not installed."""

from __future__ import annotations

from dataclasses import replace

from veritas_dsl.ir.bounds import trivial_bounds
from veritas_dsl.result import Result, Termination
from veritas_dsl.solvers import registry
from veritas_dsl.solvers.base import Availability
from veritas_dsl.solvers.oracle.engine import OracleEngine

FAILURE = "the solver stopped with status 7 (out of luck)"


class Failing(OracleEngine):
    """Ends in ``error`` with a message, and with bounds that are no bounds (as MILP on HiGHS
    gave after Ctrl-C: [-inf, 1e-09] for a maximum of 7)."""

    name = "failing"

    def solve_reduced(self, query, limits, *, progress=None):
        lower, upper = trivial_bounds(query)
        if upper is not None:
            lower = upper = 1e-9
        return Result(query.name, self.name, Termination.ERROR, lower, upper, message=FAILURE)


class Raising(OracleEngine):
    """Raises from ``solve_reduced``, as a bug in an engine would."""

    name = "raising"

    def solve_reduced(self, query, limits, *, progress=None):
        raise ZeroDivisionError("a bug in the engine")


class Stopped(OracleEngine):
    """The oracle's answer and witness, reported as cut short by Ctrl-C."""

    name = "stopped"

    def solve_reduced(self, query, limits, *, progress=None):
        result = super().solve_reduced(query, replace(limits, stop=None))  # the whole answer
        return replace(result, engine=self.name, termination=Termination.INTERRUPTED)


class Escaping(OracleEngine):
    """Lets Ctrl-C out of ``solve_reduced``, as an engine that does not catch it would."""

    name = "escaping"

    def solve_reduced(self, query, limits, *, progress=None):
        raise KeyboardInterrupt


class Absent(OracleEngine):
    """Not installed here."""

    name = "absent"

    def available(self) -> Availability:
        return Availability.NOT_INSTALLED


def register(monkeypatch) -> None:
    """Register the engines above for one test."""
    for engine in (Failing(), Raising(), Stopped(), Escaping(), Absent()):
        monkeypatch.setitem(registry.ENGINES, engine.name, engine)
