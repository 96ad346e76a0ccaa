"""The static box, written once: the input variables of a query and the closed float32 interval
each lies in, whatever else the query says.

Each (instance, feature) pair is a variable, except that pairs tied by a top-level :class:`Tie`
share one (:func:`tie_classes`). A variable's interval (:func:`static_box`) is its feature's range
(at most ``[0, 1]`` for a bool), narrowed by top-level intervals and by balls around a row, of
either norm (an L1 ball of radius ``r`` also keeps each coordinate within ``r`` of the row; that
is the tightest per-coordinate bound either norm gives), its ends on the float32 grid; an int or
bool variable takes the whole numbers in it (:func:`inward`).

Two readers: ``reductions.StaticBounds`` hands the box to the engines, and :mod:`.empty`
explains an empty one to the user with the constraints that set its ends. The oracle keeps its
own copy on purpose (``solvers/oracle/boxes.py``): it checks the others.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from veritas_dsl.float32 import ball_interval, ceil32, ceil32_array, floor32, floor32_array
from veritas_dsl.ir.query import (
    Ball,
    Constraint,
    DomainKind,
    Feature,
    Interval,
    Row,
    Tie,
    weight_of,
)


def tie_classes(
    instances: tuple[str, ...], n_features: int, constraints: tuple[Constraint, ...]
) -> np.ndarray:
    """The variable of each (instance, feature), an int64 array of shape ``(len(instances),
    n_features)``: pairs tied at the top level share one. Variables are numbered by their class's
    representative, so untied pairs keep the order ``instance * n_features + feature``."""
    n = len(instances) * n_features
    ties = [c for c in constraints if isinstance(c, Tie)]
    if not ties:
        return np.arange(n, dtype=np.int64).reshape(len(instances), n_features)
    parent = list(range(n))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for c in ties:
        a = instances.index(c.first) * n_features + c.feature
        b = instances.index(c.second) * n_features + c.feature
        parent[find(a)] = find(b)
    roots = [find(a) for a in range(n)]
    _, number = np.unique(roots, return_inverse=True)
    return number.reshape(len(instances), n_features).astype(np.int64)


@dataclass(frozen=True, eq=False)
class StaticBox:
    """Each variable's closed interval: float32 ends (``-inf``/``inf`` when unbounded), not yet
    rounded to whole numbers (:func:`inward`), and the constraint that set each end (None: the
    feature's range)."""

    lo: np.ndarray
    hi: np.ndarray
    lo_by: list[Constraint | None]
    hi_by: list[Constraint | None]


def static_box(
    features: tuple[Feature, ...],
    instances: tuple[str, ...],
    constraints: tuple[Constraint, ...],
    var: np.ndarray,
) -> StaticBox:
    """The box of the variables ``var`` numbers (:func:`tie_classes`; see the module docstring).
    A tied variable takes the narrowest of its pairs' intervals."""
    n_vars = int(var.max()) + 1 if var.size else 0
    lo, hi = np.full(n_vars, -math.inf), np.full(n_vars, math.inf)
    low = np.array([f.lo for f in features], dtype=np.float64)
    high = np.array([f.hi for f in features], dtype=np.float64)
    boolean = np.array([f.kind is DomainKind.BOOL for f in features], dtype=bool)
    low = ceil32_array(np.where(boolean, np.maximum(low, 0.0), low))
    high = floor32_array(np.where(boolean, np.minimum(high, 1.0), high))
    for i in range(len(instances)):
        np.maximum.at(lo, var[i], low)
        np.minimum.at(hi, var[i], high)
    lo_by: list[Constraint | None] = [None] * n_vars
    hi_by: list[Constraint | None] = [None] * n_vars

    def narrow(v: int, a: float, b: float, by: Constraint) -> None:
        a, b = ceil32(a), floor32(b)  # inputs are float32: the closed ends on the grid
        if a > lo[v]:
            lo[v], lo_by[v] = a, by
        if b < hi[v]:
            hi[v], hi_by[v] = b, by

    for c in constraints:
        if isinstance(c, Interval):
            narrow(var[instances.index(c.instance), c.feature], c.lo, c.hi, c)
        elif isinstance(c, Ball) and isinstance(c.center, Row):
            i = instances.index(c.instance)
            for f, center in enumerate(c.center.values):
                a, b = ball_interval(center, c.radius, weight_of(c.weights, f))
                narrow(var[i, f], a, b, c)
    return StaticBox(lo, hi, lo_by, hi_by)


def inward(lo, hi, integral):
    """The ends ``lo``, ``hi`` (floats or arrays) rounded inward to whole numbers where
    ``integral``: the values an int or bool variable may take. A float32 of magnitude 2**23 or
    more is whole already, and below it every whole number is a float32; infinite ends stay."""
    return np.where(integral, np.ceil(lo), lo), np.where(integral, np.floor(hi), hi)
