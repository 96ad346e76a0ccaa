"""Which variables a branch measures against what, and the closest point when that is simple.

A distance (ball, change count or distance goal) measures each feature of an instance against a
partner: a constant (the row's value) or another variable. When every variable has at most one
partner and no linear constraint remains, moving each variable as close to its partner as its box
allows shortens every distance at once, so that one point meets the branch if any point does and
is the closest; :func:`closest` builds it exactly, on the float32 grid.
"""

from __future__ import annotations

import math

import numpy as np

from veritas_dsl.float32 import nearest
from veritas_dsl.ir.query import (
    AtMostKChanged,
    Ball,
    Linear,
    MinimizeDistance,
    OneHot,
    Query,
    Reference,
    Row,
    Weights,
    weight_of,
)
from veritas_dsl.solvers.oracle.boxes import Region, Space

#: A measured pair ``(v, w, c, weight)``: variable ``v`` against variable ``w``, or against the
#: constant ``c`` when ``w`` is -1 (``v``, ``w`` are representatives in the region); its gap
#: counts ``weight`` times in the distance.
Pair = tuple[int, int, float, float]


def pairs(
    query: Query,
    space: Space,
    region: Region,
    instance: str,
    reference: Reference,
    weights: Weights = None,
) -> list[Pair]:
    """The pairs one distance measures, one per feature; a variable against itself is left out."""
    i = query.instances.index(instance)
    found: list[Pair] = []
    for f in range(query.n_features):
        v = region.find(int(space.var[i, f]))
        if isinstance(reference, Row):
            found.append((v, -1, reference.values[f], weight_of(weights, f)))
            continue
        w = region.find(int(space.var[query.instances.index(reference), f]))
        if v != w:
            found.append((v, w, 0.0, weight_of(weights, f)))
    return found


def is_box(c) -> bool:
    """Distances the box already expresses (an L-inf ball around a row) or that hold always."""
    if isinstance(c, Ball):
        return (math.isinf(c.radius) and c.radius > 0) or (
            c.norm == "linf" and isinstance(c.center, Row)
        )
    return False


def partners(query: Query, space: Space, region: Region, constraints, goal) -> dict[int, set]:
    """Every variable's partners: ``("c", value)``, ``("v", variable)``, or a token for a linear
    constraint or one-hot group it is part of (each its own partner)."""
    found: dict[int, set] = {}

    def add(v: int, key) -> None:
        found.setdefault(v, set()).add(key)

    measured = [c for c in constraints if isinstance(c, Ball | AtMostKChanged) and not is_box(c)]
    if isinstance(goal, MinimizeDistance):
        measured.append(goal)
    for c in measured:
        reference = c.reference if isinstance(c, AtMostKChanged) else c.center
        for v, w, value, _ in pairs(query, space, region, c.instance, reference):
            if w < 0:
                add(v, ("c", value + 0.0))  # -0.0 is 0.0 to every distance
            else:
                add(v, ("v", w))
                add(w, ("v", v))
    for k, c in enumerate(constraints):
        if isinstance(c, Linear):
            for term in c.terms:
                add(region.find(space.of(query, term.instance, term.feature)), ("linear", k))
        elif isinstance(c, OneHot):
            for f in c.features:
                add(region.find(space.of(query, c.instance, f)), ("hot", k))
    return found


def separable(query, space, region, constraints, goal) -> bool:
    """No linear constraint, and every variable measured against one partner at most."""
    if any(isinstance(c, Linear) for c in constraints):
        return False
    return all(
        len(keys) <= 1 for keys in partners(query, space, region, constraints, goal).values()
    )


def default(lo: float, hi: float) -> float:
    """A plain value in ``[lo, hi]``: 0 when inside, else the nearer end."""
    return min(max(0.0, lo), hi)


def closest(query: Query, space: Space, region: Region, constraints, goal) -> np.ndarray:
    """Every variable as close to its one partner as its box allows (see the module docstring);
    the values of all variables of the space, float32 values held in float64."""
    keys = partners(query, space, region, constraints, goal)
    chosen: dict[int, float] = {}
    for v in sorted({region.find(v) for v in range(space.n_vars)}):
        if v in chosen:
            continue
        lo, hi = region.bounds(v)
        (kind, partner), *_ = keys.get(v) or [(None, None)]
        if kind == "c":
            chosen[v] = nearest(partner, lo, hi, bool(region.integral[v]))
        elif kind == "v":  # the partner's only partner is v
            low, high = region.bounds(partner)
            if max(lo, low) <= min(hi, high):  # overlapping: both take one value
                chosen[v] = chosen[partner] = default(max(lo, low), min(hi, high))
            elif hi < low:
                chosen[v], chosen[partner] = hi, low
            else:
                chosen[v], chosen[partner] = lo, high
        else:
            chosen[v] = default(lo, hi)
    return np.array([chosen[region.find(v)] for v in range(space.n_vars)])
