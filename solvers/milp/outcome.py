"""What a MILP driver returns: why the solver stopped, its best solution, and what it streamed."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from veritas_dsl.result import Termination


@dataclass
class Outcome:
    """One run of a solver on a :class:`~veritas_dsl.solvers.milp.program.Program`.

    Objective values and bounds are in the program's sense (minimisation, offset included), in
    the program's units until :meth:`in_units` turns them into the goal's.

    Attributes
    ----------
    status : Termination
        Why the solver stopped. ``optimal``: optimal within the solver's tolerances (gaps set
        to zero), or for no objective, feasible; ``error``: anything unexpected, ``message``
        says what. The engine decides what the run as a whole reports.
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

    status: Termination
    solution: np.ndarray | None = None
    objective: float | None = None
    bound: float | None = None
    solutions: list[tuple[float, float, np.ndarray]] = field(default_factory=list)
    bounds: list[tuple[float, float]] = field(default_factory=list)
    message: str = ""
    stats: dict[str, float | int | str] = field(default_factory=dict)

    def in_units(self, unit: float) -> Outcome:
        """This outcome with objectives and bounds multiplied by ``unit`` (a power of two, so
        exactly): from the program's units into the goal's (``Formulation.unit``)."""

        def scaled(value: float | None) -> float | None:
            return None if value is None else value * unit

        return replace(
            self,
            objective=scaled(self.objective),
            bound=scaled(self.bound),
            solutions=[(t, value * unit, x) for t, value, x in self.solutions],
            bounds=[(t, value * unit) for t, value in self.bounds],
        )
