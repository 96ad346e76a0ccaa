"""The input variables of a query: tied (instance, feature) pairs merged, and the static box.

Each (instance, feature) pair is a variable, except that pairs tied by a top-level ``Tie``
share one (:class:`MergeTies`). Each variable has a closed float32 interval that every input
meeting the query lies in (:class:`StaticBounds`). Both rules live in :mod:`veritas_dsl.ir.box`,
which the static box of :mod:`veritas_dsl.ir.empty` reads too.

Both steps leave the constraints as they are and attach the result to the query, as a
:class:`Variables` table on a :class:`VariableQuery`, for engines to read instead of rebuilding.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from veritas_dsl.ir.box import inward, static_box, tie_classes
from veritas_dsl.ir.query import DomainKind, Query
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
        var = tie_classes(query.instances, query.n_features, query.constraints)
        n_vars = int(var.max()) + 1 if var.size else 0
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
        box = static_box(query.features, query.instances, query.constraints, table.var)
        lo, hi = inward(box.lo, box.hi, table.integral)
        return _with(query, Variables(table.var, table.integral, lo, hi, table.source, True)), None
