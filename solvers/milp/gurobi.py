"""The Gurobi driver (``gurobipy``, optional), and the probe of its licence.

The licence is probed once per process, the way Pyomo does it: a model of 2,001 variables is
solved, and the size-limited licence that ships with ``pip install gurobipy`` refuses it with error
10010. A size-limited licence allows :data:`SIZE_LIMIT` variables and as many linear constraints.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from veritas_dsl.result import Termination
from veritas_dsl.solvers.base import Availability
from veritas_dsl.solvers.milp.outcome import Outcome
from veritas_dsl.solvers.milp.program import Program

#: Variables, and linear constraints, that the size-limited licence allows.
SIZE_LIMIT = 2000
#: Gurobi's error number for a model beyond a size-limited licence.
ERROR_SIZE_LIMIT = 10010


@functools.cache
def _environment():
    """One silent Gurobi environment per process (starting one checks the licence).

    Output is switched off before ``start``, which would otherwise print the licence banner;
    every model, the licence probe's included, is built in this environment.
    """
    import gurobipy

    env = gurobipy.Env(empty=True)
    env.setParam("OutputFlag", 0)
    env.setParam("LogToConsole", 0)
    env.start()
    return env


@functools.cache
def licence() -> Availability:
    """What the installed Gurobi licence allows, probed once per process."""
    try:
        import gurobipy
    except ImportError:
        return Availability.NOT_INSTALLED
    try:
        model = gurobipy.Model(env=_environment())
        model.addVars(SIZE_LIMIT + 1, ub=1.0)
        model.optimize()
        model.dispose()
    except gurobipy.GurobiError as error:
        if error.errno == ERROR_SIZE_LIMIT:
            return Availability.LIMITED_LICENCE
        return Availability.BAD_LICENCE
    return Availability.AVAILABLE


def model_size(program: Program) -> tuple[int, int]:
    """``(variables, linear constraints)`` of ``program`` as Gurobi counts them: a row bounded on
    both sides (and not an equality) becomes two constraints."""
    ranged = np.isfinite(program.row_lower) & np.isfinite(program.row_upper)
    ranged &= program.row_lower != program.row_upper
    return program.n_cols, program.n_rows + int(ranged.sum())


def fits_limited_licence(program: Program) -> bool:
    variables, constraints = model_size(program)
    return variables <= SIZE_LIMIT and constraints <= SIZE_LIMIT


def size_message(program: Program) -> str:
    variables, constraints = model_size(program)
    return (
        f"the model has {variables} variables and {constraints} linear constraints, beyond the "
        f"{SIZE_LIMIT} of each that Gurobi's size-limited licence allows"
    )


def solve(
    program: Program,
    timeout_s: float | None = None,
    max_nodes: int | None = None,
    max_memory_bytes: int | None = None,
    live: Callable[[float, float], None] | None = None,
) -> Outcome:
    """Solve ``program`` with Gurobi within the limits (``live`` as in :func:`.highs.solve`).

    Gurobi stops itself at Ctrl-C (status ``INTERRUPTED``); a ``KeyboardInterrupt`` from ``live``
    terminates it the same way. Building the model watches the time limit too.
    """
    import gurobipy
    from gurobipy import GRB

    start = time.monotonic()
    model = gurobipy.Model(env=_environment())
    try:
        params = {
            "MIPGap": 0.0,
            "MIPGapAbs": 0.0,
            "IntFeasTol": 1e-9,
            "FeasibilityTol": 1e-9,
            "OptimalityTol": 1e-9,
            "Threads": 1,
        }
        if max_nodes is not None:
            params["NodeLimit"] = float(max_nodes)
        if max_memory_bytes is not None:
            params["MemLimit"] = max_memory_bytes / 2**30
        for name, value in params.items():
            model.setParam(name, value)
        deadline = math.inf if timeout_s is None else start + timeout_s
        x = _build(model, program, deadline)
        if x is None:
            return Outcome(Termination.TIME_LIMIT)
        columns = x.tolist()
        solutions: list[tuple[float, float, np.ndarray]] = []
        bounds: list[tuple[float, float]] = []
        settled = []

        def callback(m, where) -> None:
            if where == GRB.Callback.MIPSOL:
                solutions.append(
                    (
                        time.monotonic() - start,
                        float(m.cbGet(GRB.Callback.MIPSOL_OBJ)),
                        np.array(m.cbGetSolution(columns), dtype=np.float64),
                    )
                )
            elif where == GRB.Callback.MIP:
                bound = float(m.cbGet(GRB.Callback.MIP_OBJBND))
                if (
                    math.isfinite(bound)
                    and abs(bound) < GRB.INFINITY
                    and (not bounds or bound != bounds[-1][1])
                ):
                    bounds.append((time.monotonic() - start, bound))
                if live is not None:
                    best = float(m.cbGet(GRB.Callback.MIP_OBJBST))
                    best = best if abs(best) < GRB.INFINITY else math.inf
                    try:
                        if live(best, bound if abs(bound) < GRB.INFINITY else -math.inf):
                            settled.append(True)
                            m.terminate()
                    except KeyboardInterrupt:
                        m.terminate()  # Gurobi then reports INTERRUPTED

        if timeout_s is not None:  # what building the model left
            model.setParam("TimeLimit", max(start + timeout_s - time.monotonic(), 1e-3))
        ran = time.monotonic()
        try:
            model.optimize(callback)
        except gurobipy.GurobiError as error:
            if error.errno == ERROR_SIZE_LIMIT:
                return Outcome(Termination.LICENCE_LIMIT, message=size_message(program))
            return Outcome(Termination.ERROR, message=f"Gurobi: {error}")
        ran = time.monotonic() - ran
        outcome = _outcome(model, x)
        if settled and outcome.status is Termination.INTERRUPTED:
            outcome = replace(outcome, status=Termination.DECIDED)
        stats = {**outcome.stats, "solver_s": ran}
        return replace(outcome, solutions=solutions, bounds=bounds, stats=stats)
    finally:
        model.dispose()


def _build(model, program: Program, deadline: float):
    """Add ``program``'s columns and rows to ``model``; its column vector, or None when the
    deadline passed while the rows went in (large programs take seconds)."""
    import gurobipy
    from gurobipy import GRB

    x = model.addMVar(
        program.n_cols,
        lb=program.col_lower,
        ub=program.col_upper,
        obj=program.cost,
        vtype=np.where(program.integer, GRB.INTEGER, GRB.CONTINUOUS),
    )
    model.ObjCon = program.offset
    columns = x.tolist()
    for row, (index, values, lower, upper) in enumerate(program.rows()):
        if row % 1000 == 0 and time.monotonic() > deadline:
            return None
        expr = gurobipy.LinExpr(values.tolist(), [columns[j] for j in index])
        if lower == upper:
            model.addLConstr(expr, GRB.EQUAL, lower)
            continue
        if math.isfinite(lower):
            model.addLConstr(expr, GRB.GREATER_EQUAL, lower)
        if math.isfinite(upper):
            model.addLConstr(expr, GRB.LESS_EQUAL, upper)
    return x


def _outcome(model, x) -> Outcome:
    """What the solved ``model`` ended with, its solution and bound when they exist."""
    status = _status_table().get(model.Status, Termination.ERROR)
    solution = objective = bound = None
    if model.SolCount > 0 and status is not Termination.INFEASIBLE:
        solution = np.array(x.X, dtype=np.float64)
        objective = float(model.ObjVal)
    if status is not Termination.INFEASIBLE and model.IsMIP:
        bound = float(model.ObjBound)
    elif status is Termination.OPTIMAL:
        bound = objective
    return Outcome(
        status=status,
        solution=solution,
        objective=objective,
        bound=bound if bound is not None and math.isfinite(bound) else None,
        message="" if status is not Termination.ERROR else f"Gurobi status {model.Status}",
        stats={"nodes": int(model.NodeCount) if model.IsMIP else 0},
    )


def _status_table():
    from gurobipy import GRB

    return {
        GRB.OPTIMAL: Termination.OPTIMAL,
        GRB.INFEASIBLE: Termination.INFEASIBLE,
        GRB.INF_OR_UNBD: Termination.INFEASIBLE,
        GRB.TIME_LIMIT: Termination.TIME_LIMIT,
        GRB.NODE_LIMIT: Termination.STEP_LIMIT,
        GRB.MEM_LIMIT: Termination.MEMORY_LIMIT,
        GRB.INTERRUPTED: Termination.INTERRUPTED,
    }
