"""Array helpers for the kernels, written as loops: numpy's own versions compile slowly in
Numba (generic comparisons, shape checks that format error messages)."""

from __future__ import annotations

import numpy as np

from veritas_dsl.jit import inlined, internal


@inlined
def lower_bound(a, lo, hi, x):
    """The first index in ``lo:hi`` where sorted ``a`` is ``>= x`` (``hi`` when none), as
    ``np.searchsorted``, whose generic comparisons take seconds to compile."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@inlined
def copy_into(dst, src):
    """``dst[:len(src)] = src``. A slice assignment would check shapes and format its error
    message, which makes Numba compile string formatting into every kernel that has one."""
    for i in range(src.shape[0]):
        dst[i] = src[i]


@internal
def grow(a, cap):
    """A copy of ``a`` with room for ``cap`` items."""
    b = np.empty(cap, dtype=a.dtype)
    copy_into(b, a)
    return b
