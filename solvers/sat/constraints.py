"""The input constraints of an :class:`~.encode.Encoding`, each guarded by a literal.

Intervals and L-inf balls around a row are cut points; ties and L-inf balls between instances
compare cells; one-hot groups and change counts are cardinality constraints; :class:`AnyOf` picks
an alternative with selector literals, and every constraint inside an alternative is guarded by
its selector. Hard votes (:class:`VoteMargin`) are cardinality constraints over one vote literal
per tree. Output constraints are only recorded here, with their guard (:class:`GuardedOutput`):
the engine encodes them (:mod:`.linear`), since it owns the rounding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from pysat.card import CardEnc, EncType

from veritas_dsl.float32 import ball_interval
from veritas_dsl.ir.evaluate import leaf_votes
from veritas_dsl.ir.query import (
    AnyOf,
    AtMostKChanged,
    Ball,
    Constraint,
    Interval,
    OneHot,
    OutputConstraint,
    Reference,
    Row,
    Tie,
    VoteMargin,
    Weights,
    weight_of,
)
from veritas_dsl.solvers.base import UnsupportedQuery


@dataclass(frozen=True)
class GuardedOutput:
    """An output constraint that must hold when ``guard`` is true (``guard`` 0: always)."""

    constraint: OutputConstraint
    guard: int


class InputConstraints:
    """The constraint part of :class:`~.encode.Encoding` (a mixin: it uses the encoding's
    literals and ``encode_trees``, and fills ``outputs`` and ``pairs``)."""

    def encode(self, c: Constraint, guard: int) -> None:
        """Add ``guard -> c`` (``guard`` 0: ``c`` holds)."""
        if isinstance(c, Interval):
            v = self.variable(c.instance, c.feature)
            self.clause([self.ge(v, c.lo)], guard)
            self.clause([self.le(v, c.hi)], guard)
        elif isinstance(c, Tie):
            self.equal_cells(c.feature, c.first, c.second, guard)
        elif isinstance(c, OneHot):
            hot = [self.ge(self.variable(c.instance, f), 1.0) for f in c.features]
            self.cardinality(hot, 1, guard, exactly=True)
        elif isinstance(c, AtMostKChanged):
            self.changed(c, guard)
        elif isinstance(c, Ball) and c.norm == "linf":
            self.linf_ball(c.instance, c.center, c.radius, guard, c.weights)
        elif isinstance(c, OutputConstraint):
            self.outputs.append(GuardedOutput(c, guard))
        elif isinstance(c, AnyOf):
            selectors = [self.new_var() for _ in c.alternatives]
            self.clause(selectors, guard)
            for selector, alternative in zip(selectors, c.alternatives, strict=True):
                for inner in alternative:
                    self.encode(inner, selector)
        elif isinstance(c, VoteMargin):
            self.vote_margin(c, guard)
        else:
            raise TypeError(f"unknown constraint {c!r}")

    def equal_cells(self, feature: int, first: str, second: str, guard: int) -> None:
        """Add ``guard -> x_first and x_second lie in one cell``; the witness then gives both
        one value."""
        a, b = self.variable(first, feature), self.variable(second, feature)
        if a == b:
            return
        self.pairs.add((min(a, b), max(a, b)))
        for la, lb in zip(self.order[a], self.order[b], strict=True):
            self.clause([-la, lb], guard)
            self.clause([la, -lb], guard)

    def cardinality(self, literals: list[int], k: int, guard: int, exactly: bool = False) -> None:
        """``guard -> sum(literals) <= k`` (``== k`` when ``exactly``)."""
        k -= sum(1 for literal in literals if literal == self.true)
        free = [literal for literal in literals if abs(literal) != self.true]
        if k < 0 or (exactly and k > len(free)):
            self.clause([], guard)
            return
        if exactly:
            encoded = CardEnc.equals(free, k, top_id=self.top, encoding=EncType.seqcounter)
        elif k >= len(free):
            return
        else:
            encoded = CardEnc.atmost(free, k, top_id=self.top, encoding=EncType.seqcounter)
        self.top = max(self.top, encoded.nv)
        for clause in encoded.clauses:
            self.clause(clause, guard)

    def vote_margin(self, c: VoteMargin, guard: int) -> None:
        """``guard -> votes[label] - votes[other] >= k`` as ``sum over trees of [votes label] +
        [does not vote other] >= n_trees + k``: a cardinality constraint. A tree's flag for
        ``label`` implies one of its leaves that vote so, and a leaf voting ``other`` implies
        that flag, so the count is never above the true one."""
        model = self.query.models[c.model]
        literal = self.encode_trees(c.model, c.instance)
        label = leaf_votes(model)
        counted = []
        for t in range(model.n_trees):
            nodes = range(model.tree_offsets[t], model.tree_offsets[t + 1])
            leaves = [n for n in nodes if model.feature[n] < 0]
            votes_label, votes_other = self.new_var(), self.new_var()
            self.clause([-votes_label, *(int(literal[n]) for n in leaves if label[n] == c.label)])
            for n in leaves:
                if label[n] == c.other:
                    self.clause([-int(literal[n]), votes_other])
            counted += [votes_label, -votes_other]
        # at least n + k of the 2n literals: at most n - k of their negations
        self.cardinality([-lit for lit in counted], model.n_trees - c.k, guard)

    def changed(self, c: AtMostKChanged, guard: int) -> None:
        """``guard -> at most k units of c.instance differ from c.reference``.

        A flag per unit is forced on when any member moves off the reference (off the
        reference's singleton cell for a row, off the other instance's cell for an instance);
        a flag left on by the solver only over-counts, so the count stays exact.
        """
        flags = []
        for unit in c.units:
            flag = self.new_var()
            used = False
            for f in unit:
                a = self.variable(c.instance, f)
                if isinstance(c.reference, Row):
                    r = c.reference.values[f]
                    self.clause([flag, self.ge(a, r)])
                    self.clause([flag, self.le(a, r)])
                else:
                    b = self.variable(c.reference, f)
                    if a == b:
                        continue
                    self.pairs.add((min(a, b), max(a, b)))
                    for la, lb in zip(self.order[a], self.order[b], strict=True):
                        self.clause([flag, -la, lb])
                        self.clause([flag, la, -lb])
                used = True
            if used:
                flags.append(flag)
        self.cardinality(flags, c.k, guard)

    def linf_ball(
        self, instance: str, center: Reference, radius: float, guard: int, weights: Weights = None
    ) -> None:
        """``guard -> linf(instance, center) <= radius`` (weighted: each feature within
        ``radius / weight``), exactly on the float32 grid."""
        if radius == math.inf:
            return
        for f in range(self.query.n_features):
            a = self.variable(instance, f)
            weight = weight_of(weights, f)
            if isinstance(center, Row):
                lo, hi = ball_interval(center.values[f], radius, weight)
                if lo > hi:
                    self.clause([], guard)
                    return
                self.clause([self.ge(a, lo)], guard)
                self.clause([self.le(a, hi)], guard)
            else:
                side = Fraction(radius) / Fraction(weight)
                self.cell_gap_at_most(f, a, self.variable(center, f), side, guard)

    def cell_gap_at_most(self, f: int, a: int, b: int, radius: Fraction, guard: int) -> None:
        """``guard -> the cells of x_a and x_b lie within radius of each other``.

        For each cut ``c_k`` of ``b``: if ``x_b >= c_k`` then ``x_a`` must reach ``c_k - radius``,
        so ``x_a`` lies in a cell whose high end is at least that: a cell from ``j*`` on, which
        is the literal ``x_a >= c_(j*)``. With the same clauses the other way round, the closest
        points of the two cells lie within ``radius``; the witness picks them (exact rationals).
        """
        if a == b:
            return
        if radius < 0:
            self.clause([], guard)
            return
        self.pairs.add((min(a, b), max(a, b)))
        grid = self.grids[f]
        highs = [grid.cell(j)[1] for j in range(grid.n_cells)]
        for first, second in ((a, b), (b, a)):
            for k, cut in enumerate(grid.cuts, start=1):
                j = _first_cell_reaching(highs, cut, radius)
                if j == 0:
                    continue
                target = self.order[second][j - 1] if j < grid.n_cells else -self.true
                self.clause([-self.order[first][k - 1], target], guard)

    def check_pairs(self) -> None:
        """Refuse what the witness cannot satisfy exactly: a feature compared between more than
        two variables (three instances), where closest points of cells need not chain."""
        per_feature: dict[int, set[tuple[int, int]]] = {}
        for a, b in self.pairs:
            per_feature.setdefault(self.feature_of[a], set()).add((a, b))
        for f, pairs in per_feature.items():
            if len(pairs) > 1:
                raise UnsupportedQuery(
                    f"query {self.query.name}: engine sat compares feature "
                    f"{self.query.features[f].name} between at most two instances"
                )


def _first_cell_reaching(highs: list[float], cut: float, radius: Fraction) -> int:
    """The first cell whose high end is at least ``cut - radius`` (``len(highs)`` if none).

    ``highs`` rise with the cell index, so this is a binary search; comparisons are exact.
    """
    lo, hi = 0, len(highs)
    while lo < hi:
        mid = (lo + hi) // 2
        if _reaches(highs[mid], cut, radius):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _reaches(high: float, cut: float, radius: Fraction) -> bool:
    """``high >= cut - radius`` in exact arithmetic (``cut`` is a cut point: above -inf)."""
    if high == math.inf:
        return True
    if high == -math.inf or cut == math.inf:
        return False
    return Fraction(high) >= Fraction(cut) - radius
