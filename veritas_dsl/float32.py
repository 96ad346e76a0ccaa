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
    """The float32 right after the float32 ``value`` (an infinity after the largest)."""
    with np.errstate(over="ignore"):
        return float(np.nextafter(np.float32(value), _UP))


def next_down(value: float) -> float:
    """The float32 right before the float32 ``value`` (an infinity before the lowest)."""
    with np.errstate(over="ignore"):
        return float(np.nextafter(np.float32(value), _DOWN))


def ceil32(value: float) -> float:
    """The smallest float32 not below ``value``."""
    rounded = _to_float32(value)
    if float(rounded) < value:
        with np.errstate(over="ignore"):  # above the largest float32: infinity
            rounded = np.nextafter(rounded, _UP)
    return float(rounded)


def floor32(value: float) -> float:
    """The largest float32 not above ``value``."""
    rounded = _to_float32(value)
    if float(rounded) > value:
        with np.errstate(over="ignore"):
            rounded = np.nextafter(rounded, _DOWN)
    return float(rounded)


def ceil32_array(values: np.ndarray) -> np.ndarray:
    """:func:`ceil32` of each value, as float64 (one numpy pass: a query's domains are many)."""
    values = np.asarray(values, dtype=np.float64)
    with np.errstate(over="ignore"):
        rounded = values.astype(np.float32)
        rounded = np.where(rounded.astype(np.float64) < values, np.nextafter(rounded, _UP), rounded)
    return rounded.astype(np.float64)


def floor32_array(values: np.ndarray) -> np.ndarray:
    """:func:`floor32` of each value, as float64."""
    values = np.asarray(values, dtype=np.float64)
    with np.errstate(over="ignore"):
        rounded = values.astype(np.float32)
        down = rounded.astype(np.float64) > values
        rounded = np.where(down, np.nextafter(rounded, _DOWN), rounded)
    return rounded.astype(np.float64)


def as_float32(value: float) -> float:
    """``value`` rounded to the nearest float32, as a Python float."""
    return float(_to_float32(value))


def _to_float32(value: float) -> np.float32:
    """Rounded to the nearest float32; beyond its range that is an infinity, silently."""
    if -_LARGEST <= value <= _LARGEST or math.isinf(value):  # no overflow: no errstate (slow)
        return np.float32(value)
    with np.errstate(over="ignore"):
        return np.float32(value)


#: Up to the largest float32 no value overflows (and numpy warns only on overflow).
_LARGEST = float(np.finfo(np.float32).max)


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


def ball_interval(center: float, radius: float, weight: float = 1.0) -> tuple[float, float]:
    """The float32 values ``x`` with ``weight * |x - center| <= radius``, in exact arithmetic:
    one feature's side of an L-inf ball, weighted (``weight`` positive and finite).

    Returns the closed float32 interval ``(lo, hi)``; ``lo > hi`` when it is empty (a negative
    radius). ``center`` is a float32 value.
    """
    if radius < 0:
        return math.inf, -math.inf
    if math.isinf(radius):
        return -math.inf, math.inf
    c, r = Fraction(center), Fraction(radius) / Fraction(weight)
    return ceil32_exact(c - r), floor32_exact(c + r)


def nearest(target: float, lo: float, hi: float, integral: bool) -> float:
    """The value of the closed interval ``[lo, hi]`` (an integer when ``integral``) nearest to
    the float32 ``target``; of two equally near integers, the lower.

    ``lo`` and ``hi`` are float32 values, integral when ``integral``; so is the answer. Engines
    place witness coordinates with it, so they agree on the point (the lower of a tie is what
    each of them picked before it was shared).
    """
    value = min(max(target, lo), hi)
    if integral and value != math.floor(value):  # only below 2**23: above, float32 is whole
        down, up = float(math.floor(value)), float(math.ceil(value))
        return down if value - down <= up - value else up
    return value


def nearest32_exact(value: Fraction) -> float:
    """The float32 nearest to the rational ``value``, ties to even, as strtof rounds."""
    down, up = floor32_exact(value), ceil32_exact(value)
    if down == up or not (math.isfinite(down) and math.isfinite(up)):
        return down if math.isfinite(down) else up
    below, above = value - Fraction(down), Fraction(up) - value
    if below != above:
        return down if below < above else up
    mantissa = int(np.array(down, dtype=np.float32).view(np.uint32)) & 1
    return up if mantissa else down


def parse_float32(texts: list[str]) -> np.ndarray:
    """Decimal strings to float32, rounded once from the exact decimal value (as strtof does).

    Parsing to float64 first and then rounding to float32 rounds twice, which is wrong when the
    float64 lands exactly halfway between two float32 values; those few are parsed exactly.
    Raises ValueError naming the first text that is not a number.
    """
    wide = np.array([float(text) for text in texts], dtype=np.float64)
    narrow = wide.astype(np.float32)
    finite = np.isfinite(narrow) & np.isfinite(wide)
    lower = np.where(
        narrow.astype(np.float64) > wide, np.nextafter(narrow, np.float32(-np.inf)), narrow
    )
    upper = np.nextafter(lower, np.float32(np.inf))
    halfway = finite & (wide == (lower.astype(np.float64) + upper.astype(np.float64)) / 2)
    for i in np.nonzero(halfway)[0]:
        narrow[i] = nearest32_exact(Fraction(texts[i].strip()))
    return narrow
