"""Bounds on a query's optimum known before any search: what an engine reports when a limit
stops it before it has better ones.

A term's trivial range takes, in every tree of every model it reads, the largest leaf (or the
smallest, for a negative coefficient), ignoring every constraint; so it holds for any inputs.
"""

from __future__ import annotations

import math

import numpy as np

from veritas_dsl.ir.query import (
    Find,
    Maximize,
    MaximizeMin,
    Minimize,
    MinimizeDistance,
    MinimizeMax,
    OutputTerm,
    Prove,
    Query,
)

#: The unit roundoff of float64.
_U = 2.0**-53


def trivial_bounds(query: Query) -> tuple[float | None, float | None]:
    """``(lower, upper)`` on the optimum of ``query``'s goal, valid before any work.

    Maximise: ``(-inf, U)``, with ``U`` the largest value the term can take; minimise:
    ``(L, inf)``; a distance: ``(0, inf)``; find and prove: ``(None, None)``. The other side
    stays infinite: an infeasible maximisation's optimum is ``-inf`` (and a minimisation's
    ``+inf``), and before a search finds an input nothing rules that out.
    """
    goal = query.goal
    if isinstance(goal, Find | Prove):
        return None, None
    if isinstance(goal, Maximize):
        return -math.inf, term_extreme(query, goal.term, up=True)
    if isinstance(goal, Minimize):
        return term_extreme(query, goal.term, up=False), math.inf
    if isinstance(goal, MaximizeMin):  # the least term is at most the least term's top
        return -math.inf, min(term_extreme(query, t, up=True) for t in goal.terms)
    if isinstance(goal, MinimizeMax):
        return max(term_extreme(query, t, up=False) for t in goal.terms), math.inf
    if isinstance(goal, MinimizeDistance):
        return 0.0, math.inf
    raise TypeError(f"unknown goal {goal!r}")


def term_extreme(query: Query, term: OutputTerm, up: bool) -> float:
    """A float64 at least (``up``) or at most the term's value at any inputs.

    The sum of the extreme leaves is computed with ``math.fsum`` and moved outward by a bound on
    every rounding involved, ``u`` times the magnitude per operation, doubled: the products
    and ``fsum`` here, and the float64 sums that compute the term (``Ensemble.eval`` adds tree
    by tree, ``term_value`` atom by atom).
    """
    parts = [float(term.constant)]
    operations = 2 * len(term.atoms) + 4
    for atom in term.atoms:
        model = query.models[atom.model]
        highest = (atom.coef > 0) == up
        extremes = _leaf_extremes(model, atom.output, highest)
        values = np.append(extremes, model.base_score[atom.output])
        with np.errstate(over="ignore"):  # a product beyond float64 bounds nothing
            parts.extend((atom.coef * values.astype(np.float64)).tolist())
        operations += 2 * len(values)
    try:
        value = math.fsum(parts)
    except (OverflowError, ValueError):  # beyond float64, or infinities of both signs
        value = math.inf
    slack = 2 * operations * _U * sum(abs(v) for v in parts)
    bound = value + slack if up else value - slack
    if not math.isfinite(bound):  # beyond float64: only an infinity is sure to bound
        return math.inf if up else -math.inf
    return math.nextafter(bound, math.inf if up else -math.inf)


def _leaf_extremes(model, output: int, highest: bool) -> np.ndarray:
    """Per tree, its largest (``highest``) or smallest leaf value of ``output``."""
    fill = -np.inf if highest else np.inf
    values = np.where(model.feature < 0, model.value[:, output], fill)
    starts = np.asarray(model.tree_offsets[:-1], dtype=np.int64)
    reduce = np.maximum if highest else np.minimum
    return reduce.reduceat(values, starts)
