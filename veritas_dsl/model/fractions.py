"""Leaf values as exact fractions, added exactly and rounded once to float64.

A DaRE forest outputs the mean over its trees of each leaf's fraction of positives, ``p / c``
per tree over ``n`` trees. As float64 leaf values ``p / (c n)`` added tree by tree, the sum errs
in its last bits: 100 trees that all say 1/2 gave 0.5000000000000003, and 10 of them
0.49999999999999994, so the class at a tie depended on the number of trees. An
:class:`~veritas_dsl.model.ensemble.Ensemble` may instead carry its leaf values as fractions of
integers (:class:`LeafFractions`); its output is then their exact sum, rounded once to the
nearest float64 (:meth:`LeafFractions.sums`). A tie is then 0.5, a pure forest 1.0, and the
output is a monotone function of the exact sum.

How, without a rational sum per row: each leaf's fraction ``a / b`` is written once per model as
its integer part and ``DIGITS`` binary digits, ``q = floor(a / b * 2**DIGITS)``, in int64 limbs,
and whether digits remain. A row's integer sum ``S`` of its leaves' ``q`` (exact, vectorised)
and its count ``r`` of leaves with digits remaining bound the exact sum ``X``:
``S <= X * 2**DIGITS < S + r`` (``X * 2**DIGITS == S`` when ``r == 0``). Rounding is monotone,
so when ``S / 2**DIGITS`` and ``(S + r) / 2**DIGITS`` round to the same float64 (Python's
integer division is correctly rounded), ``X`` rounds to it too. Otherwise ``X`` lies within
``r * 2**-DIGITS`` of a point halfway between two float64 values (or is tiny), and that row is
added again in exact rationals.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

#: Binary digits kept of each leaf's fraction: a row is added in rationals only when its sum
#: lies within ``trees * 2**-108`` of a rounding boundary.
DIGITS = 108
_STEP = 9  # digits per step of the long division: a remainder (< 2**53) times 2**9 fits int64
_LIMB = 36  # digits per int64 limb: a sum of 2**27 of them fits
#: Largest numerator and denominator: as float64 they are exact, so ``a / b`` in numpy is the
#: fraction rounded once.
LIMIT = 2**53


@dataclass(frozen=True, eq=False)
class LeafFractions:
    """Each node's value as ``numerator / denominator`` (int64, shape ``(n_nodes, n_outputs)``,
    denominators >= 1, both at most ``LIMIT`` in magnitude; splits are ``0 / 1``)."""

    numerator: np.ndarray
    denominator: np.ndarray

    def __post_init__(self) -> None:
        for name in ("numerator", "denominator"):
            array = np.array(getattr(self, name), dtype=np.int64)
            if array.ndim == 1:
                array = array[:, None]
            array.setflags(write=False)
            object.__setattr__(self, name, array)

    def problem(self) -> str | None:
        """What makes these fractions unusable, or None."""
        if self.numerator.shape != self.denominator.shape or self.numerator.ndim != 2:
            return "numerators and denominators are not two arrays of one shape (nodes, outputs)"
        if np.any(self.denominator < 1):
            return "a denominator is below 1"
        if np.any(self.denominator > LIMIT) or np.any(np.abs(self.numerator) > LIMIT):
            return "a numerator or denominator is beyond 2**53"
        if np.abs(self.numerator // self.denominator).astype(np.float64).sum() >= 2.0**62:
            return "the fractions' integer parts could overflow a sum"
        return None

    def dyadic(self) -> bool:
        """Whether every fraction is its float64 value (a power of two over it, once reduced)."""
        b = self.denominator // np.gcd(self.numerator, self.denominator)
        return bool(np.all(b & (b - 1) == 0))

    def values(self) -> np.ndarray:
        """Each fraction rounded once to float64 (both terms are exact as float64)."""
        return self.numerator / self.denominator

    def slice(self, nodes) -> LeafFractions:
        return LeafFractions(self.numerator[nodes], self.denominator[nodes])

    @cached_property
    def _digits(self) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
        """Integer parts, limbs of ``DIGITS`` binary digits (most significant first), and
        whether digits remain, per node and output."""
        a, b = self.numerator, self.denominator
        whole = a // b  # floor, also for negative numerators
        rest = a - whole * b  # in [0, b)
        limbs = []
        for _ in range(DIGITS // _LIMB):
            limb = np.zeros_like(rest)
            for _ in range(_LIMB // _STEP):
                rest = rest << _STEP
                digit = rest // b
                rest = rest - digit * b
                limb = (limb << _STEP) | digit
            limbs.append(limb)
        return whole, limbs, rest != 0

    def sums(self, nodes: np.ndarray) -> np.ndarray:
        """The exact sum of the fractions of ``nodes`` (shape ``(n, n_trees)``, one leaf per tree)
        per row, rounded once to float64: shape ``(n, n_outputs)``."""
        nodes = np.asarray(nodes, dtype=np.int64)
        whole, limbs, inexact = self._digits
        total = whole[nodes].sum(axis=1).astype(object)
        for limb in limbs:
            total = (total << _LIMB) + limb[nodes].sum(axis=1).astype(object)
        remaining = inexact[nodes].sum(axis=1).astype(object)
        scale = 1 << DIGITS
        low = _divide(total, scale)
        high = _divide(total + remaining, scale)
        out = np.asarray(low, dtype=np.float64)
        for i, k in zip(*np.nonzero(low != high), strict=True):
            out[i, k] = self._exact_sum(nodes[i], k)
        return out

    def _exact_sum(self, nodes: np.ndarray, output: int) -> float:
        a = self.numerator[nodes, output].tolist()
        b = self.denominator[nodes, output].tolist()
        common = math.lcm(*b)
        return sum(x * (common // y) for x, y in zip(a, b, strict=True)) / common


def _divide(numerators: np.ndarray, denominator: int) -> np.ndarray:
    """Python integers over ``denominator``, each rounded once (int / int is correctly rounded)."""
    return np.frompyfunc(lambda n: n / denominator, 1, 1)(numerators).astype(np.float64)
