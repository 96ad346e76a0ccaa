"""The lifted constraints of one conjunction as the arrays the kernels read (step 7 of
:mod:`~veritas_dsl.solvers.astar.problem`): one-hot groups, resources (change counts and
distances to a reference, including the distance being minimised) and linear inequalities.

Combinations whose least cost over a box would not be exact are refused with
:class:`UnsupportedQuery` (see :func:`_refuse`), so a complete state always has a point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from veritas_dsl.ir.query import AtMostKChanged, Ball, Linear, OneHot, Query, Row, weight_of
from veritas_dsl.solvers.astar import kernels as K
from veritas_dsl.solvers.base import UnsupportedQuery


@dataclass(frozen=True)
class Resource:
    """A change count or distance of ``instance`` to a reference, over variables.

    ``units[j]`` is the unit of ``pairs[j]`` in the conjunction's change counts (its index in
    ``AtMostKChanged.units``); the pairs of one unit sit next to each other. ``weights[j]``
    multiplies the gap of ``pairs[j]`` in a distance (1 for a change count).
    """

    kind: int
    bound: float
    goal: bool
    pairs: tuple[tuple[int, int, float], ...]  # (variable, reference variable or -1, constant)
    units: tuple[int, ...] = ()
    weights: tuple[float, ...] = ()


def _refuse(query: Query, what: str) -> UnsupportedQuery:
    """The refusal of ``what``; the entry point (``veritas_dsl.solvers.solve``) adds the
    engines that can."""
    return UnsupportedQuery(f"query {query.name}: engine astar does not support {what}")


def groups_of(query, constraints, var) -> tuple[tuple[int, ...], ...]:
    groups: list[tuple[int, ...]] = []
    for c in constraints:
        if not isinstance(c, OneHot):
            continue
        if len(set(c.features)) != len(c.features):
            raise _refuse(query, "a one-hot group that lists a feature twice")
        i = query.instances.index(c.instance)
        group = tuple(sorted(int(var[i, f]) for f in c.features))
        if group in groups:
            continue
        if any(set(group) & set(other) for other in groups):
            raise _refuse(query, "overlapping one-hot groups")
        groups.append(group)
    return tuple(groups)


def resources_of(query, constraints, plan, var, groups) -> tuple[Resource, ...]:
    specs = []
    units = {tuple(c.units) for c in constraints if isinstance(c, AtMostKChanged)}
    for c in constraints:
        if isinstance(c, AtMostKChanged):
            specs.append((K.KIND_CHANGED, float(c.k), False, c.instance, c.reference, None))
        elif isinstance(c, Ball) and c.norm == "l1":
            specs.append((K.KIND_L1, float(c.radius), False, c.instance, c.center, c.weights))
        elif isinstance(c, Ball) and c.norm == "linf" and not isinstance(c.center, Row):
            specs.append((K.KIND_LINF, float(c.radius), False, c.instance, c.center, c.weights))
    if plan.distance is not None:
        d = plan.distance
        kind = {"linf": K.KIND_LINF, "l1": K.KIND_L1, "l2": K.KIND_L2}[d.norm]
        specs.append((kind, math.inf, True, d.instance, d.center, d.weights))
    for spec in specs:
        _check_weights(query, spec[5])
    if not specs:
        return ()

    def key(instance, reference):
        return (instance, reference.values if isinstance(reference, Row) else reference)

    if len({key(s[3], s[4]) for s in specs}) > 1:
        raise _refuse(
            query, "change counts or distances to different references in one conjunction"
        )
    if len(units) > 1:
        raise _refuse(query, "change counts with different units in one conjunction")
    in_group = {v: g for g, group in enumerate(groups) for v in group}
    instance, reference = specs[0][3], specs[0][4]
    i = query.instances.index(instance)
    unit_of = {f: u for u, unit in enumerate(next(iter(units), ())) for f in unit}
    if units:
        _check_units(query, next(iter(units)), var[i], in_group, groups)
    pairs = []
    for f in range(query.n_features):
        a = int(var[i, f])
        if isinstance(reference, Row):
            b, c = -1, float(reference.values[f])
        else:
            b, c = int(var[query.instances.index(reference), f]), 0.0
            if a == b:
                continue
        if (a in in_group and (b >= 0 or c not in (0.0, 1.0))) or b in in_group:
            raise _refuse(
                query, "a one-hot group measured against values other than 0 and 1 of a row"
            )
        weights = tuple(weight_of(spec[5], f) for spec in specs)
        if a in in_group and any(w != 1.0 for w in weights):
            raise _refuse(query, "a weighted distance over a one-hot group")
        pairs.append((in_group.get(a, -1), unit_of.get(f, f), a, b, c, weights))
    pairs.sort(key=lambda p: p[:3])
    ordered = tuple((a, b, c) for _, _, a, b, c, _ in pairs)
    unit_ids = tuple(u for _, u, _, _, _, _ in pairs)
    return tuple(
        Resource(kind, bound, goal, ordered, unit_ids, tuple(p[5][r] for p in pairs))
        for r, (kind, bound, goal, *_) in enumerate(specs)
    )


#: Weights the kernels multiply exactly (Dekker's product, which underflow would spoil).
_WEIGHT_RANGE = (2.0**-60, 2.0**60)


def _check_weights(query, weights) -> None:
    if weights is not None and not all(_WEIGHT_RANGE[0] <= w <= _WEIGHT_RANGE[1] for w in weights):
        raise _refuse(query, "distance weights (1 / scale) outside [2**-60, 2**60]")


def _check_units(query, units, var_of, in_group, groups) -> None:
    """Refuse change-count units that cut across a one-hot group: the kernels cost a group as a
    whole (one unit) or member by member (units of one), never partly joined to other features."""
    for unit in units:
        members = [int(var_of[f]) for f in unit]
        touched = {in_group[v] for v in members if v in in_group}
        if not touched or len(unit) == 1:
            continue
        if len(touched) > 1 or set(members) != set(groups[touched.pop()]):
            raise _refuse(query, "a change count unit holding part of a one-hot group")


def linear_of(query, constraints, var, groups, resources):
    taken = {v for group in groups for v in group}
    for res in resources:
        for a, b, _ in res.pairs:
            taken.add(a)
            if b >= 0:
                taken.add(b)
    result = []
    for c in constraints:
        if not isinstance(c, Linear):
            continue
        if c.op == "==":
            raise _refuse(query, "linear equalities")
        coefs: dict[int, Fraction] = {}
        for t in c.terms:
            v = int(var[query.instances.index(t.instance), t.feature])
            coefs[v] = coefs.get(v, Fraction(0)) + Fraction(t.coef)
        sign = 1 if c.op == "<=" else -1
        entries = []
        for v, coef in sorted(coefs.items()):
            if coef == 0:
                continue
            if float(coef) != coef:
                raise _refuse(query, "linear coefficients whose sum is not a float64")
            if v in taken:
                raise _refuse(
                    query,
                    "a linear constraint sharing features with a one-hot group, a change count, "
                    "a distance or another linear constraint",
                )
            entries.append((v, sign * float(coef)))
        taken.update(v for v, _ in entries)
        result.append((tuple(entries), sign * float(c.rhs)))
    return tuple(result)


def lifted_arrays(n_vars, cell_ptr, cell_lo, cell_hi, integral, groups, resources, linear):
    """``(lifted, lifted_resources)``: the tuples the kernels read (:mod:`.kernels.feasibility`);
    the second None when there are no resources, so that their code is not compiled."""
    oh_ptr = np.cumsum([0] + [len(g) for g in groups]).astype(np.int32)
    oh_var = np.array([v for g in groups for v in g], dtype=np.int32)
    ln_ptr = np.cumsum([0] + [len(e) for e, _ in linear]).astype(np.int32)
    ln_var = np.array([v for e, _ in linear for v, _ in e], dtype=np.int32)
    ln_coef = np.array([a for e, _ in linear for _, a in e], dtype=np.float64)
    ln_rhs = np.array([rhs for _, rhs in linear], dtype=np.float64)
    lifted = (
        np.int64(n_vars), cell_ptr, cell_lo, cell_hi, integral.astype(np.int8), oh_ptr, oh_var,
        ln_ptr, ln_var, ln_coef, ln_rhs,
    )  # fmt: skip
    if not resources:
        return lifted, None
    in_group = {v: g for g, group in enumerate(groups) for v in group}
    rs_kind = np.array([r.kind for r in resources], dtype=np.int32)
    rs_bound = np.array([r.bound for r in resources], dtype=np.float64)
    rs_ptr = np.cumsum([0] + [len(r.pairs) for r in resources]).astype(np.int32)
    pairs = [p for r in resources for p in r.pairs]
    pr_a = np.array([p[0] for p in pairs], dtype=np.int32)
    pr_b = np.array([p[1] for p in pairs], dtype=np.int32)
    pr_c = np.array([p[2] for p in pairs], dtype=np.float64)
    pr_group = np.array([in_group.get(p[0], -1) for p in pairs], dtype=np.int32)
    pr_unit = np.array([u for r in resources for u in r.units], dtype=np.int32)
    pr_w = np.array([w for r in resources for w in r.weights], dtype=np.float64)
    return lifted, (rs_kind, rs_bound, rs_ptr, pr_a, pr_b, pr_c, pr_group, pr_unit, pr_w)
