"""Minimising an L-inf distance by a binary search over the distances cells can be apart.

A cell's distance to a center (to its closest value: an integer in an integral cell) or to
another instance's cell, times the feature's weight, is exact, so the optimum is one of
finitely many such distances; each step of the search is an L-inf ball of one of them under a
selector literal.
"""

from __future__ import annotations

import math
from fractions import Fraction

from veritas_dsl.ir.query import MinimizeDistance, Row, weight_of
from veritas_dsl.result import Result, Termination, Witness
from veritas_dsl.solvers.base import UnsupportedQuery
from veritas_dsl.solvers.sat.linear import float_down, float_up


class Distances:
    """The distance strategy of the engine's search (a mixin over its solver calls)."""

    def _check_distance_goal(self, goal: MinimizeDistance) -> None:
        """The witness takes each variable closest to the goal's center, unless the variable is
        tied to another instance's (a tie, change count or ball in a disjunction); then it
        cannot do both, so such queries are refused."""
        if isinstance(goal.center, Row):
            paired = {v for pair in self.encoding.pairs for v in pair}
            i = self.query.instances.index(goal.instance)
            if paired & {int(v) for v in self.encoding.var[i]}:
                raise UnsupportedQuery(
                    f"query {self.query.name}: engine sat cannot minimise a distance to a row "
                    "for an instance also compared with another instance"
                )

    def _min_distance(self, goal: MinimizeDistance) -> Result:
        candidates = self._gap_candidates(goal)
        found = self._witness([])
        if found is None:
            return self._result(self.stop, 0.0, math.inf)
        if found is False:
            self._point(math.inf, math.inf)
            return self._result(Termination.INFEASIBLE, math.inf, math.inf)
        best, best_gap = found[0], self._gap_of(goal, found[0])
        self.witness = Witness(best, float(best_gap))
        lo, hi = 0, candidates.index(best_gap)  # the optimum is candidates[lo..hi]
        self._point(float_down(candidates[lo]), float_up(best_gap))
        while lo < hi:
            mid = (lo + hi) // 2
            selector = self.encoding.new_var()
            self._within(goal, candidates[mid], selector)
            found = self._witness([selector])
            self.encoding.clause([-selector])
            if found is None:
                return self._distance_result(self.stop, candidates[lo], best, best_gap)
            if found is False:
                lo = mid + 1
            else:
                best, best_gap = found[0], self._gap_of(goal, found[0])
                self.witness = Witness(best, float(best_gap))
                hi = candidates.index(best_gap)
            self._point(float_down(candidates[lo]), float_up(best_gap))
        return self._distance_result(Termination.OPTIMAL, best_gap, best, best_gap)

    def _distance_result(self, termination, lower: Fraction, best, best_gap: Fraction) -> Result:
        value = float(best_gap)  # the exact distance, to the nearest float64, as reported
        lower_value = value if lower == best_gap else float_down(lower)
        return self._result(termination, lower_value, value, Witness(best, value))

    def _gap_of(self, goal: MinimizeDistance, inputs) -> Fraction:
        from veritas_dsl.ir.evaluate import exact_distance, reference_point

        center = reference_point(goal.center, inputs)
        return exact_distance("linf", inputs[goal.instance], center, goal.weights)

    def _gap_candidates(self, goal: MinimizeDistance) -> list[Fraction]:
        """Every value the distance can take at a closest pair of points of two cells."""
        enc = self.encoding
        values = {Fraction(0)}
        for f in range(self.query.n_features):
            grid = enc.grids[f]
            cells = [grid.cell(j) for j in range(grid.n_cells)]
            weight = Fraction(weight_of(goal.weights, f))
            gaps = []
            if isinstance(goal.center, Row):
                c = goal.center.values[f]
                gaps = [grid.distance(j, c) for j in range(grid.n_cells)]
            elif enc.variable(goal.instance, f) != enc.variable(goal.center, f):
                gaps = [_gap(a, b) for a in cells for b in cells]
            values.update(gap * weight for gap in gaps if gap is not None)
        return sorted(values)

    def _within(self, goal: MinimizeDistance, radius: Fraction, guard: int) -> None:
        """``guard -> every feature's cell lies within radius of the center``."""
        enc = self.encoding
        for f in range(self.query.n_features):
            a = enc.variable(goal.instance, f)
            side = radius / Fraction(weight_of(goal.weights, f))
            if isinstance(goal.center, Row):
                c = goal.center.values[f]
                grid = enc.grids[f]
                near = [j for j in range(grid.n_cells) if grid.distance(j, c) <= side]
                if not near:
                    enc.clause([], guard)
                    return
                if near[0] > 0:
                    enc.clause([enc.order[a][near[0] - 1]], guard)
                if near[-1] < grid.n_cells - 1:
                    enc.clause([-enc.order[a][near[-1]]], guard)
            else:
                enc.cell_gap_at_most(f, a, enc.variable(goal.center, f), side, guard)


def _gap(a: tuple[float, float], b: tuple[float, float]) -> Fraction | None:
    """The exact distance between the closest points of two closed intervals (None: infinite)."""
    if a[1] < b[0]:
        low, high = a[1], b[0]
    elif b[1] < a[0]:
        low, high = b[1], a[0]
    else:
        return Fraction(0)
    if not (math.isfinite(low) and math.isfinite(high)):
        return None
    return Fraction(high) - Fraction(low)
