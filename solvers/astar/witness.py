"""A concrete float32 input inside a complete state's box, and its exact check on the models.

Every point of a complete state's box reaches the same leaves, so the outputs are fixed; what
remains is to choose, inside the box, values that meet the lifted input constraints. The choice
mirrors how the kernels cost a box, so it always succeeds when they kept the state:

* one-hot groups: the variable forced to 1, else the one with the fewest members off the
  reference;
* change counts and distances (one reference per conjunction): each variable as close to its
  reference as the box allows (the reference value itself when inside, else the nearer end; for
  a reference instance, a shared value where the two intervals overlap, else the facing ends);
  this is simultaneously the least change count, L-inf and L1 distance;
* linear inequalities: the plain point, or when it breaks one, that constraint's best corner (an
  unbounded end counts as the largest float32, as in the kernels);
* everything else: 0, or the nearer end of the box.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from veritas_dsl.float32 import nearest
from veritas_dsl.ir.evaluate import holds
from veritas_dsl.solvers.astar import kernels as K
from veritas_dsl.solvers.astar.problem import Problem


def box_bounds(problem: Problem, row: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The float32 interval of every variable in box ``row`` (float64 arrays)."""
    n = problem.n_vars
    base = problem.cell_ptr[:-1]
    return problem.cell_lo[base + row[:n]], problem.cell_hi[base + row[n:]]


def point_of(problem: Problem, row: np.ndarray) -> dict[str, np.ndarray]:
    """Float32 inputs per instance inside box ``row`` that meet the lifted constraints."""
    lo, hi = box_bounds(problem, row)
    values = np.minimum(np.maximum(0.0, lo), hi)
    integral = problem.integral
    pairs = problem.resources[0].pairs if problem.resources else ()
    grouped = {v for group in problem.groups for v in group}
    for a, b, c in pairs:
        if a in grouped:
            continue
        if b < 0:
            values[a] = nearest(c, lo[a], hi[a], bool(integral[a]))
        elif hi[a] < lo[b]:
            values[a], values[b] = hi[a], lo[b]
        elif hi[b] < lo[a]:
            values[a], values[b] = lo[a], hi[b]
        else:
            common = min(max(0.0, max(lo[a], lo[b])), min(hi[a], hi[b]))
            values[a] = values[b] = common
    for group in problem.groups:
        block = [(a, c) for a, _, c in pairs if a in group]
        forced = [v for v in group if lo[v] >= 1.0]
        able = forced or [v for v in group if hi[v] >= 1.0]

        # References are 0 or 1 here, so the fewest members off the reference is at once the
        # least L1 and L-inf distance and the least change count (the group one unit, or each
        # member its own): one choice serves every resource.
        def cost(w, block=block):
            return sum((1.0 if a == w else 0.0) != c for a, c in block)

        chosen = min(able, key=cost) if able else None
        for v in group:
            values[v] = 1.0 if v == chosen else 0.0
    for entries, rhs in problem.linear:
        total = sum((Fraction(a) * Fraction(float(values[v])) for v, a in entries), Fraction(0))
        if total <= Fraction(rhs):
            continue
        for v, a in entries:
            end = lo[v] if a > 0 else hi[v]
            values[v] = min(max(end, -K.FLT_MAX), K.FLT_MAX)
    return {
        name: values[problem.var[i]].astype(np.float32)
        for i, name in enumerate(problem.query.instances)
    }


def inside(problem: Problem, row: np.ndarray, inputs) -> bool:
    """Whether ``inputs`` lie in box ``row`` (so they reach the state's leaves)."""
    lo, hi = box_bounds(problem, row)
    for i, name in enumerate(problem.query.instances):
        values = inputs[name].astype(np.float64)
        v = problem.var[i]
        if np.any(values < lo[v]) or np.any(values > hi[v]):
            return False
    return True


def model_margins(query, inputs, arrays: dict) -> dict[tuple[str, str], np.ndarray]:
    """Every model's raw outputs at ``inputs``, per (model, instance), as the model adds them
    (float64, tree order, in a kernel; ``Ensemble.eval`` for a model of exact fractions);
    ``arrays`` keeps each model's arrays for the next point."""
    margins = {}
    for name, model in query.models.items():
        if model.fractions is not None:
            for instance in query.instances:
                margins[name, instance] = model.outputs_at(model.leaves(inputs[instance]))[0]
            continue
        held = arrays.get(name)
        if held is None:
            held = arrays[name] = (
                model.feature, model.threshold, model.left, model.right, model.value,
                np.ascontiguousarray(model.roots), model.base_score,
            )  # fmt: skip
        for instance in query.instances:
            margins[name, instance] = K.eval_margins(*held, inputs[instance])
    return margins


def inputs_hold(problem: Problem, inputs, margins) -> bool:
    """Whether ``inputs`` meet every constraint of the conjunction exactly (``margins``: model
    outputs, ``{(model, instance): float64 array}``)."""
    return all(holds(c, inputs, margins) for c in problem.constraints)
