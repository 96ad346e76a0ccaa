"""The exact square root of a rational: how an ``l2`` distance is compared and rounded.

An L2 distance of float32 points is the square root of an exact rational (a sum of squared,
weighted gaps), irrational in general. :class:`Root` keeps the rational and compares exactly by
squaring (``sqrt(s) <= r`` iff ``r >= 0 and s <= r * r``); it rounds to float64 correctly: to the
nearest (a reported distance), down or up (a bound that must stay one).
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from numbers import Real


@functools.total_ordering
class Root:
    """``sqrt(square)`` for a rational ``square >= 0``."""

    __slots__ = ("square",)

    def __init__(self, square) -> None:
        square = Fraction(square)
        if square < 0:
            raise ValueError(f"no real square root of {square}")
        self.square = square

    def _versus(self, other) -> Fraction | None:
        """``other`` squared, when it is a finite number >= 0; None for a negative one; raises
        for +inf (every root is below it), which the comparisons handle."""
        if isinstance(other, Root):
            return other.square
        if not isinstance(other, Real):
            return NotImplemented
        if math.isinf(other):
            return math.inf if other > 0 else None
        other = Fraction(other)
        return other * other if other >= 0 else None

    def __eq__(self, other) -> bool:
        square = self._versus(other)
        if square is NotImplemented:
            return NotImplemented
        return square is not None and square == self.square

    def __lt__(self, other) -> bool:
        square = self._versus(other)
        if square is NotImplemented:
            return NotImplemented
        return square is not None and self.square < square

    def __hash__(self) -> int:
        return hash(("Root", self.square))

    def __repr__(self) -> str:
        return f"Root({self.square})"

    def down(self) -> float:
        """The largest float64 at most the root."""
        n, d = self.square.numerator, self.square.denominator
        # 2k extra bits under the square give k under the root: at least 64 significant bits
        k = max(0, 64 - (n.bit_length() - d.bit_length()) // 2)
        value = float(Fraction(math.isqrt((n << (2 * k)) // d), 1 << k))  # within an ulp or two
        while Fraction(value) ** 2 > self.square:
            value = math.nextafter(value, -math.inf)
        while Fraction(math.nextafter(value, math.inf)) ** 2 <= self.square:
            value = math.nextafter(value, math.inf)
        return value

    def up(self) -> float:
        """The least float64 at least the root."""
        value = self.down()
        return value if Fraction(value) ** 2 == self.square else math.nextafter(value, math.inf)

    def __float__(self) -> float:
        """The float64 nearest the root (ties, which need the root on a half-ulp, to even)."""
        low, high = self.down(), self.up()
        middle = (Fraction(low) + Fraction(high)) / 2
        if self.square == middle * middle:
            return float(middle)  # Fraction rounds a tie to even
        return low if self.square < middle * middle else high
