"""The order encoding of the float32 input grid: cut points per feature, cells, and their bounds.

Every input constraint the SAT engine expresses, and every split of every tree, is a statement
``x >= c`` about a float32 value. The cut points of a feature cut its domain into *cells*: closed
float32 intervals on which every such statement is constant. One literal per cut point and
variable, ``x >= c``, encodes in which cell a variable lies (the order encoding). Each feature has
one grid, shared by every instance, so that two variables of the same feature can be compared
cell by cell (ties, change counts and distances between instances).

Integer and bool features have integral cells: their cut points are integers, and a statement
``x >= 0.3`` about an integer becomes ``x >= 1``.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from fractions import Fraction

from veritas_dsl.float32 import ceil32, floor32, next_down, next_up
from veritas_dsl.ir.query import DomainKind, Feature

#: Above this magnitude every float32 is an integer, so the next integer is the next float32.
_EVERY_FLOAT32_INTEGRAL = 2.0**24
#: The largest finite float32; integer domains stop here (infinity is not an integer).
_MAX32 = float.fromhex("0x1.fffffep127")


def _ceil_int(value: float) -> float:
    """The smallest integral float32 not below ``value`` (infinite values stay infinite)."""
    if not math.isfinite(value):
        return value
    return ceil32(float(math.ceil(value)))


def _floor_int(value: float) -> float:
    """The largest integral float32 not above ``value``."""
    if not math.isfinite(value):
        return value
    return floor32(float(math.floor(value)))


def successor(value: float, integral: bool) -> float:
    """The smallest value of the domain kind above ``value`` (a float32, integral if asked)."""
    if integral and abs(value) < _EVERY_FLOAT32_INTEGRAL:
        return value + 1.0
    return next_up(value)


def predecessor(value: float, integral: bool) -> float:
    """The largest value of the domain kind below ``value``."""
    if integral and abs(value) < _EVERY_FLOAT32_INTEGRAL:
        return value - 1.0
    return next_down(value)


@dataclass(frozen=True)
class Domain:
    """The closed float32 range ``[lo, hi]`` of a feature, integral for int and bool features.

    ``lo > hi`` when no value is allowed.
    """

    lo: float
    hi: float
    integral: bool

    @staticmethod
    def of(feature: Feature) -> Domain:
        lo, hi = feature.lo, feature.hi
        if feature.kind is DomainKind.BOOL:
            lo, hi = max(lo, 0.0), min(hi, 1.0)
        if feature.kind is DomainKind.REAL:
            return Domain(ceil32(lo) + 0.0, floor32(hi) + 0.0, False)
        lo, hi = max(_ceil_int(lo), -_MAX32), min(_floor_int(hi), _MAX32)
        return Domain(lo + 0.0, hi + 0.0, True)

    @property
    def empty(self) -> bool:
        return self.lo > self.hi

    def ge(self, value: float) -> float | bool:
        """``x >= value`` over the domain: a cut point ``c`` (meaning ``x >= c``), or a constant.

        ``value`` is any float64; float32 inputs satisfy ``x >= value`` exactly when they
        satisfy ``x >= ceil32(value)``, and integers when ``x >= ceil(value)``.
        """
        cut = _ceil_int(value) if self.integral else ceil32(value)
        if cut <= self.lo:
            return True
        if cut > self.hi:
            return False
        return cut + 0.0  # one zero: -0.0 and 0.0 are the same cut

    def le(self, value: float) -> float | bool:
        """``x <= value`` as the negation of ``x >= c``: returns ``c``, or the constant value of
        ``x >= c`` (False when ``x <= value`` always holds, True when it never does)."""
        top = _floor_int(value) if self.integral else floor32(value)
        if top >= self.hi:
            return False
        if top < self.lo:
            return True
        return successor(top, self.integral) + 0.0


@dataclass(frozen=True)
class Grid:
    """The cells of one feature: cut points ``c_1 < ... < c_m``, all in ``(lo, hi]``.

    Cell ``j`` (0 to m) holds the values ``x`` with ``x >= c_j`` and ``x < c_(j+1)`` (with
    ``c_0 = lo`` and ``c_(m+1)`` beyond ``hi``): the closed float32 interval :meth:`cell`.
    """

    domain: Domain
    cuts: tuple[float, ...]

    @property
    def n_cells(self) -> int:
        return len(self.cuts) + 1

    def index(self, cut: float) -> int:
        """Position (1 to m) of a cut point; KeyError when it is not one."""
        k = bisect.bisect_left(self.cuts, cut)
        if k == len(self.cuts) or self.cuts[k] != cut:
            raise KeyError(cut)
        return k + 1

    def cell(self, j: int) -> tuple[float, float]:
        """The closed float32 interval ``(low, high)`` of cell ``j``."""
        low = self.domain.lo if j == 0 else self.cuts[j - 1]
        if j == len(self.cuts):
            return low, self.domain.hi
        return low, predecessor(self.cuts[j], self.domain.integral)

    def closest(self, j: int, preferred: float) -> float:
        """The value of cell ``j`` closest to ``preferred`` (an integer for integral cells)."""
        low, high = self.cell(j)
        if self.domain.integral and not float(preferred).is_integer():
            candidates = (math.floor(preferred), math.ceil(preferred))
            clamped = (min(max(float(c), low), high) for c in candidates)
            return min(clamped, key=lambda c: abs(c - preferred))
        return min(max(preferred, low), high)

    def distance(self, j: int, point: float) -> Fraction:
        """The exact distance from ``point`` to the closest value of cell ``j``."""
        return abs(Fraction(self.closest(j, point)) - Fraction(point))


class GridBuilder:
    """Collects the cut points of one feature before the literals exist."""

    def __init__(self, domain: Domain) -> None:
        self.domain = domain
        self.cuts: set[float] = set()

    def ge(self, value: float) -> None:
        cut = self.domain.ge(value)
        if not isinstance(cut, bool):
            self.cuts.add(cut)

    def le(self, value: float) -> None:
        cut = self.domain.le(value)
        if not isinstance(cut, bool):
            self.cuts.add(cut)

    def build(self) -> Grid:
        return Grid(self.domain, tuple(sorted(self.cuts)))
