"""Every reachable combination of leaves, one per tree of every (model, instance) the query uses.

A combination fixes every model output; the inputs reaching it form a box. Combinations whose
box is empty are never produced.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from veritas_dsl.float32 import next_down
from veritas_dsl.ir.evaluate import leaf_votes
from veritas_dsl.ir.query import Prove, Query, VoteMargin, output_terms, vote_labels, walk
from veritas_dsl.model.ensemble import Ensemble
from veritas_dsl.solvers.base import UnsupportedQuery
from veritas_dsl.solvers.oracle.boxes import Space, narrow


@dataclass(frozen=True)
class Leaf:
    """A leaf: its node, the label it votes for, and the box of its path,
    ``(feature, lo, hi)`` closed float32."""

    node: int
    vote: int
    conditions: tuple[tuple[int, float, float], ...]


@dataclass(frozen=True)
class Combination:
    """One leaf per tree: the outputs it fixes (``{(model, instance): (n_outputs,)}``), the
    votes per label (same keys), and its box."""

    margins: dict[tuple[str, str], np.ndarray]
    votes: dict[tuple[str, str], np.ndarray]
    lo: np.ndarray
    hi: np.ndarray


def tree_leaves(model: Ensemble, tree: int) -> list[Leaf]:
    """The leaves of one tree with their path boxes (``x < t`` left means ``x <= next_down(t)``)."""
    leaves = []
    votes = leaf_votes(model)
    stack = [(int(model.roots[tree]), ())]
    while stack:
        node, path = stack.pop()
        f = int(model.feature[node])
        if f < 0:
            leaves.append(Leaf(node, int(votes[node]), _merge(path)))
            continue
        t = float(model.threshold[node])
        stack.append((int(model.right[node]), (*path, (f, t, math.inf))))
        stack.append((int(model.left[node]), (*path, (f, -math.inf, next_down(t)))))
    return leaves


def _merge(path: tuple[tuple[int, float, float], ...]) -> tuple[tuple[int, float, float], ...]:
    bounds: dict[int, tuple[float, float]] = {}
    for f, lo, hi in path:
        old_lo, old_hi = bounds.get(f, (-math.inf, math.inf))
        bounds[f] = (max(old_lo, lo), min(old_hi, hi))
    return tuple((f, lo, hi) for f, (lo, hi) in sorted(bounds.items()))


def used_pairs(query: Query) -> list[tuple[str, str]]:
    """The (model, instance) pairs whose outputs or votes the query reads, in a stable order."""
    pairs = {(atom.model, atom.instance) for term in output_terms(query) for atom in term.atoms}
    conclusion = query.goal.conclusion if isinstance(query.goal, Prove) else ()
    for c in walk(query.constraints + conclusion):
        if isinstance(c, VoteMargin):
            pairs.add((c.model, c.instance))
    return sorted(pairs)


def reachable_counts(query: Query, space: Space, lo: np.ndarray, hi: np.ndarray) -> list[int]:
    """For every tree the query reads, how many of its leaves the box ``lo, hi`` can reach."""
    counts = []
    for model_name, instance in used_pairs(query):
        model = query.models[model_name]
        i = query.instances.index(instance)
        for t in range(model.n_trees):
            reach = 0
            for leaf in tree_leaves(model, t):
                box_lo, box_hi = lo.copy(), hi.copy()
                if all(
                    narrow(box_lo, box_hi, v, a, b, bool(space.integral[v]))
                    for v, a, b in ((int(space.var[i, f]), a, b) for f, a, b in leaf.conditions)
                ):
                    reach += 1
            counts.append(reach)
    return counts


def combinations(
    query: Query,
    space: Space,
    lo: np.ndarray,
    hi: np.ndarray,
    max_combinations: int,
    deadline: float | None = None,
):
    """Yield every :class:`Combination` with a non-empty box, depth first.

    Raises :class:`UnsupportedQuery` when more than ``max_combinations`` would be produced and
    :class:`TimeoutError` after ``deadline`` (a ``time.monotonic`` value).
    """
    levels = []  # (pair, first tree, leaves with conditions as variables)
    for model_name, instance in used_pairs(query):
        model = query.models[model_name]
        i = query.instances.index(instance)
        for t in range(model.n_trees):
            leaves = [
                (
                    leaf.node,
                    np.eye(vote_labels(model), dtype=np.int64)[leaf.vote],
                    tuple((int(space.var[i, f]), a, b) for f, a, b in leaf.conditions),
                )
                for leaf in tree_leaves(model, t)
            ]
            levels.append(((model_name, instance), t == 0, leaves))

    produced = visited = 0

    def descend(level: int, lo: np.ndarray, hi: np.ndarray, reached: dict, votes: dict):
        nonlocal produced, visited
        visited += 1  # the clock is read per visit: most branches can die before a leaf
        if deadline is not None and visited % 256 == 0 and time.monotonic() > deadline:
            raise TimeoutError
        if level == len(levels):
            produced += 1
            if produced > max_combinations:
                raise UnsupportedQuery(
                    f"query {query.name} has more than {max_combinations} reachable leaf "
                    "combinations; the brute-force oracle answers tiny ensembles only"
                )
            # The outputs of the leaves reached, by the model's own rule (Ensemble.outputs_at).
            margins = {
                pair: query.models[pair[0]].outputs_at(np.array([nodes]))[0]
                for pair, nodes in reached.items()
            }
            yield Combination(margins, dict(votes), lo, hi)
            return
        pair, first, leaves = levels[level]
        for node, vote, conditions in leaves:
            new_lo, new_hi = lo.copy(), hi.copy()
            if all(
                narrow(new_lo, new_hi, v, a, b, bool(space.integral[v])) for v, a, b in conditions
            ):
                nodes = (node,) if first else (*reached[pair], node)
                counted = vote if first else votes[pair] + vote
                yield from descend(
                    level + 1, new_lo, new_hi, {**reached, pair: nodes}, {**votes, pair: counted}
                )

    yield from descend(0, lo, hi, {}, {})
