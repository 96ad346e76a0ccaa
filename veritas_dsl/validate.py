"""Witness validation on the original library models.

A witness an engine reports must reproduce: on every model, the library's own prediction (XGBoost,
scikit-learn or LightGBM) must match our Ensemble's, and the query's constraints (and, for a
counterexample, the negated conclusion) must hold with the library's outputs. Anything else is a
bug, never a result, so it raises.
"""

from __future__ import annotations

import numpy as np

from veritas_dsl.errors import SoundnessError
from veritas_dsl.ir.constructs import constructs
from veritas_dsl.ir.evaluate import (
    as_point,
    distance,
    domain_violations,
    goal_value,
    holds,
    model_outputs,
    model_votes,
    reference_point,
)
from veritas_dsl.ir.query import MaximizeMin, MinimizeDistance, MinimizeMax, Query
from veritas_dsl.ir.reductions import counterexample_constraints
from veritas_dsl.model.library import margin_close
from veritas_dsl.result import Witness

#: Largest accepted difference between library and Ensemble outputs, relative above magnitude 1.
TOLERANCE = 1e-5


class WitnessMismatch(SoundnessError, AssertionError):
    """A witness does not reproduce on the original model, or breaks the query's constraints."""


def library_outputs(
    query: Query, inputs, theirs: dict[tuple[str, str], np.ndarray] | None = None
) -> dict[tuple[str, str], np.ndarray]:
    """Outputs of every model on every instance from the original library model.

    Models without one (loaded from our own JSON) answer with the Ensemble itself. ``theirs``
    holds the library's outputs at ``inputs`` when they were asked already
    (:func:`library_predictions`).
    """
    outputs = model_outputs(query, inputs)
    for (model_name, instance), ours in outputs.items():
        library = query.models[model_name].library
        if library is None:
            continue
        point = as_point(inputs[instance], query.n_features)[None, :]
        if theirs is None:
            answer = np.asarray(library.predict(point), dtype=np.float64).reshape(-1)
        else:
            answer = theirs[model_name, instance]
        if answer.shape != ours.shape or not margin_close(answer, ours, TOLERANCE).all():
            raise WitnessMismatch(
                f"query {query.name}: on {instance} = {point[0].tolist()}, {library.name} model "
                f"{model_name} predicts {answer.tolist()} but the Ensemble gives {ours.tolist()}"
            )
        outputs[model_name, instance] = answer
    return outputs


def library_predictions(query: Query, points: list[dict]) -> list[dict]:
    """The library's outputs, by (model, instance), at each of ``points`` (inputs by instance,
    as :func:`library_outputs` takes them): one predict per library model for all of them."""
    answers: list[dict] = [{} for _ in points]
    rows = [(i, name) for i in range(len(points)) for name in query.instances]
    if not rows:
        return answers
    X = np.stack([as_point(points[i][name], query.n_features) for i, name in rows])
    for model_name, model in query.models.items():
        if model.library is None:
            continue
        predicted = np.asarray(model.library.predict(X), dtype=np.float64).reshape(len(X), -1)
        for (i, name), answer in zip(rows, predicted, strict=True):
            answers[i][model_name, name] = answer
    return answers


def library_votes(query: Query, inputs) -> dict[tuple[str, str], np.ndarray]:
    """Votes per class of every model on every instance, from the library's own trees where it
    has them (scikit-learn classifier forests); else counted on the Ensemble's leaves, whose
    outputs :func:`library_outputs` checks against the library."""
    votes = model_votes(query, inputs)
    for (model_name, instance), ours in votes.items():
        library = query.models[model_name].library
        point = as_point(inputs[instance], query.n_features)[None, :]
        theirs = None if library is None else library.votes(point, len(ours))
        if theirs is None:
            continue
        if not np.array_equal(theirs[0], ours):
            raise WitnessMismatch(
                f"query {query.name}: on {instance} = {point[0].tolist()}, the trees of "
                f"{library.name} model {model_name} vote {theirs[0].tolist()} but the "
                f"Ensemble's vote {ours.tolist()}"
            )
        votes[model_name, instance] = theirs[0]
    return votes


def validate_witness(query: Query, witness: Witness) -> dict[tuple[str, str], np.ndarray]:
    """Check ``witness`` on the library models; return their outputs, or raise WitnessMismatch."""
    return validate_witnesses(query, [witness])[0]


def validate_witnesses(
    query: Query, witnesses: list[Witness]
) -> list[dict[tuple[str, str], np.ndarray]]:
    """:func:`validate_witness` for each of ``witnesses`` in turn, the library models asked
    once for all of them."""
    points = [
        {name: as_point(w.inputs[name], query.n_features) for name in query.instances}
        for w in witnesses
    ]
    theirs = library_predictions(query, points)
    return [
        _validate(query, w, inputs, answers)
        for w, inputs, answers in zip(witnesses, points, theirs, strict=True)
    ]


def _validate(query: Query, witness: Witness, inputs, theirs) -> dict[tuple[str, str], np.ndarray]:
    problems = domain_violations(query, inputs)
    if problems:
        raise WitnessMismatch(f"query {query.name}: witness leaves the domain: {problems[0]}")
    outputs = library_outputs(query, inputs, theirs)
    votes = library_votes(query, inputs) if "hard_vote" in constructs(query) else None
    for constraint in counterexample_constraints(query):
        if not holds(constraint, inputs, outputs, votes):
            raise WitnessMismatch(f"query {query.name}: witness breaks {constraint}")
    goal = query.goal
    if isinstance(goal, MinimizeDistance) and witness.value is not None:
        center = reference_point(goal.center, inputs)
        measured = distance(goal.norm, inputs[goal.instance], center, goal.weights)
        if witness.value != measured:  # every engine reports the IR's (weighted) distance
            raise WitnessMismatch(
                f"query {query.name}: witness at distance {measured} reported as {witness.value}"
            )
    if isinstance(goal, MaximizeMin | MinimizeMax) and witness.value is not None:
        # the value of the worst model is the one the engine must have reported
        measured = goal_value(goal, outputs)
        if not margin_close(measured, witness.value, TOLERANCE):
            raise WitnessMismatch(
                f"query {query.name}: the worst model's value at the witness is {measured}, "
                f"reported as {witness.value}"
            )
    return outputs
