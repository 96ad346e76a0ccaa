"""Hard voting (random forests), a construct the IR does not have yet: answered by SAT only.

A random forest that predicts by *hard voting* gives each tree one vote, for the class its leaf
prefers, and predicts the class with the most votes. Whether a class wins is a statement about
counts of trees, so it is a cardinality constraint over one vote literal per tree; no sum of leaf
values expresses it.

Proposal for ``veritas_dsl/ir/query.py`` (a constraint, construct name ``"hard_vote"``)::

    @dataclass(frozen=True)
    class VoteMargin:
        '''votes(model, instance)[label] - votes(model, instance)[other] >= k.

        A tree votes for the first output of largest leaf value; in a one-output model it votes
        1 when its leaf value is above ``threshold`` (default: the model's class threshold
        divided by its number of trees, which is how a forest's probability leaves are scaled),
        else 0.'''

        model: str
        instance: str
        label: int
        other: int
        k: int = 1
        threshold: float | None = None

It is closed under negation (``not VoteMargin(a, b, k)`` is ``VoteMargin(b, a, 1 - k)``), so
``negate`` extends to it and a property ``class_vote(rf, x) == c`` proves like any other;
:func:`wins` spells "class ``c`` wins" as a conjunction of margins (ties go to the first class, as
``argmax`` breaks them). Until the IR has it, :class:`VoteMargin` lives here and the SAT engine
takes vote constraints beside the query: ``SatEngine().solve(query, limits, votes=...)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from veritas_dsl.ir.query import AnyOf, Query
from veritas_dsl.model.ensemble import Ensemble


@dataclass(frozen=True)
class VoteMargin:
    """``votes[label] - votes[other] >= k`` for ``model`` on ``instance`` (see the module)."""

    model: str
    instance: str
    label: int
    other: int
    k: int = 1
    threshold: float | None = None


def leaf_votes(model: Ensemble, threshold: float | None = None) -> np.ndarray:
    """The label each node votes for (meaningful at leaves), int64, shape (n_nodes,)."""
    if model.n_outputs > 1:
        return np.argmax(model.value, axis=1)
    if threshold is None:
        threshold = model.class_threshold / model.n_trees
    return (model.value[:, 0] > threshold).astype(np.int64)


def vote_counts(model: Ensemble, X: np.ndarray, threshold: float | None = None) -> np.ndarray:
    """Votes per label on each row of ``X``, shape (n, max(2, n_outputs))."""
    labels = leaf_votes(model, threshold)[model.leaves(X)]
    n_labels = max(2, model.n_outputs)
    return np.stack([(labels == c).sum(axis=1) for c in range(n_labels)], axis=1)


def vote_holds(c: VoteMargin, query: Query, inputs) -> bool:
    """Whether ``c`` holds on concrete inputs (float32 vectors per instance)."""
    point = np.asarray(inputs[c.instance], dtype=np.float32)[None, :]
    counts = vote_counts(query.models[c.model], point, c.threshold)[0]
    return int(counts[c.label]) - int(counts[c.other]) >= c.k


def wins(model: str, instance: str, label: int, n_labels: int) -> tuple[VoteMargin, ...]:
    """Class ``label`` wins the vote: strictly more votes than every class before it, at least
    as many as every class after it (``argmax`` picks the first of equal counts)."""
    return tuple(
        VoteMargin(model, instance, label, other, 1 if other < label else 0)
        for other in range(n_labels)
        if other != label
    )


def negate_votes(conjunction: tuple[VoteMargin, ...]) -> AnyOf:
    """``not (m1 and m2 and ...)`` as a disjunction of margins."""
    return AnyOf(
        tuple(
            (VoteMargin(m.model, m.instance, m.other, m.label, 1 - m.k, m.threshold),)
            for m in conjunction
        )
    )
