"""The meaning of a query on concrete inputs: outputs, distances, and which constraints hold.

This is the reference semantics of the IR. Engines use it to check their witnesses, and the tests
use it to check engines. Inputs are float32; model outputs are added in float64 (as
``Ensemble.eval`` does); distances and linear constraints are exact rational arithmetic on the
inputs, with no tolerance (an ``l2`` distance as the exact root of its exact square).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction

import numpy as np

from veritas_dsl.ir.logic import compare
from veritas_dsl.ir.query import (
    AnyOf,
    AtMostKChanged,
    Ball,
    Constraint,
    DomainKind,
    Interval,
    Linear,
    MinimizeDistance,
    Norm,
    OneHot,
    OutputConstraint,
    OutputTerm,
    Query,
    Reference,
    Row,
    Tie,
    VoteMargin,
    Weights,
    goal_terms,
    maximizes,
    vote_labels,
)
from veritas_dsl.ir.root import Root

Inputs = Mapping[str, np.ndarray]
Margins = Mapping[tuple[str, str], np.ndarray]
#: Votes per label of every (model, instance): int64 arrays of ``vote_labels(model)`` counts.
Votes = Mapping[tuple[str, str], np.ndarray]


def as_point(values: np.ndarray, n_features: int) -> np.ndarray:
    """One input as a float32 vector of ``n_features`` values."""
    point = np.asarray(values, dtype=np.float32).reshape(-1)
    if point.shape != (n_features,):
        raise ValueError(f"an input needs {n_features} values, got {point.shape[0]}")
    return point


def model_outputs(query: Query, inputs: Inputs) -> dict[tuple[str, str], np.ndarray]:
    """Outputs of every model on every instance: ``{(model, instance): float64 (n_outputs,)}``."""
    result = {}
    for model_name, model in query.models.items():
        for instance in query.instances:
            margin = model.eval(as_point(inputs[instance], query.n_features)[None, :])
            result[model_name, instance] = np.asarray(margin, dtype=np.float64).reshape(-1)
    return result


def leaf_votes(model) -> np.ndarray:
    """The label each node votes for (meaningful at leaves; see :class:`VoteMargin`)."""
    if model.n_outputs > 1:
        return np.argmax(model.value, axis=1)
    return (model.value[:, 0] > model.class_threshold / model.n_trees).astype(np.int64)


def vote_counts(model, X: np.ndarray) -> np.ndarray:
    """Votes per label on each row of ``X``: int64, shape ``(n, vote_labels(model))``."""
    labels = leaf_votes(model)[model.leaves(X)]
    return np.stack([(labels == c).sum(axis=1) for c in range(vote_labels(model))], axis=1)


def model_votes(query: Query, inputs: Inputs) -> dict[tuple[str, str], np.ndarray]:
    """Votes of every model on every instance: ``{(model, instance): counts per label}``."""
    return {
        (model_name, instance): vote_counts(
            model, as_point(inputs[instance], query.n_features)[None, :]
        )[0]
        for model_name, model in query.models.items()
        for instance in query.instances
    }


def term_value(term: OutputTerm, margins: Margins) -> float:
    """``constant + sum(coef * model(instance)[output])``, added in atom order."""
    total = float(term.constant)
    for atom in term.atoms:
        total += atom.coef * float(margins[atom.model, atom.instance][atom.output])
    return total


def reference_point(reference: Reference, inputs: Inputs) -> np.ndarray:
    """The float32 point a :class:`Row` or an instance name stands for."""
    if isinstance(reference, Row):
        return np.asarray(reference.values, dtype=np.float32)
    return np.asarray(inputs[reference], dtype=np.float32)


def exact_distance(
    norm: Norm, a: np.ndarray, b: np.ndarray, weights: Weights = None
) -> Fraction | Root:
    """The exact ``linf``, ``l1`` or ``l2`` distance of two float32 points, each feature's gap
    times its weight (:data:`~veritas_dsl.ir.query.Weights`): a rational, or for ``l2`` the
    exact square root of one (:class:`~veritas_dsl.ir.root.Root`, compared exactly)."""
    gaps = [abs(Fraction(float(u)) - Fraction(float(v))) for u, v in zip(a, b, strict=True)]
    if weights is not None:
        gaps = [gap * Fraction(w) for gap, w in zip(gaps, weights, strict=True)]
    if norm == "linf":
        return max(gaps, default=Fraction(0))
    if norm == "l2":
        return Root(sum((gap * gap for gap in gaps), Fraction(0)))
    return sum(gaps, Fraction(0))


def distance(norm: Norm, a: np.ndarray, b: np.ndarray, weights: Weights = None) -> float:
    """The (weighted) ``linf``, ``l1`` or ``l2`` distance of two float32 points, the exact value
    rounded to the nearest float64 (monotone: a bound on exact distances stays one on these)."""
    if norm == "linf" and weights is None and len(a):
        # float64 subtraction rounds each exact gap correctly, and rounding is monotone, so the
        # largest rounded gap is the rounded largest gap: what exact_distance rounds to
        gaps = np.abs(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64))
        if np.all(np.isfinite(gaps)):
            return float(gaps.max())
    return float(exact_distance(norm, a, b, weights))


def changed_units(c: AtMostKChanged, inputs: Inputs) -> int:
    """How many units of ``c`` differ from its reference: a unit counts once when any of its
    members differs (-0.0 equals 0.0, as in the models' comparisons)."""
    point = np.asarray(inputs[c.instance], dtype=np.float32)
    differs = point != reference_point(c.reference, inputs)
    return sum(bool(differs[list(unit)].any()) for unit in c.units)


def holds(
    constraint: Constraint, inputs: Inputs, margins: Margins, votes: Votes | None = None
) -> bool:
    """Whether ``constraint`` holds on concrete inputs (``margins`` from :func:`model_outputs`,
    ``votes``, needed by vote constraints only, from :func:`model_votes`)."""
    c = constraint
    if isinstance(c, Interval):
        return bool(c.lo <= float(inputs[c.instance][c.feature]) <= c.hi)
    if isinstance(c, Tie):
        return bool(inputs[c.first][c.feature] == inputs[c.second][c.feature])
    if isinstance(c, OneHot):
        return sum(float(inputs[c.instance][f]) for f in c.features) == 1.0
    if isinstance(c, AtMostKChanged):
        return changed_units(c, inputs) <= c.k
    if isinstance(c, Ball):
        if math.isinf(c.radius):
            return c.radius > 0
        gap = exact_distance(
            c.norm, inputs[c.instance], reference_point(c.center, inputs), c.weights
        )
        return gap <= Fraction(c.radius)
    if isinstance(c, Linear):
        total = sum(
            (Fraction(t.coef) * Fraction(float(inputs[t.instance][t.feature])) for t in c.terms),
            Fraction(0),
        )
        return compare(total, c.op, Fraction(c.rhs))
    if isinstance(c, OutputConstraint):
        return compare(term_value(c.term, margins), c.op, c.rhs)
    if isinstance(c, VoteMargin):
        if votes is None:
            raise TypeError("a vote constraint needs the trees' votes (model_votes)")
        counts = votes[c.model, c.instance]
        return int(counts[c.label]) - int(counts[c.other]) >= c.k
    if isinstance(c, AnyOf):
        return any(all(holds(a, inputs, margins, votes) for a in alt) for alt in c.alternatives)
    raise TypeError(f"unknown constraint {c!r}")


def domain_violations(query: Query, inputs: Inputs) -> list[str]:
    """Features whose value lies outside their range or kind, as messages."""
    problems = []
    for instance in query.instances:
        point = inputs[instance]
        for f, feature in enumerate(query.features):
            v = float(point[f])
            if not feature.lo <= v <= feature.hi:
                problems.append(
                    f"{instance}.{feature.name} = {v} outside [{feature.lo}, {feature.hi}]"
                )
            elif feature.kind is DomainKind.INT and v != round(v):
                problems.append(f"{instance}.{feature.name} = {v} is not an integer")
            elif feature.kind is DomainKind.BOOL and v not in (0.0, 1.0):
                problems.append(f"{instance}.{feature.name} = {v} is not 0 or 1")
    return problems


def goal_value(goal, margins: Margins) -> float:
    """The value of an output goal (maximise or minimise a term, or the least or largest of
    several) at the model outputs ``margins``: each term by :func:`term_value`, then their
    least (a maximisation of the worst, :class:`MaximizeMin`) or largest (``MinimizeMax``)."""
    values = [term_value(term, margins) for term in goal_terms(goal)]
    return min(values) if maximizes(goal) else max(values)


def objective_value(query: Query, inputs: Inputs, margins: Margins) -> float | None:
    """The goal's objective at these inputs, or None for find and prove."""
    goal = query.goal
    if goal_terms(goal):
        return goal_value(goal, margins)
    if isinstance(goal, MinimizeDistance):
        center = reference_point(goal.center, inputs)
        return distance(goal.norm, inputs[goal.instance], center, goal.weights)
    return None
