"""The HiGHS driver (``highspy``): the default MILP solver, always installed.

The program is passed in one call as a row-wise sparse matrix. Improving solutions come from the
``MipImprovingSolution`` callback and the dual bound from the ``MipInterrupt`` callback, which
HiGHS calls often during branch and bound (its logging callback stays silent when output is off).
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable

import numpy as np

from veritas_dsl.solvers.milp.outcome import Outcome, Status
from veritas_dsl.solvers.milp.program import Program

#: Tolerances: two distances one float32 step apart (6e-8 near 0.5) must not look equal, neither
#: as rows (primal) nor as reduced costs (dual, default 1e-7); and no optimality gap, so that
#: "optimal" means optimal. 1e-10 is allowed but makes HiGHS's presolve lose optima.
#:
#: HiGHS 1.15 can still stop one float32 step short of a closest distance (0.50000012 where 0.5
#: is feasible; its probing does it, and switching probing off loses whole optima on larger
#: models), so the engine re-solves distance goals once with the objective bounded below the
#: answer (:data:`CHECKS_DISTANCES`).
OPTIONS = {
    "output_flag": False,
    "mip_rel_gap": 0.0,
    "mip_abs_gap": 0.0,
    "mip_feasibility_tolerance": 1e-9,
    "primal_feasibility_tolerance": 1e-9,
    "dual_feasibility_tolerance": 1e-9,
}

#: Whether the engine should confirm a closest distance found by this driver (see OPTIONS).
CHECKS_DISTANCES = True


def silent_highs():
    """A new ``highspy.Highs`` that writes nothing to stdout or stderr, from its construction on.

    HiGHS prints its banner at the first call that logs while ``output_flag`` is on, and
    highspy's constructor makes such a call (it enables callbacks) before any option can be set.
    The subclass switches output off in ``enableCallbacks``, which the constructor calls once the
    solver object exists, so no HiGHS output reaches the terminal (`ver run --json` is JSON).
    """
    return _silent_class()()


@functools.cache
def _silent_class():
    import highspy

    class SilentHighs(highspy.Highs):
        def enableCallbacks(self):
            self.setOptionValue("output_flag", False)
            super().enableCallbacks()

    return SilentHighs


def available() -> bool:
    try:
        import highspy  # noqa: F401
    except ImportError:
        return False
    return True


def solve(
    program: Program,
    timeout_s: float | None = None,
    max_nodes: int | None = None,
    live: Callable[[float, float], None] | None = None,
) -> Outcome:
    """Solve ``program`` with HiGHS within the limits.

    ``live(incumbent, bound)``, when given, sees the solver's own objective values while it runs
    (unchecked; for progress displays only).
    """
    import highspy

    start = time.monotonic()
    if program.n_cols == 0:
        return Outcome(Status.OPTIMAL, np.zeros(0), program.offset, program.offset)
    h = silent_highs()
    for option, value in OPTIONS.items():
        h.setOptionValue(option, value)
    if timeout_s is not None:
        h.setOptionValue("time_limit", max(float(timeout_s), 1e-3))
    if max_nodes is not None:
        h.setOptionValue("mip_max_nodes", int(max_nodes))

    lp = highspy.HighsLp()
    lp.num_col_ = program.n_cols
    lp.num_row_ = program.n_rows
    lp.col_cost_ = program.cost
    lp.col_lower_ = program.col_lower
    lp.col_upper_ = program.col_upper
    lp.row_lower_ = program.row_lower
    lp.row_upper_ = program.row_upper
    lp.offset_ = program.offset
    matrix = lp.a_matrix_
    matrix.format_ = highspy.MatrixFormat.kRowwise
    matrix.num_col_ = program.n_cols
    matrix.num_row_ = program.n_rows
    matrix.start_ = program.row_start.astype(np.int32)
    matrix.index_ = program.row_index
    matrix.value_ = program.row_value
    if program.integer.any():
        kinds = (highspy.HighsVarType.kContinuous, highspy.HighsVarType.kInteger)
        lp.integrality_ = [kinds[int(i)] for i in program.integer]
    h.passModel(lp)

    solutions: list[tuple[float, float, np.ndarray]] = []
    bounds: list[tuple[float, float]] = []

    def improving(event) -> None:
        out = event.data_out
        solutions.append(
            (
                time.monotonic() - start,
                float(out.objective_function_value),
                np.array(out.mip_solution, dtype=np.float64),
            )
        )

    def progress(event) -> None:
        bound = float(event.data_out.mip_dual_bound)
        if math.isfinite(bound) and (not bounds or bound != bounds[-1][1]):
            bounds.append((time.monotonic() - start, bound))
        if live is not None:
            live(float(event.data_out.mip_primal_bound), bound)

    h.cbMipImprovingSolution.subscribe(improving)
    h.cbMipInterrupt.subscribe(progress)
    h.run()
    model_status = h.getModelStatus()
    info = h.getInfo()
    status = _STATUS.get(model_status.name, Status.ERROR)
    if model_status.name == "kSolutionLimit" and max_nodes is None:
        status = Status.ERROR
    solution = None
    objective = None
    if info.primal_solution_status == 2:  # kSolutionStatusFeasible
        solution = np.array(h.getSolution().col_value, dtype=np.float64)
        objective = float(info.objective_function_value)
    bound = float(info.mip_dual_bound) if program.integer.any() else objective
    if status is Status.OPTIMAL and solution is None:
        status = Status.ERROR
    if status is Status.INFEASIBLE:
        solution = objective = bound = None
    return Outcome(
        status=status,
        solution=solution,
        objective=objective,
        bound=bound if bound is not None and math.isfinite(bound) else None,
        solutions=solutions,
        bounds=bounds,
        message=f"HiGHS: {h.modelStatusToString(model_status)}" if status is Status.ERROR else "",
        stats={"nodes": int(info.mip_node_count) if program.integer.any() else 0},
    )


_STATUS = {
    "kOptimal": Status.OPTIMAL,
    "kModelEmpty": Status.OPTIMAL,
    "kInfeasible": Status.INFEASIBLE,
    "kUnboundedOrInfeasible": Status.INFEASIBLE,
    "kTimeLimit": Status.TIME_LIMIT,
    "kSolutionLimit": Status.STEP_LIMIT,
    "kInterrupt": Status.INTERRUPTED,
    "kMemoryLimit": Status.MEMORY_LIMIT,
}
