"""The HiGHS driver (``highspy``): the default MILP solver, always installed.

The program is passed in one call as a row-wise sparse matrix. Improving solutions come from the
``MipImprovingSolution`` callback and the dual bound from the ``MipInterrupt`` callback, which
HiGHS calls often during branch and bound (its logging callback stays silent when output is off);
that callback also stops HiGHS at the engine's deadline and at Ctrl-C (HiGHS runs in a thread of
its own, :mod:`~veritas_dsl.solvers.interrupt`).
"""

from __future__ import annotations

import functools
import math
import threading
import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from veritas_dsl.result import Termination
from veritas_dsl.solvers.interrupt import run_interruptible
from veritas_dsl.solvers.milp.outcome import Outcome
from veritas_dsl.solvers.milp.program import Program

#: Tolerances: two distances one float32 step apart (6e-8 near 0.5) must not look equal, neither
#: as rows (primal) nor as reduced costs (dual, default 1e-7); and no optimality gap, so that
#: "optimal" means optimal. 1e-10 is allowed but makes HiGHS's presolve lose optima.
#:
#: HiGHS 1.15 can still stop one float32 step short of a closest distance (0.50000012 where 0.5
#: is feasible; its probing does it, and switching probing off loses whole optima on larger
#: models), so the engine re-solves distance goals once with the objective bounded below the
#: answer (:data:`CHECKS_DISTANCES`).
#:
#: HiGHS 1.16's Fourier-Motzkin elimination (presolve rule 22), at these tolerances, drops the
#: optimum of a small L1 query (a distance column whose upper bound is exactly the sum of its
#: terms, a segment ending at the subnormal below 0) and reports the worse value as optimal
#: (tests/solvers/test_milp.py::test_highs_l1_across_a_threshold_at_zero); it is switched off.
#: Earlier releases, which do not have it, ignore the bit.
FOURIER_MOTZKIN = 1 << 22
OPTIONS = {
    "output_flag": False,
    "mip_rel_gap": 0.0,
    "mip_abs_gap": 0.0,
    "mip_feasibility_tolerance": 1e-9,
    "primal_feasibility_tolerance": 1e-9,
    "dual_feasibility_tolerance": 1e-9,
    "presolve_rule_off": FOURIER_MOTZKIN,
}

#: Whether the engine should confirm a closest distance found by this driver (see OPTIONS).
CHECKS_DISTANCES = True

#: HiGHS's share of the time left. Its presolve watches its time limit only now and then: on 300
#: trees of depth 6 probing stopped at the limit, then tidying up took up to a quarter as long
#: again. Once branch and bound runs, the interrupt callbacks stop it at the deadline itself.
TIME_SHARE = 0.8
#: Before HiGHS first reads its clock it works in proportion to the program: handing it over and
#: starting presolve took 1.5 to 4 us per nonzero on a loaded 2-core machine (0.25 to 0.5 s at
#: 270,000). With less time left than this much per nonzero, HiGHS is not started.
SECONDS_PER_NONZERO = 2e-6


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
    (unchecked; for progress displays, and to stop with status ``DECIDED`` when it returns
    True). Ctrl-C, or a ``KeyboardInterrupt`` from ``live``, stops HiGHS at its next interrupt
    callback, with status ``INTERRUPTED``.
    """

    start = time.monotonic()
    deadline = math.inf if timeout_s is None else start + timeout_s
    if program.n_cols == 0:
        return Outcome(Termination.OPTIMAL, np.zeros(0), program.offset, program.offset)
    if timeout_s is not None and timeout_s < SECONDS_PER_NONZERO * program.n_nonzeros:
        return Outcome(Termination.TIME_LIMIT)
    h = silent_highs()
    for option, value in OPTIONS.items():
        h.setOptionValue(option, value)
    if max_nodes is not None:
        h.setOptionValue("mip_max_nodes", int(max_nodes))
    h.passModel(_lp(program))

    solutions: list[tuple[float, float, np.ndarray]] = []
    bounds: list[tuple[float, float]] = []
    interrupted = threading.Event()
    settled = threading.Event()

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
            try:
                if live(float(event.data_out.mip_primal_bound), bound):
                    settled.set()
            except KeyboardInterrupt:
                interrupted.set()
        if interrupted.is_set() or settled.is_set() or time.monotonic() > deadline:
            event.interrupt()

    h.cbMipImprovingSolution.subscribe(improving)
    h.cbMipInterrupt.subscribe(progress)
    if timeout_s is not None:  # what building the model left
        h.setOptionValue("time_limit", max(TIME_SHARE * (deadline - time.monotonic()), 1e-3))
    def stop() -> None:
        # HiGHS calls no callback during presolve, which took 12 s on 400 trees of depth 8
        # (Ctrl-C waited for it); it does read its time limit there, so that goes to 0.
        interrupted.set()
        h.setOptionValue("time_limit", 0.0)

    ran = time.monotonic()
    run_interruptible(h.run, stop)  # HiGHS releases the GIL while it runs
    ran = time.monotonic() - ran
    outcome = _outcome(h, program, interrupted.is_set(), max_nodes is not None, settled.is_set())
    stats = {**outcome.stats, "solver_s": ran}
    return replace(outcome, solutions=solutions, bounds=bounds, stats=stats)


def _lp(program: Program):
    """``program`` as a ``highspy.HighsLp``, rows in compressed sparse form."""
    import highspy

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
    return lp


def _outcome(
    h, program: Program, interrupted: bool, node_limit: bool, settled: bool = False
) -> Outcome:
    """What HiGHS ``h`` ended with: its status as ours (the deadline, which our callback enforces,
    is a time limit; settled bounds are ``decided``; Ctrl-C an interruption), and its solution
    and bound when they exist."""
    model_status = h.getModelStatus()
    info = h.getInfo()
    status = _STATUS.get(model_status.name, Termination.ERROR)
    if status is Termination.INTERRUPTED and not interrupted:
        # our callbacks stopped it: its bounds settled the checks, or the deadline passed
        status = Termination.DECIDED if settled else Termination.TIME_LIMIT
    if status is Termination.TIME_LIMIT and interrupted:
        status = Termination.INTERRUPTED  # Ctrl-C set its time limit to 0 (see solve)
    if model_status.name == "kSolutionLimit" and not node_limit:
        status = Termination.ERROR
    solution = None
    objective = None
    if info.primal_solution_status == 2:  # kSolutionStatusFeasible
        solution = np.array(h.getSolution().col_value, dtype=np.float64)
        objective = float(info.objective_function_value)
    bound = float(info.mip_dual_bound) if program.integer.any() else objective
    if status is Termination.OPTIMAL and solution is None:
        status = Termination.ERROR
    if status is Termination.INFEASIBLE:
        solution = objective = bound = None
    return Outcome(
        status=status,
        solution=solution,
        objective=objective,
        bound=bound if bound is not None and math.isfinite(bound) else None,
        message=f"HiGHS: {h.modelStatusToString(model_status)}"
        if status is Termination.ERROR
        else "",
        stats={"nodes": int(info.mip_node_count) if program.integer.any() else 0},
    )


_STATUS = {
    "kOptimal": Termination.OPTIMAL,
    "kModelEmpty": Termination.OPTIMAL,
    "kInfeasible": Termination.INFEASIBLE,
    "kUnboundedOrInfeasible": Termination.INFEASIBLE,
    "kTimeLimit": Termination.TIME_LIMIT,
    "kSolutionLimit": Termination.STEP_LIMIT,
    "kInterrupt": Termination.INTERRUPTED,
    "kMemoryLimit": Termination.MEMORY_LIMIT,
}
