"""The probability scale of a binary model whose output is a logistic margin ``z`` (XGBoost
``binary:logistic``, LightGBM ``binary``, scikit-learn gradient boosting with the log loss):
``p = 1 / (1 + exp(-z))``, with ``z`` the model's output as every engine decides it (a float64,
docs/semantics.md "Outputs"). The map is increasing, so ``p > c`` is exactly ``z > logit(c)``:
:func:`margin_bound` turns the probability ``c`` into the float64 margin bound that decides the
same outputs, and :func:`sigmoid` turns a margin back for the reports.
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext


def sigmoid(z: float) -> float:
    """``1 / (1 + exp(-z))`` in float64, without overflow at either end."""
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def margin_bound(c: float, op: str) -> float:
    """The float64 ``b`` such that, for every float64 ``z``, ``z op b`` holds exactly when
    ``sigmoid(z) op c`` does in real numbers (``op`` one of ``<``, ``<=``, ``>``, ``>=``;
    ``0 < c < 1``). ``logit(c)`` is irrational but at ``c = 1/2``, so no float64 equals it: the
    bound is the float64 just below it for ``>`` and ``<=``, just above it for ``>=`` and ``<``
    (rounding to the nearest would put the float64 on the wrong side of it half of the time)."""
    if not 0.0 < c < 1.0:
        raise ValueError(f"a probability strictly between 0 and 1, not {c!r}")
    if c == 0.5:
        return 0.0
    below, above = _around(c)
    return below if op in (">", "<=") else above


def _around(c: float) -> tuple[float, float]:
    """The float64s just below and just above ``logit(c)`` (``c != 1/2``), found from the float
    nearest it by comparing with ``logit(c)`` in 80-digit decimal arithmetic (a float64 and the
    irrational logit are far further apart than that precision's error)."""
    with localcontext() as ctx:
        ctx.prec = 80
        exact = (Decimal(c) / (1 - Decimal(c))).ln()
        below = math.log(c) - math.log1p(-c)
        while Decimal(below) > exact:
            below = math.nextafter(below, -math.inf)
        while Decimal(math.nextafter(below, math.inf)) < exact:
            below = math.nextafter(below, math.inf)
    return below, math.nextafter(below, math.inf)


def probability_bounds(z: float) -> tuple[float, float]:
    """The float64s just below and just above the exact ``1 / (1 + exp(-z))``: bounds on the
    probability of a margin bound ``z``. :func:`sigmoid` rounds twice, to either side, so as an
    upper bound it is below the exact probability about half the time. Decided by ``p *
    exp(-z) < 1 - p`` (the exact probability is above ``p``), whose sides are far apart in 80
    digits even where the probability itself would round to 1 there."""
    if math.isinf(z) or z == 0:
        p = 1.0 if z > 0 else 0.0 if z < 0 else 0.5
        return p, p
    with localcontext() as ctx:
        ctx.prec = 80
        e = (-Decimal(z)).exp()

        def above(p: float) -> bool:  # the exact probability is above p
            return Decimal(p) * e < 1 - Decimal(p)

        p = sigmoid(z)
        while not above(p):
            p = math.nextafter(p, -math.inf)
        while above(math.nextafter(p, math.inf)):
            p = math.nextafter(p, math.inf)
    return p, math.nextafter(p, math.inf)
