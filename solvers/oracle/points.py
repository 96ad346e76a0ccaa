"""A float32 input inside a box that satisfies the remaining input constraints, found exactly.

Each branch (one alternative of every disjunction) is met in three steps, none of which rounds:

1. Intervals, L-inf balls around rows (and, as bounds per feature, L1 balls around rows) narrow the
   box; ties merge variables.
2. The discrete choices are enumerated: which member of a one-hot group is set, which units of a
   change count may move while the others are pinned to the reference. A unit that nothing else
   measures against another partner is pinned for free (the reference is in its box), so only
   contested units are enumerated.
3. The distances and linear constraints left are met by the closest point
   (:func:`~veritas_dsl.solvers.oracle.relations.closest`) when they separate per variable, else
   by an exact rational program moved onto the float32 grid
   (:mod:`~veritas_dsl.solvers.oracle.program`).

Every point is checked exactly against the whole branch before it is returned.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from veritas_dsl.float32 import ball_interval
from veritas_dsl.ir.evaluate import distance, holds, reference_point
from veritas_dsl.ir.query import (
    AnyOf,
    AtMostKChanged,
    Ball,
    Constraint,
    Interval,
    Linear,
    MinimizeDistance,
    OneHot,
    OutputConstraint,
    Query,
    Row,
    Tie,
    VoteMargin,
    walk,
    weight_of,
)
from veritas_dsl.solvers.oracle import program
from veritas_dsl.solvers.oracle.boxes import Region, Space
from veritas_dsl.solvers.oracle.relations import closest, is_box, partners, separable


@dataclass
class Point:
    """Inputs per instance (float32 vectors) and, for a distance goal, their distance and a lower
    bound on the distance over the whole box (below ``value`` only where the float32 grid kept
    the exact optimum out of reach)."""

    inputs: dict[str, np.ndarray]
    value: float | None
    lower: float | None = None


def branches(constraints: tuple[Constraint, ...], margins, votes) -> list[list[Constraint]]:
    """The disjunctive normal form of ``constraints`` over input constraints only.

    Output and vote constraints are decided by the combination's ``margins`` and ``votes``;
    branches they falsify are dropped.
    """
    result: list[list[Constraint]] = [[]]
    for c in constraints:
        if isinstance(c, OutputConstraint | VoteMargin):
            if not holds(c, {}, margins, votes):
                return []
        elif isinstance(c, AnyOf):
            options = [b for alt in c.alternatives for b in branches(alt, margins, votes)]
            result = [r + b for r in result for b in options]
            if not result:
                return []
        else:
            result = [[*r, c] for r in result]
    return result


def find_point(
    query: Query,
    space: Space,
    lo: np.ndarray,
    hi: np.ndarray,
    constraints: tuple[Constraint, ...],
    margins,
    votes,
    goal: MinimizeDistance | None,
) -> Point | None:
    """A point in the box satisfying ``constraints``; the closest one when ``goal`` is given.

    Raises :class:`~veritas_dsl.solvers.oracle.program.GridError` or
    :class:`~veritas_dsl.solvers.oracle.rational.ProgramError` when an exact program cannot be
    finished or its solution moved onto the float32 grid.
    """
    best: Point | None = None
    lower = None
    for branch in branches(constraints, margins, votes):
        region = _prepare(query, space, lo, hi, branch)
        if region is None:
            continue
        pending = [c for c in branch if isinstance(c, OneHot | AtMostKChanged)]
        rest = [c for c in branch if isinstance(c, Ball | Linear) and not is_box(c)]
        for decided in _decide(query, space, region, pending, rest, goal):
            point = _place(query, space, decided, rest, goal)
            if point is None:
                continue
            _verify(branch, point)
            if goal is None:
                return point
            lower = point.lower if lower is None else min(lower, point.lower)
            if best is None or point.value < best.value:
                best = point
    if best is not None:
        best.lower = lower
    return best


def _prepare(query, space, lo, hi, branch) -> Region | None:
    """Step 1: the box narrowed by the branch's intervals and balls around rows, ties merged."""
    region = Region(lo, hi, space.integral)
    for c in branch:
        if isinstance(c, Interval):
            ok = region.narrow(space.of(query, c.instance, c.feature), c.lo, c.hi)
        elif isinstance(c, Ball) and isinstance(c.center, Row):
            ok = all(
                region.narrow(
                    space.of(query, c.instance, f),
                    *ball_interval(center, c.radius, weight_of(c.weights, f)),
                )
                for f, center in enumerate(c.center.values)
            )  # an L1 ball bounds each coordinate as the L-inf ball of its radius does
        elif isinstance(c, Ball):
            ok = c.radius >= 0
        elif isinstance(c, Tie):
            ok = region.merge(
                space.of(query, c.first, c.feature), space.of(query, c.second, c.feature)
            )
        else:
            continue
        if not ok:
            return None
    return region


def _decide(query, space, region: Region, pending: list, rest: list, goal):
    """Step 2: yield a region per way of meeting the one-hot groups and change counts of
    ``pending``; in each, pinned variables are narrowed to their reference or merged with it."""
    if not pending:
        yield region
        return
    c, later = pending[0], pending[1:]
    keys = partners(query, space, region, later + rest, goal)
    if isinstance(c, OneHot):
        members = [region.find(space.of(query, c.instance, f)) for f in c.features]
        contested = any(keys.get(m) for m in members)
        for hot in members:
            option = region.copy()
            if all(option.narrow(m, float(m == hot), float(m == hot)) for m in members):
                yield from _decide(query, space, option, later, rest, goal)
                if not contested:
                    return  # nothing else reads the group: one way to meet it will do
        return
    forced, contested = 0, []
    base = region.copy()
    for links in _links(query, space, region, c):
        if not all(_keepable(region, link) for link in links):
            forced += 1
        elif any(_contested(keys, link) for link in links):
            contested.append(links)
        elif not _pin(base, links):  # free: the reference is in the box, nothing else measures it
            forced += 1
    budget = c.k - forced
    if budget < 0:
        return
    if len(contested) <= budget:
        yield from _decide(query, space, base, later, rest, goal)
        return
    for kept in itertools.combinations(contested, len(contested) - budget):
        option = base.copy()
        if all(_pin(option, links) for links in kept):
            yield from _decide(query, space, option, later, rest, goal)


def choices(query: Query, space: Space, lo: np.ndarray, hi: np.ndarray) -> int:
    """At most how many ways :func:`find_point` tries per leaf combination to meet the one-hot
    groups and change counts (as seen in the box ``lo, hi``, every alternative of every
    disjunction taken at once), so that the oracle can refuse before searching."""
    region = Region(lo, hi, space.integral)
    goal = query.goal if isinstance(query.goal, MinimizeDistance) else None
    everything = list(walk(query.constraints))
    count = 1
    for k, c in enumerate(everything):
        if not isinstance(c, OneHot | AtMostKChanged):
            continue
        keys = partners(query, space, region, everything[:k] + everything[k + 1 :], goal)
        if isinstance(c, OneHot):
            members = [region.find(space.of(query, c.instance, f)) for f in c.features]
            count *= len(members) if any(keys.get(m) for m in members) else 1
            continue
        links = _links(query, space, region, c)
        contested = sum(any(_contested(keys, link) for link in unit) for unit in links)
        count *= sum(math.comb(contested, b) for b in range(min(c.k, contested) + 1))
    return count


def _links(query, space, region: Region, c: AtMostKChanged) -> list[list[tuple]]:
    """Per unit of the change count that may differ from the reference, its ``(v, w, value)``
    links (as :data:`~veritas_dsl.solvers.oracle.relations.Pair`); units that cannot differ
    (tied, or boxed to the reference's value) are left out."""
    i = query.instances.index(c.instance)
    found = []
    for unit in c.units:
        links = []
        for f in unit:
            v = region.find(int(space.var[i, f]))
            if isinstance(c.reference, Row):
                value = c.reference.values[f]
                if region.bounds(v) != (value, value):
                    links.append((v, -1, value))
            else:
                w = region.find(space.of(query, c.reference, f))
                if v != w:
                    links.append((v, w, 0.0))
        if links:
            found.append(links)
    return found


def _keepable(region: Region, link) -> bool:
    """Whether the variable can equal its reference inside the box."""
    v, w, value = link
    lo, hi = region.bounds(v)
    if w < 0:
        return lo <= value <= hi and (not region.integral[v] or float(value).is_integer())
    low, high = region.bounds(w)
    return max(lo, low) <= min(hi, high)


def _contested(keys: dict, link) -> bool:
    """Whether anything else measures the link's variables against another partner."""
    v, w, value = link
    if w < 0:
        return bool(keys.get(v, set()) - {("c", value + 0.0)})
    return bool(keys.get(v, set()) - {("v", w)} or keys.get(w, set()) - {("v", v)})


def _pin(region: Region, links) -> bool:
    """Make every link's variable equal its reference."""
    return all(
        region.narrow(v, value, value) if w < 0 else region.merge(v, w) for v, w, value in links
    )


def _place(query, space, region: Region, rest: list, goal) -> Point | None:
    """Step 3: a point of the region meeting the distances and linear constraints ``rest``."""
    if separable(query, space, region, rest, goal):
        point = _point(query, space, closest(query, space, region, rest, goal), goal)
        if not all(holds(c, point.inputs, {}) for c in rest):
            return None  # the closest point is too far: every point is
        point.lower = point.value
        return point
    found = program.solve(query, space, region, rest, goal)
    if found is None:
        return None
    values, bound = found
    point = _point(query, space, values, goal)
    point.lower = program.lower_bound(bound)
    return point


def _point(query, space, values, goal) -> Point:
    inputs = {
        name: values[space.var[i]].astype(np.float32) for i, name in enumerate(query.instances)
    }
    if goal is None:
        return Point(inputs, None)
    center = reference_point(goal.center, inputs)
    return Point(inputs, distance(goal.norm, inputs[goal.instance], center, goal.weights))


def _verify(branch, point: Point) -> None:
    """Every input constraint of the branch holds at the point; anything else is an oracle bug."""
    for c in branch:
        if not isinstance(c, OutputConstraint | VoteMargin) and not holds(c, point.inputs, {}):
            raise AssertionError(f"oracle point {point.inputs} misses {c!r}")
