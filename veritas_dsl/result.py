"""What an engine returns: why it stopped, kept apart from what it found."""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np


class Termination(enum.Enum):
    """Why an engine stopped (Pyomo's ``TerminationCondition``); what it found is
    :attr:`Result.solution`. Limits are never merged: each has its own member."""

    OPTIMAL = "optimal"
    """The engine finished its work: the optimum is proven (``lower == upper``), or for find and
    prove a witness (a counterexample, for prove) was found and the engine stopped on it."""
    INFEASIBLE = "infeasible"
    """No input satisfies the constraints; for prove, no counterexample exists, so it holds if
    some input satisfies its premise (the run checks that: ``veritas_dsl.vacuity``)."""
    DECIDED = "decided"
    """The engine stopped early, its bounds having settled every check it was given
    (``Limits.stop``: a query's ``expect`` lines, :mod:`veritas_dsl.ir.decided`). The bounds are
    valid; the optimum is not proven."""
    GAP = "gap"
    """The engine stopped early, its bounds within the gap asked (``solve with astar(gap =
    1%)``; :class:`~veritas_dsl.ir.decided.StopRule`). The bounds are valid; the optimum is not
    proven."""
    TIME_LIMIT = "time_limit"
    """The time limit was reached; the bounds are valid but may not meet. A witness found
    before keeps its worth: for find and prove it answers the question (see
    :class:`Solution`)."""
    STEP_LIMIT = "step_limit"
    """The step (node, expansion) limit was reached."""
    MEMORY_LIMIT = "memory_limit"
    """The engine's memory limit was reached; it stopped cleanly."""
    LICENCE_LIMIT = "licence_limit"
    """The solver's licence does not allow a problem of this size."""
    INTERRUPTED = "interrupted"
    """The user interrupted the run."""
    ERROR = "error"
    """The engine failed; ``Result.message`` says why and ``Result.error`` holds the exception
    when one was raised. Its bounds promise nothing beyond the trivial ones."""
    UNSUPPORTED = "unsupported"
    """The engine refused the query and did not run (a ``--solver`` for the whole file that
    lacks a construct of this query); ``Result.message`` names the construct and the engines
    that can."""


class Solution(enum.Enum):
    """What an engine found, whatever it stopped for (Pyomo's ``SolutionStatus``); derived from
    a Result's termination, bounds and witnesses by :attr:`Result.solution`."""

    NONE = "none"
    """No witness, and nothing proven: the engine stopped (or failed) before."""
    FEASIBLE = "feasible"
    """A witness of an objective or distance goal, not proven optimal: ``lower`` and ``upper``
    bound the optimum."""
    OPTIMAL = "optimal"
    """The answer: a proven optimum; for find and prove (no objective) any witness, even one
    found just before a limit stopped the engine."""
    INFEASIBLE = "infeasible"
    """Proven: no input satisfies the constraints (for prove, no counterexample exists)."""


@dataclass(frozen=True)
class Witness:
    """A concrete input: one float32 vector per instance, in the query's feature order.

    ``value`` is the objective at this input (for optimisation and distance goals), computed on
    the Ensemble; witnesses are validated against the original library model before reporting.
    """

    inputs: Mapping[str, np.ndarray]
    value: float | None = None


#: Terminations whose Result promises nothing it found.
_FAILED = (Termination.ERROR, Termination.UNSUPPORTED)


@dataclass(frozen=True)
class TracePoint:
    """The bounds known ``time_s`` seconds after the start."""

    time_s: float
    lower: float
    upper: float


@dataclass
class Result:
    """An engine's answer to one query.

    Attributes
    ----------
    query, engine : str
        Which query, answered by which engine.
    termination : Termination
        Why the engine stopped.
    lower, upper : float or None
        Bounds on the optimum of an optimisation or distance goal (``lower <= optimum <=
        upper``; ``-inf`` for both when a maximisation is infeasible, ``+inf`` when a
        minimisation is). None for find and prove goals.
    witnesses : list of Witness
        Concrete inputs found; the first is the best. For prove, counterexamples. With
        ``solutions = N`` asked, up to N distinct solutions, best first, each with its value.
    trace : list of TracePoint
        How the bounds moved over time.
    stats : dict
        Engine statistics (states expanded, states per second, ...), plain numbers and strings.
    time_s : float
        Wall time of the solve.
    message : str
        A human note: the error, or a change of engine.
    error : BaseException or None
        The exception of an ``error`` Result, when the engine raised one (with its traceback,
        for a caller to inspect; not compared, and not sent between processes).
    solutions_proven : int or None
        With ``solutions = N`` asked (``Limits.solutions``): how many of :attr:`witnesses`,
        from the first, are proven to be the best distinct solutions in order (ties in any
        order); all of them once the engine finished. None when no solutions were asked.
    """

    query: str
    engine: str
    termination: Termination
    lower: float | None = None
    upper: float | None = None
    witnesses: list[Witness] = field(default_factory=list)
    trace: list[TracePoint] = field(default_factory=list)
    stats: dict[str, float | int | str] = field(default_factory=dict)
    time_s: float = 0.0
    message: str = ""
    error: BaseException | None = field(default=None, compare=False, repr=False)
    solutions_proven: int | None = None

    @property
    def solution(self) -> Solution:
        """What the engine found, kept apart from why it stopped (:attr:`termination`)."""
        if self.termination is Termination.INFEASIBLE:
            return Solution.INFEASIBLE
        if self.termination is Termination.OPTIMAL:
            return Solution.OPTIMAL
        if self.witnesses and self.termination not in _FAILED:
            # Find and prove (no objective, so no bounds) are answered by any witness.
            return Solution.OPTIMAL if self.lower is None else Solution.FEASIBLE
        return Solution.NONE

    @property
    def exact(self) -> bool:
        """True when the question is answered (:attr:`solution` optimal or infeasible), even if
        a limit stopped the engine after a find's witness."""
        return self.solution in (Solution.OPTIMAL, Solution.INFEASIBLE)

    def __getstate__(self) -> dict:
        # An exception may not survive pickling (``--jobs`` workers send Results back): keep
        # its text only, which ``message`` already holds.
        return {**self.__dict__, "error": None}

    def solutions_note(self, asked: int) -> str:
        """What a Result of ``solutions = asked`` says of its solutions, or "" when it holds
        the ``asked`` best, proven: fewer exist, or a limit came before they were proven."""
        found, proven = len(self.witnesses), self.solutions_proven
        if proven is None or found == proven == asked or self.solution is Solution.INFEASIBLE:
            return ""
        if proven == found and self.exact:
            return f"only {found} distinct solutions exist ({asked} asked)"
        return f"the first {proven} of {found} solutions found are proven in order ({asked} asked)"

    @property
    def gap(self) -> float | None:
        """``upper - lower`` (0 when both are the same infinity), or None without bounds."""
        if self.lower is None or self.upper is None:
            return None
        if self.lower == self.upper:
            return 0.0
        return self.upper - self.lower if math.isfinite(self.upper - self.lower) else math.inf
