"""Input conditions that no input satisfies, found before any engine runs: the static box.

Many input constraints confine one feature of one instance on their own: its domain (a closed
range; integral for int and bool features), an :class:`Interval`, and a :class:`Ball` around a
constant row (per feature, the float32 values within the radius). Intersected on the float32
grid and merged across instances by :class:`Tie` (the box the engines get too,
:mod:`veritas_dsl.ir.box`), and checked against :class:`OneHot` groups and the total extent
of ``l1`` balls around rows, they show a conjunction empty, never wrongly. When a conjunction
holds nothing else (intervals, ties, one-hot groups, ``linf`` balls around rows, and one ``l1``
ball around a row; an ``l2`` ball only narrows each feature), the same box also shows it
non-empty: those constraints are exact per feature (and per group, for the distance of the
``l1`` ball).
Other constraints (outputs, votes, linear, change counts, distances between instances) leave the
answer undecided unless the box alone is empty.

An alternative of an :class:`AnyOf` that is empty together with the constraints around it is
reported as dead; a disjunction whose alternatives are all dead empties its conjunction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from veritas_dsl.ir.box import StaticBox, inward, static_box, tie_classes
from veritas_dsl.ir.query import (
    AnyOf,
    Ball,
    Constraint,
    DomainKind,
    Feature,
    Interval,
    OneHot,
    Row,
    Tie,
    weight_of,
)

_FLOAT32_MAX = float(np.finfo(np.float32).max)
#: The constraints that can shrink the box (or hold a disjunction that might).
_BOXED = (Interval, Ball, Tie, OneHot, AnyOf)


@dataclass(frozen=True)
class Conflict:
    """Constraints that no input satisfies together (with the features' domains).

    ``constraints`` are those responsible, in the order met (empty when the domains alone
    conflict); ``reason`` says why in plain words. With ``disjunction`` set, the conflict
    empties only its alternative number ``alternative``; otherwise the whole conjunction.
    """

    constraints: tuple[Constraint, ...]
    reason: str
    disjunction: AnyOf | None = None
    alternative: int = 0


@dataclass(frozen=True)
class Emptiness:
    """What the static box says of a conjunction.

    ``empty`` is True when no input satisfies it, False when some input does, None when the box
    cannot tell. ``conflicts`` give the reasons it is empty (their ``disjunction`` is None), and
    every dead alternative of a disjunction in it.
    """

    empty: bool | None
    conflicts: tuple[Conflict, ...] = ()


def emptiness(
    features: tuple[Feature, ...], instances: tuple[str, ...], constraints: tuple[Constraint, ...]
) -> Emptiness:
    """Whether the conjunction ``constraints`` over ``instances`` (vectors over ``features``)
    admits an input, as far as the static box can tell (see the module docstring)."""
    plain = tuple(c for c in constraints if not isinstance(c, AnyOf))
    box = _Box(features, instances, plain)
    conflicts = box.conflicts()
    if conflicts:
        return Emptiness(True, tuple(conflicts))
    decided = box.exact
    dead: list[Conflict] = []
    for c in constraints:
        if not isinstance(c, AnyOf):
            continue
        alive = 0
        for index, alternative in enumerate(c.alternatives):
            if not any(isinstance(a, _BOXED) for a in alternative):
                alive += 1  # adds nothing to the box, which is not empty
                continue
            inner = emptiness(features, instances, plain + alternative)
            own = [x for x in inner.conflicts if x.disjunction is not None]
            if inner.empty:
                why = next(x for x in inner.conflicts if x.disjunction is None)
                dead.append(Conflict(why.constraints, why.reason, c, index))
            else:
                alive += 1
            dead += own
        if not alive:
            reason = (
                "no alternative of this condition can hold"
                if c.alternatives
                else "this condition holds for no input"
            )
            return Emptiness(True, (Conflict((c,), reason), *dead))
        decided = False  # the box keeps no disjunction, so it cannot vouch for one
    return Emptiness(False if decided else None, tuple(dead))


@dataclass
class _Range:
    """The float32 values one feature of a group of tied instances may take, and the
    constraints that set each end (None: the feature's domain)."""

    lo: float
    hi: float
    integral: bool
    lo_by: Constraint | None = None
    hi_by: Constraint | None = None

    @property
    def grid(self) -> tuple[float, float]:
        """The ends rounded inward to the values the feature may take."""
        lo, hi = inward(self.lo, self.hi, self.integral)
        return float(lo), float(hi)

    @property
    def empty(self) -> bool:
        lo, hi = self.grid
        return lo > hi


class _Box:
    """The ranges of every (instance, feature), with ties merging instances, and the checks of
    one-hot groups and ``l1`` balls on them."""

    def __init__(
        self,
        features: tuple[Feature, ...],
        instances: tuple[str, ...],
        constraints: tuple[Constraint, ...],
    ) -> None:
        self.features = features
        self.instances = instances
        self.constraints = constraints
        var = tie_classes(instances, len(features), constraints)
        box = static_box(features, instances, constraints, var)
        #: The instance each (instance, feature) goes by: the first of its tied instances.
        self.root: dict[tuple[str, int], str] = {}
        self.ranges: dict[tuple[str, int], _Range] = {}
        for f, feature in enumerate(features):
            integral = feature.kind is not DomainKind.REAL
            for i, instance in enumerate(instances):
                v = int(var[i, f])
                first = instances[int(np.argmax(var[:, f] == v))]
                self.root[instance, f] = first
                if first == instance:
                    self.ranges[instance, f] = _range(box, v, integral)
        self.ties: dict[tuple[str, int], list[Tie]] = {}
        for c in constraints:
            if isinstance(c, Tie):
                self.ties.setdefault((self.find(c.first, c.feature), c.feature), []).append(c)
        #: Whether the ranges, one-hot groups and l1 balls say everything the constraints say.
        self.exact = all(
            isinstance(c, Interval | Tie | OneHot)
            or (isinstance(c, Ball) and isinstance(c.center, Row) and c.norm != "l2")
            for c in constraints
        )  # an l2 ball bounds each feature, but its features' squares add: not exact per feature
        #: One-hot groups as sets of merged features, once each.
        self.groups = list(dict.fromkeys(self.members(c) for c in self.onehots))
        # Exactly-one choices over shared members interact unless the groups are equal or
        # apart; and two l1 balls may trade distance through ties. Otherwise, each group picks
        # its 1 and every other feature its value on its own.
        self.clean = not any(a != b and a & b for a in self.groups for b in self.groups)
        self.exact = self.exact and self.clean and len(self.l1_balls) <= 1

    @property
    def onehots(self) -> list[OneHot]:
        return [c for c in self.constraints if isinstance(c, OneHot)]

    @property
    def l1_balls(self) -> list[Ball]:
        return [
            c
            for c in self.constraints
            if isinstance(c, Ball) and c.norm == "l1" and isinstance(c.center, Row)
        ]

    def members(self, group: OneHot) -> frozenset[tuple[str, int]]:
        return frozenset((self.find(group.instance, f), f) for f in group.features)

    def find(self, instance: str, feature: int) -> str:
        return self.root[instance, feature]

    def range(self, instance: str, feature: int) -> _Range:
        return self.ranges[self.find(instance, feature), feature]

    def name(self, instance: str, feature: int) -> str:
        return f"`{instance}.{self.features[feature].name}`"

    def conflicts(self) -> list[Conflict]:
        found = []
        for (instance, f), r in self.ranges.items():
            if r.empty:
                found.append(self.range_conflict(instance, f, r))
        if found:
            return found
        for c in self.onehots:
            conflict = self.onehot_conflict(c)
            if conflict:
                found.append(conflict)
        if found:
            return found
        for c in self.l1_balls:
            conflict = self.l1_conflict(c)
            if conflict:
                found.append(conflict)
        return found

    def range_conflict(self, instance: str, f: int, r: _Range) -> Conflict:
        by = list(dict.fromkeys(c for c in (r.lo_by, r.hi_by) if c is not None))
        if len({_instance(c) for c in by}) > 1:  # the ends bind different instances: via ties
            by += self.ties.get((instance, f), [])
        if r.lo <= r.hi:
            kind = self.features[f].kind.value
            reason = (
                f"{self.name(instance, f)} ({kind}) would have to lie in "
                f"[{_number(r.lo)}, {_number(r.hi)}], which holds no {kind} value"
            )
        else:
            low = f">= {_number(r.lo)}{self.why(r.lo_by, f)}"
            high = f"<= {_number(r.hi)}{self.why(r.hi_by, f)}"
            reason = f"{self.name(instance, f)} would have to be {low} and {high}"
        return Conflict(tuple(by), reason)

    def why(self, by: Constraint | None, f: int) -> str:
        if by is None:
            feature = self.features[f]
            domain = f"[{_number(feature.lo)}, {_number(feature.hi)}]"
            return f" (its domain: {feature.kind.value} in {domain})"
        if isinstance(by, Ball):
            center = _number(by.center.values[f])
            radius = _number(by.radius) + (" scaled" if weight_of(by.weights, f) != 1 else "")
            return f" (within {radius} of {by.center.label}, where it is {center})"
        return ""

    def onehot_conflict(self, c: OneHot) -> Conflict | None:
        ranges = [self.range(c.instance, f) for f in c.features]
        members = ", ".join(self.features[f].name for f in c.features)
        ones = [f for f, r in zip(c.features, ranges, strict=True) if r.grid[0] >= 1]
        if len(ones) >= 2:
            by = tuple(dict.fromkeys(self.range(c.instance, f).lo_by for f in ones))
            names = " and ".join(self.name(c.instance, f) for f in ones[:2])
            reason = f"{names} would both be 1, but one-hot group ({members}) allows one"
            return Conflict((*(b for b in by if b is not None), c), reason)
        if all(r.grid[1] < 1 for r in ranges):
            by = tuple(dict.fromkeys(r.hi_by for r in ranges if r.hi_by is not None))
            reason = f"every member of one-hot group ({members}) of `{c.instance}` would be 0"
            return Conflict((*by, c), reason)
        return None

    def l1_conflict(self, c: Ball) -> Conflict | None:
        """The ball is empty when the ranges keep the instance farther than its radius from the
        center: the least distance adds each feature's own, and each one-hot group's least over
        the member it sets to 1 (when groups are equal or apart; else each member's own, which
        is smaller); each gap times its feature's weight."""
        center = {(self.find(c.instance, f), f): Fraction(v) for f, v in enumerate(c.center.values)}
        weight = {
            (self.find(c.instance, f), f): Fraction(weight_of(c.weights, f))
            for f in range(len(center))
        }
        groups = [g for g in self.groups if g & center.keys()] if self.clean else []
        grouped = {key for g in groups for key in g}
        total = Fraction(0)
        far: list[tuple[str, int]] = []
        for key, value in center.items():
            gap = 0 if key in grouped else _gap(value, self.ranges[key]) * weight[key]
            if gap:
                total += gap
                far.append(key)
        for group in groups:
            cost, members = self.group_gap(group, center, weight)
            total += cost
            far += members
        if total <= Fraction(c.radius):
            return None
        by = [b for key in far for b in (self.ranges[key].lo_by, self.ranges[key].hi_by)]
        by += [g for g in self.onehots if groups and self.members(g) in groups]
        reason = (
            f"`l1({c.instance}, {c.center.label})` would have to be <= {_number(c.radius)}, "
            f"but the other conditions keep it >= {_number(float(total))}"
        )
        return Conflict((*dict.fromkeys(b for b in by if b is not None and b != c), c), reason)

    def group_gap(
        self,
        group: frozenset[tuple[str, int]],
        center: dict[tuple[str, int], Fraction],
        weight: dict[tuple[str, int], Fraction],
    ) -> tuple[Fraction, list[tuple[str, int]]]:
        """The least distance to ``center`` over the members of ``group`` it measures, for the
        choices of the member that is 1 (one that may be 1, while the others may be 0), and the
        members that choice keeps away from the center."""
        best: tuple[Fraction, list[tuple[str, int]]] | None = None
        members = sorted(group)
        for one in members:
            values = {key: 1 if key == one else 0 for key in members}
            if any(
                not self.ranges[k].grid[0] <= v <= self.ranges[k].grid[1] for k, v in values.items()
            ):
                continue
            gaps = {k: abs(v - center[k]) * weight[k] for k, v in values.items() if k in center}
            cost = sum(gaps.values(), Fraction(0))
            if best is None or cost < best[0]:
                best = cost, [k for k, gap in gaps.items() if gap]
        assert best is not None, "a group with no possible 1 is a conflict found before"
        return best


def _range(box: StaticBox, v: int, integral: bool) -> _Range:
    """Variable ``v`` of ``box`` as a range; an infinite end becomes the largest float32 of its
    sign (inputs are finite), set by the feature's range."""
    lo, lo_by, hi, hi_by = float(box.lo[v]), box.lo_by[v], float(box.hi[v]), box.hi_by[v]
    if lo < -_FLOAT32_MAX:
        lo, lo_by = -_FLOAT32_MAX, None
    if hi > _FLOAT32_MAX:
        hi, hi_by = _FLOAT32_MAX, None
    return _Range(lo, hi, integral, lo_by, hi_by)


def _gap(center: Fraction, r: _Range) -> Fraction:
    """The exact distance from ``center`` to the nearest value the range allows."""
    lo, hi = r.grid
    if center < Fraction(lo):
        return Fraction(lo) - center
    if center > Fraction(hi):
        return center - Fraction(hi)
    if r.integral and center.denominator != 1:
        below, above = math.floor(center), math.ceil(center)
        return min(center - below, above - center)
    return Fraction(0)


def _instance(c: Constraint) -> str | None:
    return getattr(c, "instance", None)


def _number(value: float) -> str:
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.9g}"
