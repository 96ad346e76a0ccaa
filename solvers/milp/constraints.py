"""The constraints of the MILP: one writer per constraint class of the IR (:data:`_ROWS`).

Each writer adds the rows of one constraint, binding when ``active`` (an indicator expression:
``ONE`` at the top level, an alternative's indicator inside a disjunction, where rows are big-M
rows). Top-level intervals, ties and balls around rows are already in the variables' bounds;
balls, change counts, ties and one-hot groups are written on predicates, with no rounding.
"""

from __future__ import annotations

import math
from fractions import Fraction

from veritas_dsl.float32 import ball_interval
from veritas_dsl.ir.evaluate import holds
from veritas_dsl.ir.query import (
    AnyOf,
    AtMostKChanged,
    Ball,
    Constraint,
    Interval,
    Linear,
    OneHot,
    OutputConstraint,
    Query,
    Row,
    Tie,
    weight_of,
)
from veritas_dsl.solvers.base import Deadline
from veritas_dsl.solvers.milp.program import ONE, ZERO, Affine, power_of_two
from veritas_dsl.solvers.milp.trees import Trees


class Constraints(Trees):
    """The rows of the query's constraints, on the predicates and trees below."""

    def __init__(self, query: Query, deadline: Deadline, pairs: list[tuple[str, str]]) -> None:
        super().__init__(query, deadline, pairs)
        self.conditions: list[tuple[Constraint, Affine]] = []
        self.changes: list[tuple[AtMostKChanged, list[Affine]]] = []

    def forbid(self, active: Affine) -> None:
        """``active`` must be 0 (raises Infeasible at the top level)."""
        self.p.row(active, upper=0.0)

    def at_most(self, expr: Affine, upper: float, active: Affine, top: float | None = None):
        if top is not None and not active.is_constant:
            if top <= upper:
                return
            self.p.row(expr + (top - upper) * active, upper=top)
            return
        self.p.at_most(expr, upper, active)

    def at_least(self, expr: Affine, lower: float, active: Affine, bottom: float | None = None):
        top = None if bottom is None else -bottom
        self.at_most(-expr, -lower, active, top)

    def require_range(self, v: int, lo: float, hi: float, active: Affine) -> None:
        """``lo <= x_v <= hi`` when ``active``, on predicates (the cuts exist by construction)."""
        var = self.vars[v]
        low, high = var.lower_cut(lo), var.upper_cut(hi)
        if low > var.hi or high <= var.lo or low >= high:
            self.forbid(active)
            return
        self.at_most(self.pred(v, low), 0.0, active)  # x >= low
        self.at_least(self.pred(v, high), 1.0, active)  # x < high
        if var.x is not None:
            x = Affine.column(var.x)
            self.at_least(x, low, active)
            self.at_most(x, var.below(high), active)

    def pieces(
        self, v: int, center: float | int, is_row: bool, reach: float = math.inf
    ) -> list[Affine]:
        """Affine expressions whose maximum (with 0) is the exact distance from ``v``'s segment
        to a row value, or to the segment of variable ``center``; from a row, capped at
        ``reach`` (the segment's ends clipped to the row value plus or minus it)."""
        var = self.vars[v]
        self.finite(v)
        if is_row:
            c = float(center)
            found = [self.lower_end(v, c, c + reach) - c, c - self.upper_end(v, c, c - reach)]
            if var.integral and c != math.floor(c):
                gap = min(c - math.floor(c), math.ceil(c) - c)
                found.append(Affine(const=gap))
            if var.x is not None:
                found += [Affine.column(var.x) - c, c - Affine.column(var.x)]
            return found
        w = int(center)
        if w == v:
            return []
        self.finite(w)
        found = [self.pair_gap(v, w), self.pair_gap(w, v)]
        if var.x is not None and self.vars[w].x is not None:
            diff = Affine({var.x: 1.0, self.vars[w].x: -1.0})
            found += [diff, -diff]
        return found

    def pair_gap(self, u: int, w: int) -> Affine:
        """How far the segment of ``w`` lies above that of ``u``: ``a_w - b_u`` (lower end of
        w's, upper end of u's) when positive, at most 0 otherwise.

        Written exactly as ``lower_end(w) - upper_end(u)`` it would carry the hull's size in its
        coefficients, which costs the solver precision; the ends are clipped instead, to values
        that leave every positive gap intact: the lower end of w at no more than u's smallest
        upper end can take (a w-segment reaching below that has no gap above u), and the upper
        end of u at no less than w's largest lower end.
        """
        hi_u = self.vars[u].hi
        lo_w = self.vars[w].lo
        cuts_u, cuts_w = self.vars[u].cuts, self.vars[w].cuts
        least_upper_u = min(hi_u, self.vars[u].below(cuts_u[0])) if cuts_u else hi_u
        most_lower_w = max(lo_w, cuts_w[-1]) if cuts_w else lo_w
        first_w = cuts_w[0] if cuts_w else lo_w  # without cuts, the ends are exact constants
        last_upper_u = self.vars[u].below(cuts_u[-1]) if cuts_u else hi_u
        floor = max(lo_w, min(least_upper_u, first_w))
        ceiling = min(hi_u, max(most_lower_w, last_upper_u))
        return self.lower_end(w, floor) - self.upper_end(u, ceiling)

    def ball_between(
        self, u: int, w: int, radius: float, active: Affine, weight: float = 1.0
    ) -> None:
        """``weight * |x_u - x_w| <= radius`` when ``active``, as exclusions between predicates.

        For each upper end ``b`` that u's segment can have, the smallest lower end ``a`` of w's
        with ``a - b > radius`` (decided in rationals) is excluded together with it; larger lower
        ends imply that one. Coefficients are 0 and 1, so no tolerance can blur a float32 step.
        """
        if u == w:
            return
        bound = Fraction(radius) / Fraction(weight)
        for a, b in ((u, w), (w, u)):
            first, second = self.vars[a], self.vars[b]
            uppers = [(Fraction(first.below(s)), self.pred(a, s)) for s in first.cuts]
            uppers.append((Fraction(first.hi), ONE))
            lowers = [(Fraction(second.lo), ONE)]
            lowers += [(Fraction(t), ONE - self.pred(b, t)) for t in second.cuts]
            for upper, below_it in uppers:
                for lower, above_it in lowers:
                    if lower - upper > bound:
                        self.at_most(below_it + above_it, 1.0, active)
                        break
        xu, xw = self.vars[u].x, self.vars[w].x
        if xu is not None and xw is not None:
            unit = power_of_two(radius)  # in units of the radius, as in ball()
            diff = Affine({xu: weight / unit, xw: -weight / unit})
            self.at_most(diff, radius / unit, active)
            self.at_least(diff, -radius / unit, active)

    def distance_column(self, pieces: list[Affine]) -> Affine:
        """A column ``d >= max(0, pieces)``; the solver keeps it at the maximum when it helps.
        Constant pieces (a pinned variable) make a constant, not a fixed column: a weight of
        1e16 on a column fixed at 0 made HiGHS fail."""
        if all(piece.is_constant for piece in pieces):
            return Affine(const=max([0.0] + [piece.const for piece in pieces]))
        top = max([0.0] + [self.p.bounds(piece)[1] for piece in pieces])
        d = Affine.column(self.p.column(0.0, top))
        for piece in pieces:
            self.p.row(d - piece, lower=0.0)
        return d

    def feature_pieces(self, instance: str, center, reach=None) -> list[list[Affine]]:
        """Per feature, the :meth:`pieces` of ``instance``'s distance to ``center``; from a row,
        capped at ``reach[f]`` when given."""
        result = []
        for f in range(self.query.n_features):
            v = self.var(instance, f)
            if isinstance(center, Row):
                cap = math.inf if reach is None else reach[f]
                result.append(self.pieces(v, center.values[f], True, cap))
            else:
                result.append(self.pieces(v, self.var(center, f), False))
        return result

    def constraint(self, c: Constraint, active: Affine, top_level: bool) -> None:
        """The rows of ``c`` binding when ``active``: its writer in :data:`_ROWS`."""
        if isinstance(c, AnyOf):
            self.any_of(c, active)
            return
        self.conditions.append((c, active))
        write = _ROWS.get(type(c))
        if write is None:
            raise TypeError(f"unknown constraint {c!r}")
        write(self, c, active, top_level)

    def interval(self, c: Interval, active: Affine, top_level: bool) -> None:
        if not top_level:
            self.require_range(self.var(c.instance, c.feature), c.lo, c.hi, active)

    def tie(self, c: Tie, active: Affine, top_level: bool) -> None:
        if not top_level:
            self.equal(self.var(c.first, c.feature), self.var(c.second, c.feature), active)

    def one_hot(self, c: OneHot, active: Affine, top_level: bool) -> None:
        total = Affine()
        for f in c.features:
            total = total + (ONE - self.pred(self.var(c.instance, f), 1.0))
        self.at_most(total, 1.0, active)
        self.at_least(total, 1.0, active)

    def linear(self, c: Linear, active: Affine, top_level: bool) -> None:
        expr = Affine()
        for t in c.terms:
            expr = expr + t.coef * Affine.column(self.vars[self.var(t.instance, t.feature)].x)
        if c.op in ("<=", "=="):
            self.at_most(expr, c.rhs, active)
        if c.op in (">=", "=="):
            self.at_least(expr, c.rhs, active)

    def output(self, c: OutputConstraint, active: Affine, top_level: bool) -> None:
        outputs = self.constant_outputs(c.term)
        if outputs is not None:
            # One leaf per tree: a constant, decided exactly as the witness check will decide
            # it. As a row, half a grid step beyond rhs could round away (0.5 + 2**-56 == 0.5),
            # and the program adds in an order of its own.
            if not holds(c, {}, outputs):
                self.forbid(active)
            return
        expr, lo, hi = self.term(c.term)
        margin = self.grid_margin(c)
        # The program adds the leaves in real numbers; the semantics in float64, which may land
        # up to `slack` away (leaves of 2**27 and 2**-26 add to 2**27). Where that exceeds the
        # half grid step, the row accepts all the semantics may accept; a combination it
        # accepts and they refuse is cut on its leaves when read (witness.py).
        slack = self.rounding(c.term)
        strict = c.op in ("<", ">")
        beyond = max(margin, slack) if not strict else (slack if slack > margin else -margin)
        if c.op in ("<", "<="):
            self.at_most(expr, c.rhs + beyond, active, hi)
        else:
            self.at_least(expr, c.rhs - beyond, active, lo)

    def any_of(self, c: AnyOf, active: Affine) -> None:
        if not c.alternatives:
            self.forbid(active)
            return
        if len(c.alternatives) == 1:
            indicators = [active]
        else:
            indicators = [Affine.column(self.binary()) for _ in c.alternatives]
            total = Affine()
            for z in indicators:
                total = total + z
            self.p.row(total - active, lower=0.0)
        for alternative, z in zip(c.alternatives, indicators, strict=True):
            for inner in alternative:
                self.constraint(inner, z, False)

    def equal(self, u: int, w: int, active: Affine) -> None:
        """``x_u == x_w`` when ``active``: the same predicate on every cut of their class."""
        if u == w:
            return
        for t in sorted(set(self.vars[u].cuts) | set(self.vars[w].cuts)):
            diff = self.pred(u, t) - self.pred(w, t)
            self.at_most(diff, 0.0, active)
            self.at_least(diff, 0.0, active)
        xu, xw = self.vars[u].x, self.vars[w].x
        if xu is not None and xw is not None:
            diff = Affine({xu: 1.0, xw: -1.0})
            self.at_most(diff, 0.0, active)
            self.at_least(diff, 0.0, active)

    def changed(self, c: AtMostKChanged, active: Affine, top_level: bool) -> None:
        """``active -> at most k units change``: one indicator per unit, off only when every
        member keeps its reference value (``ONE`` when a member cannot, ``ZERO`` when none can
        move); the members of a unit share their unit's indicator."""
        flags: list[Affine] = [ZERO] * self.query.n_features
        total = Affine()
        for unit in c.units:
            movable = []
            forced = False
            for f in unit:
                v = self.var(c.instance, f)
                var = self.vars[v]
                if isinstance(c.reference, Row):
                    r = c.reference.values[f]
                    if not var.lo <= r <= var.hi or (var.integral and r != math.floor(r)):
                        forced = True
                    elif var.lo != var.hi:
                        movable.append((v, r))
                else:
                    w = self.var(c.reference, f)
                    if w != v:
                        movable.append((v, w))
            flag = ONE if forced else ZERO
            if not forced and movable:
                flag = Affine.column(self.binary())
                for v, r in movable:
                    if isinstance(c.reference, Row):
                        self.equal_to_row(v, r, ONE - flag)
                    else:
                        self.equal(v, r, ONE - flag)
            for f in unit:
                flags[f] = flag
            total = total + flag
        self.changes.append((c, flags))
        if c.k < 0:
            self.forbid(active)
            return
        self.at_most(total, float(c.k), active)

    def equal_to_row(self, v: int, r: float, active: Affine) -> None:
        var = self.vars[v]
        self.at_most(self.pred(v, r), 0.0, active)  # x >= r
        self.at_least(self.pred(v, var.after(r)), 1.0, active)  # x < after(r)
        if var.x is not None:
            self.at_most(Affine.column(var.x), r, active)
            self.at_least(Affine.column(var.x), r, active)

    def ball(self, c: Ball, active: Affine, top_level: bool) -> None:
        if c.radius < 0:
            self.forbid(active)
            return
        if c.norm == "linf" and isinstance(c.center, Row):
            if not top_level:
                for f, center in enumerate(c.center.values):
                    self.require_range(
                        self.var(c.instance, f),
                        *ball_interval(center, c.radius, weight_of(c.weights, f)),
                        active,
                    )
            return
        if math.isinf(c.radius):
            return
        if c.norm == "linf":  # between instances
            for f in range(self.query.n_features):
                u, w = self.var(c.instance, f), self.var(c.center, f)
                if u != w:
                    self.finite(u)
                    self.finite(w)
                self.ball_between(u, w, c.radius, active, weight_of(c.weights, f))
            return
        # Around a row, on predicates alone, the ball is written in units of its radius (for
        # the reason Formulation.unit gives), each feature's distance capped at twice the
        # radius, which decides the ball as well as the whole distance does: its coefficients
        # stay near 1 (a weight of 1e16, or a radius of 5e-19 inside a disjunction, made them
        # 1e20). Value columns and distances between instances span the hull and take no cap:
        # a radius unit would multiply them; those stay in the features' units.
        own = self.var_of[self.query.instances.index(c.instance)]
        capped = isinstance(c.center, Row) and not self.complex.intersection(map(int, own))
        unit = power_of_two(c.radius) if capped else 1.0
        reach = [2.0 * c.radius / weight_of(c.weights, f) for f in range(self.query.n_features)]
        total = Affine()
        for f, pieces in enumerate(
            self.feature_pieces(c.instance, c.center, reach if capped else None)
        ):
            if pieces:
                scale = weight_of(c.weights, f) / unit
                total = total + self.distance_column([piece * scale for piece in pieces])
        self.at_most(total, c.radius / unit, active)


#: The writer of each constraint class (a disjunction, :class:`AnyOf`, is written by
#: :meth:`Constraints.any_of`). A class missing here is refused with TypeError.
_ROWS = {
    Interval: Constraints.interval,
    Tie: Constraints.tie,
    OneHot: Constraints.one_hot,
    AtMostKChanged: Constraints.changed,
    Ball: Constraints.ball,
    Linear: Constraints.linear,
    OutputConstraint: Constraints.output,
}
