"""Exact arithmetic for the kernels: error-free sums and products, CPython's ``fsum`` on a
buffer of partials, and distances encoded as int64 keys that order like them.

Distances and linear constraints are decided exactly with these, so no state is kept or cut on a
rounding. No fastmath anywhere: these transformations rely on IEEE rounding.
"""

from __future__ import annotations

import math

import numpy as np

from veritas_dsl.jit import inlined, internal, kernel

_SPLITTER = 134217729.0  # 2**27 + 1, Veltkamp's splitter for float64


@inlined
def two_sum(a, b):
    """``a + b == s + e`` exactly (Knuth), for finite float64 ``a``, ``b`` without overflow."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e


@inlined
def _split(a):
    c = _SPLITTER * a
    hi = c - (c - a)
    return hi, a - hi


@inlined
def two_prod(a, b):
    """``a * b == p + e`` exactly (Dekker), barring overflow and underflow."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


@internal
def msum_add(partials, n, x):
    """Add ``x`` to the exact sum held in ``partials[:n]`` (non-overlapping, increasing); return
    the new count. This is the inner loop of CPython's ``math.fsum``."""
    i = 0
    for j in range(n):
        y = partials[j]
        if abs(x) < abs(y):
            x, y = y, x
        hi = x + y
        lo = y - (hi - x)
        if lo != 0.0:
            partials[i] = lo
            i += 1
        x = hi
    partials[i] = x
    return i + 1


@internal
def msum_round(partials, n):
    """The exact sum of ``partials[:n]`` correctly rounded to float64 (CPython's ``fsum`` end)."""
    if n == 0:
        return 0.0
    n -= 1
    hi = partials[n]
    lo = 0.0
    while n > 0:
        x = hi
        n -= 1
        y = partials[n]
        hi = x + y
        yr = hi - x
        lo = y - yr
        if lo != 0.0:
            break
    if n > 0 and ((lo < 0.0 and partials[n - 1] < 0.0) or (lo > 0.0 and partials[n - 1] > 0.0)):
        y = lo * 2.0
        x = hi + y
        yr = x - hi
        if y == yr:
            hi = x
    return hi


@kernel
def encode_distance(d):
    """A non-negative int64 that orders like the non-negative float64 ``d`` (0 for 0): the IEEE
    layout, biased exponent then the 52 fraction bits. Distances here are never subnormal."""
    if d <= 0.0:
        return np.int64(0)
    m, e = math.frexp(d)  # d = m * 2**e, 0.5 <= m < 1
    return np.int64(e + 1022) * np.int64(2**52) + np.int64((2.0 * m - 1.0) * 4503599627370496.0)


@kernel
def decode_distance(key):
    """Inverse of :func:`encode_distance`."""
    if key <= 0:
        return 0.0
    e = key // np.int64(2**52) - 1022
    m = (float(key % np.int64(2**52)) / 4503599627370496.0 + 1.0) / 2.0
    return math.ldexp(m, int(e))  # plain Python (NUMBA_DISABLE_JIT) refuses an np.int64
