"""Input variables and their float32 boxes, shared by the oracle's enumeration and point search.

Each (instance, feature) pair is a variable, except that pairs tied by a top-level
:class:`Tie` share one. A box is a closed float32 interval per variable (``lo``, ``hi``: float64
arrays holding float32 values); integer and bool variables keep integral bounds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from veritas_dsl.float32 import ball_interval, ceil32, floor32
from veritas_dsl.ir.query import Ball, DomainKind, Interval, Query, Row, Tie, weight_of


@dataclass(frozen=True)
class Space:
    """The variables of a query.

    ``var[i, f]`` is the variable of instance ``i`` (index into ``query.instances``), feature
    ``f``; ``integral[v]`` tells whether variable ``v`` takes integer values.
    """

    var: np.ndarray
    integral: np.ndarray
    n_vars: int

    def of(self, query: Query, instance: str, feature: int) -> int:
        return int(self.var[query.instances.index(instance), feature])


def build_space(query: Query) -> Space:
    """Number the variables, merging those tied by top-level ties."""
    n_inst, n_feat = len(query.instances), query.n_features
    parent = list(range(n_inst * n_feat))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for c in query.constraints:
        if isinstance(c, Tie):
            a = query.instances.index(c.first) * n_feat + c.feature
            b = query.instances.index(c.second) * n_feat + c.feature
            parent[find(a)] = find(b)
    roots = sorted({find(a) for a in range(n_inst * n_feat)})
    number = {root: k for k, root in enumerate(roots)}
    var = np.array([number[find(a)] for a in range(n_inst * n_feat)]).reshape(n_inst, n_feat)
    integral = np.zeros(len(roots), dtype=bool)
    for f, feature in enumerate(query.features):
        if feature.kind is not DomainKind.REAL:
            integral[var[:, f]] = True
    return Space(var=var, integral=integral, n_vars=len(roots))


def narrow(lo: np.ndarray, hi: np.ndarray, v: int, low: float, high: float, integral: bool) -> bool:
    """Intersect variable ``v``'s box with ``[low, high]`` in place; False when it holds no finite
    float32 (inputs are never infinite; an infinite end of a box means "unbounded")."""
    low, high = max(lo[v], ceil32(low)), min(hi[v], floor32(high))
    if integral:  # an infinite end stays; a float32 beyond 2**23 is whole already
        low = float(math.ceil(low)) if math.isfinite(low) else low
        high = float(math.floor(high)) if math.isfinite(high) else high
    lo[v], hi[v] = low, high
    return low <= high and low != math.inf and high != -math.inf


class Region:
    """A box over the variables of a :class:`Space` in which some variables are merged (tied
    inside one branch of a disjunction): a variable's box is its representative's."""

    def __init__(self, lo: np.ndarray, hi: np.ndarray, integral: np.ndarray) -> None:
        self.lo, self.hi, self.integral = lo.copy(), hi.copy(), integral
        self.parent = list(range(len(lo)))

    def copy(self) -> Region:
        other = Region(self.lo, self.hi, self.integral)
        other.parent = list(self.parent)
        return other

    def find(self, v: int) -> int:
        """The representative of variable ``v``."""
        while self.parent[v] != v:
            v = self.parent[v]
        return v

    def narrow(self, v: int, low: float, high: float) -> bool:
        """Intersect ``v``'s box with ``[low, high]``; False when it becomes empty."""
        v = self.find(v)
        return narrow(self.lo, self.hi, v, low, high, bool(self.integral[v]))

    def merge(self, v: int, w: int) -> bool:
        """Make ``v`` and ``w`` one variable on the intersection of their boxes."""
        v, w = self.find(v), self.find(w)
        if v == w:
            return True
        self.parent[w] = v
        return self.narrow(v, self.lo[w], self.hi[w])

    def bounds(self, v: int) -> tuple[float, float]:
        v = self.find(v)
        return float(self.lo[v]), float(self.hi[v])


def initial_box(query: Query, space: Space) -> tuple[np.ndarray, np.ndarray] | None:
    """The box of feature ranges, top-level intervals and L-inf balls around rows; None if empty."""
    lo = np.full(space.n_vars, -math.inf)
    hi = np.full(space.n_vars, math.inf)
    ok = True
    for i in range(len(query.instances)):
        for f, feature in enumerate(query.features):
            low, high = feature.lo, feature.hi
            if feature.kind is DomainKind.BOOL:
                low, high = max(low, 0.0), min(high, 1.0)
            ok &= narrow(lo, hi, space.var[i, f], low, high, bool(space.integral[space.var[i, f]]))
    for c in query.constraints:
        if isinstance(c, Interval):
            v = space.of(query, c.instance, c.feature)
            ok &= narrow(lo, hi, v, c.lo, c.hi, bool(space.integral[v]))
        elif isinstance(c, Ball) and c.norm == "linf" and isinstance(c.center, Row):
            for f, center in enumerate(c.center.values):
                v = space.of(query, c.instance, f)
                low, high = ball_interval(center, c.radius, weight_of(c.weights, f))
                ok &= narrow(lo, hi, v, low, high, bool(space.integral[v]))
    return (lo, hi) if ok else None
