"""The float32 input grid: rounding of bounds and the exact extent of distance balls.

Models see float32 inputs, so every input constraint is, in the end, a set of float32 values.
Distances are exact: the real-number distance between float32 values (float64 arithmetic would
call 1 and -1e-45 one apart). Engines share these helpers so that they agree on these sets to the
last bit.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

_UP = np.float32(np.inf)
_DOWN = np.float32(-np.inf)


def next_up(value: float) -> float:
    """The float32 right after the float32 ``value``."""
    return float(np.nextafter(np.float32(value), _UP))


def next_down(value: float) -> float:
    """The float32 right before the float32 ``value``."""
    return float(np.nextafter(np.float32(value), _DOWN))


def ceil32(value: float) -> float:
    """The smallest float32 not below ``value``."""
    rounded = np.float32(value)
    if float(rounded) < value:
        rounded = np.nextafter(rounded, _UP)
    return float(rounded)


def floor32(value: float) -> float:
    """The largest float32 not above ``value``."""
    rounded = np.float32(value)
    if float(rounded) > value:
        rounded = np.nextafter(rounded, _DOWN)
    return float(rounded)


def as_float32(value: float) -> float:
    """``value`` rounded to the nearest float32, as a Python float."""
    return float(np.float32(value))


def ceil32_exact(value: Fraction) -> float:
    """The smallest float32 not below the exact rational ``value``."""
    rounded = ceil32(float(value))
    if not math.isfinite(rounded):
        return rounded
    if Fraction(rounded) < value:
        return next_up(rounded)
    below = next_down(rounded)
    return below if math.isfinite(below) and Fraction(below) >= value else rounded


def floor32_exact(value: Fraction) -> float:
    """The largest float32 not above the exact rational ``value``."""
    return -ceil32_exact(-value)


def ball_interval(center: float, radius: float) -> tuple[float, float]:
    """The float32 values ``x`` with ``|x - center| <= radius``, in exact arithmetic.

    Returns the closed float32 interval ``(lo, hi)``; ``lo > hi`` when it is empty (a negative
    radius). ``center`` is a float32 value.
    """
    if radius < 0:
        return math.inf, -math.inf
    if math.isinf(radius):
        return -math.inf, math.inf
    c, r = Fraction(center), Fraction(radius)
    return ceil32_exact(c - r), floor32_exact(c + r)
