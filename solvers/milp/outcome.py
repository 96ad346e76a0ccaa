"""What a MILP driver returns: why the solver stopped, its best solution, and what it streamed."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

import numpy as np


class Status(enum.Enum):
    """Why a driver's solver stopped; mapped onto :class:`~veritas_dsl.result.Termination`."""

    OPTIMAL = "optimal"
    """Optimal within the solver's tolerances (gaps set to zero); for no objective, feasible."""
    INFEASIBLE = "infeasible"
    """No solution exists."""
    TIME_LIMIT = "time_limit"
    """The time limit was reached."""
    STEP_LIMIT = "step_limit"
    """The branch-and-bound node limit was reached."""
    MEMORY_LIMIT = "memory_limit"
    """The solver's memory limit was reached."""
    LICENCE_LIMIT = "licence_limit"
    """The licence does not allow a model of this size."""
    INTERRUPTED = "interrupted"
    """Interrupted by the user."""
    ERROR = "error"
    """Anything else; ``Outcome.message`` says what."""


@dataclass
class Outcome:
    """One run of a solver on a :class:`~veritas_dsl.solvers.milp.program.Program`.

    Objective values and bounds are in the program's sense (minimisation, offset included).

    Attributes
    ----------
    status : Status
    solution : float64 array of shape (n_cols,), or None
        The best solution found.
    objective, bound : float or None
        Its objective, and the solver's lower bound on the optimum.
    solutions : list of (time_s, objective, solution)
        Every improving solution, as the solver's callback reported it.
    bounds : list of (time_s, bound)
        The lower bound whenever the callback saw it move.
    message : str
    stats : dict
    """

    status: Status
    solution: np.ndarray | None = None
    objective: float | None = None
    bound: float | None = None
    solutions: list[tuple[float, float, np.ndarray]] = field(default_factory=list)
    bounds: list[tuple[float, float]] = field(default_factory=list)
    message: str = ""
    stats: dict[str, float | int | str] = field(default_factory=dict)
