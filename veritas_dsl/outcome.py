"""What running queries gave, as plain data: the verdict of each check (:class:`Check`), each
lowered query's results and checks (:class:`QueryRun`), each checked file (:class:`FileOutcome`),
and the runs an interrupt left behind (:class:`Interrupted`).

The run layer fills these in; reports, the spec API and the command line read them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from veritas_dsl.diagnostics import Diagnostic, Span
from veritas_dsl.ir.constructs import GOAL_KINDS
from veritas_dsl.ir.lowered import Lowered
from veritas_dsl.result import Result, Termination


class Verdict(enum.Enum):
    """The verdict of one check."""

    HOLDS = "holds"
    """The property or expectation is proven."""
    FAILED = "failed"
    """It is refuted (a counterexample, or bounds that break it)."""
    VACUOUS = "vacuous"
    """It holds only because no input satisfies its premise: it proves nothing, so it fails."""
    UNDECIDED = "undecided"
    """The engine stopped at a limit before it could tell; it counts as not holding."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C stopped a run. ``partial`` holds what finished before, in order, and last the run
    the interrupt stopped (its engine's bounds so far), when there is one."""

    def __init__(self, partial: list) -> None:
        super().__init__()
        self.partial = partial


@dataclass(frozen=True)
class Check:
    """The verdict of one expectation or property, and the fact it rests on (``detail``)."""

    text: str
    verdict: Verdict
    detail: str
    span: Span

    @property
    def holds(self) -> bool | None:
        """True when it holds, None when undecided, False when it fails or is vacuous."""
        if self.verdict is Verdict.UNDECIDED:
            return None
        return self.verdict is Verdict.HOLDS


@dataclass
class QueryRun:
    """One lowered query, its results (one per engine; the first is reported), and its checks."""

    lowered: Lowered
    results: list[Result] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.lowered.query.name

    @property
    def result(self) -> Result:
        return self.results[0]

    @property
    def kind(self) -> str:
        return goal_kind(self.lowered.query.goal)

    @property
    def feature_names(self) -> tuple[str, ...]:
        """The features in the order of every witness vector."""
        return tuple(f.name for f in self.lowered.query.features)

    @property
    def failed(self) -> bool:
        return any(check.holds is not True for check in self.checks)

    @property
    def errored(self) -> bool:
        """An engine failed or refused the query: the run did not do what was asked."""
        return any(r.termination in NOT_RUN for r in self.results)

    @property
    def interrupted(self) -> bool:
        return any(r.termination is Termination.INTERRUPTED for r in self.results)


#: Terminations of an engine that did not do what was asked (it failed or refused the query).
NOT_RUN = (Termination.ERROR, Termination.UNSUPPORTED)


#: The kind of query each goal is, as reports name it.
KINDS = GOAL_KINDS


def goal_kind(goal) -> str:
    return KINDS[type(goal)]


@dataclass
class FileOutcome:
    """What checking one spec file gave: its runs, or the diagnostics that stopped it."""

    path: str
    runs: list[QueryRun] = field(default_factory=list)
    errors: tuple[Diagnostic, ...] = ()
    warnings: tuple[Diagnostic, ...] = ()
    reference_rows: dict[int, dict[str, float]] = field(default_factory=dict)
    interrupted: bool = False
