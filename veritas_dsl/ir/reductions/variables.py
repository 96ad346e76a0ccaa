"""The input variables of a query: tied (instance, feature) pairs merged, and the static box.

Each (instance, feature) pair is a variable, except that pairs tied by a top-level :class:`Tie`
share one (:class:`MergeTies`). Each variable has a closed float32 interval that every input
meeting the query lies in (:class:`StaticBounds`): the feature's range, narrowed by top-level
intervals and by balls around a row, of either norm (an L1 ball of radius ``r`` also keeps each
coordinate within ``r`` of the row; that is the tightest per-coordinate bound either norm gives).
Integer and bool variables get integral bounds.

Both steps leave the constraints as they are and attach the result to the query, as a
:class:`Variables` table on a :class:`VariableQuery`, for engines to read instead of rebuilding.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from veritas_dsl.float32 import ball_interval, ceil32, ceil32_array, floor32, floor32_array
from veritas_dsl.ir.query import Ball, DomainKind, Interval, Query, Row, Tie, weight_of
from veritas_dsl.ir.reductions.base import Reduction, ReductionRefused


@dataclass(frozen=True, eq=False)
class Variables:
    """The variable table of a query.

    Attributes
    ----------
    var : int64 array, shape (n_instances, n_features)
        The variable of each (instance, feature); variables are numbered by their class's
        representative, so untied pairs keep the order ``instance * n_features + feature``.
    integral : bool array, shape (n_vars,)
        Whether the variable takes integral values (int and bool features).
    lo, hi : float64 arrays, shape (n_vars,)
        Its closed interval, float32 values (integral when ``integral``); ``-inf``/``inf`` for
        an unbounded end. Without :class:`StaticBounds`, unbounded.
    source : tuple
        The features, instances and constraints the table was made from: a query rewritten
        since (``dataclasses.replace`` keeps the table) no longer matches it.
    """

    var: np.ndarray
    integral: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    source: tuple = ()
    bounded: bool = False
    """Whether :class:`StaticBounds` narrowed the intervals."""

    @property
    def n_vars(self) -> int:
        return len(self.integral)

    @property
    def empty(self) -> bool:
        """True when some variable has no value: no input meets the query."""
        return bool(np.any(self.lo > self.hi))


@dataclass(frozen=True)
class VariableQuery(Query):
    """A query with its variable table (see the module docstring)."""

    variables: Variables | None = field(default=None, compare=False, repr=False)


def _source(query: Query) -> tuple:
    return (query.features, query.instances, query.constraints)


def _attached(query: Query) -> Variables | None:
    table = getattr(query, "variables", None)
    return table if table is not None and table.source == _source(query) else None


def variables_of(query: Query, bounds: bool = True) -> Variables:
    """The variable table that :class:`MergeTies` (and :class:`StaticBounds`, when ``bounds``)
    attached to ``query``; made now when none is attached, or when the query was rewritten
    since (a table never describes other constraints than its query's)."""
    table = _attached(query)
    if table is None:
        table = MergeTies().apply(query)[0].variables
    if bounds and not table.bounded:
        table = StaticBounds().apply(_with(query, table))[0].variables
    return table


def _with(query: Query, table: Variables) -> VariableQuery:
    fields = {f.name: getattr(query, f.name) for f in dataclasses.fields(Query)}
    return VariableQuery(**fields, variables=table)


@dataclass(frozen=True)
class MergeTies(Reduction):
    """Number the variables, one per class of (instance, feature) pairs tied at the top level.

    The answer is unchanged: the ties stay among the constraints; the table only names what
    they force equal.
    """

    def apply(self, query: Query) -> tuple[VariableQuery, None]:
        n_inst, n_feat = len(query.instances), query.n_features
        if not any(isinstance(c, Tie) for c in query.constraints):  # each pair its own variable
            var = np.arange(n_inst * n_feat, dtype=np.int64).reshape(n_inst, n_feat)
            real = np.array([f.kind is DomainKind.REAL for f in query.features], dtype=bool)
            integral = np.tile(~real, n_inst)
            unbounded = np.full(n_inst * n_feat, math.inf)
            table = Variables(var, integral, -unbounded, unbounded.copy(), _source(query))
            return _with(query, table), None
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
        roots = [find(a) for a in range(n_inst * n_feat)]
        _, number = np.unique(roots, return_inverse=True)
        var = number.reshape(n_inst, n_feat).astype(np.int64)
        n_vars = int(number.max()) + 1 if len(number) else 0
        integral = np.zeros(n_vars, dtype=bool)
        for f, feature in enumerate(query.features):
            if feature.kind is not DomainKind.REAL:
                integral[var[:, f]] = True
        unbounded = np.full(n_vars, math.inf)
        table = Variables(var, integral, -unbounded, unbounded.copy(), _source(query))
        return _with(query, table), None


@dataclass(frozen=True)
class StaticBounds(Reduction):
    """Each variable's interval (see the module docstring); needs :class:`MergeTies` first.

    The answer is unchanged: every input meeting the query lies in the box, and the
    constraints that made it stay.
    """

    def refusal(self, query: Query) -> str | None:
        if _attached(query) is None:
            return "static bounds need the variable table of MergeTies"
        return None

    def apply(self, query: Query) -> tuple[VariableQuery, None]:
        table = _attached(query)
        if table is None:
            raise ReductionRefused(f"query {query.name}: {self.refusal(query)}")
        var = table.var
        lo, hi = table.lo.copy(), table.hi.copy()

        def narrow(v: int, low: float, high: float) -> None:
            lo[v] = max(lo[v], ceil32(low))
            hi[v] = min(hi[v], floor32(high))

        features = query.features
        low = np.array([f.lo for f in features], dtype=np.float64)
        high = np.array([f.hi for f in features], dtype=np.float64)
        boolean = np.array([f.kind is DomainKind.BOOL for f in features], dtype=bool)
        low = ceil32_array(np.where(boolean, np.maximum(low, 0.0), low))
        high = floor32_array(np.where(boolean, np.minimum(high, 1.0), high))
        for i in range(len(query.instances)):  # a tied variable takes the narrowest
            np.maximum.at(lo, var[i], low)
            np.minimum.at(hi, var[i], high)
        for c in query.constraints:
            if isinstance(c, Interval):
                narrow(var[query.instances.index(c.instance), c.feature], c.lo, c.hi)
            elif isinstance(c, Ball) and isinstance(c.center, Row):
                i = query.instances.index(c.instance)
                for f, center in enumerate(c.center.values):
                    narrow(var[i, f], *ball_interval(center, c.radius, weight_of(c.weights, f)))
        lo = np.where(table.integral, np.ceil(lo), lo)
        hi = np.where(table.integral, np.floor(hi), hi)
        return _with(query, Variables(var, table.integral, lo, hi, table.source, True)), None
