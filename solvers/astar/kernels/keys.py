"""The priority of a state, and what its term bounds say about the output constraints."""

from __future__ import annotations

import numpy as np

from veritas_dsl.jit import inlined, internal
from veritas_dsl.solvers.astar.kernels.exact import encode_distance
from veritas_dsl.solvers.astar.kernels.layout import (
    MODE_FIND,
    MODE_MAXIMIZE,
    TERM_CONSTRAINT,
    TERM_OBJECTIVE,
)


@inlined
def terms_slack(u, term_thr, term_cons):
    """Least ``u[k] - thr[k]`` over constraint terms (0 when there are none)."""
    slack = np.int64(2**62)
    found = False
    for k in range(u.shape[0]):
        if term_cons[k] == TERM_CONSTRAINT:
            found = True
            d = u[k] - term_thr[k]
            if d < slack:
                slack = d
    return slack if found else np.int64(0)


@internal
def terms_verdict(u, term_thr, term_sure, term_cons):
    """-1 when some constraint term surely fails (``u[k] < thr[k]``), 1 when all surely hold
    (``u[k] >= sure[k]``), 0 when the model's own float64 sum could go either way (the caller
    checks those on the point)."""
    verdict = 1
    for k in range(u.shape[0]):
        if term_cons[k] == TERM_CONSTRAINT:
            if u[k] < term_thr[k]:
                return -1
            if u[k] < term_sure[k]:
                verdict = 0
    return verdict


@internal
def state_key(mode, u, goal_cost, depth, term_thr, term_cons):
    """Priority ``(key, tie)`` of a state: larger is better. Maximising, the least bound of
    the objectives (the terms that are no constraint; one, or those of a min): a bound of
    their least value, exact once the state is complete."""
    if mode == MODE_MAXIMIZE:
        least = u[0]
        for k in range(1, u.shape[0]):
            if term_cons[k] == TERM_OBJECTIVE and u[k] < least:
                least = u[k]
        return least, np.int64(depth)
    if mode == MODE_FIND:
        return terms_slack(u, term_thr, term_cons), np.int64(depth)
    return -encode_distance(goal_cost), terms_slack(u, term_thr, term_cons)
