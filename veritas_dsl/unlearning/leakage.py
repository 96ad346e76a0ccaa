"""What comparing a forest before and after a deletion reveals about the deleted rows.

An attacker who can evaluate both models computes the footprint ``after(x) - before(x)`` and
looks where it is extreme: for a deleted row that changed no split, every tree changed only at the
leaf that row reached, so the extreme lies exactly in the intersection of those leaves' boxes
(``docs/unlearning.md``, "leakage"). :func:`leakage` answers both extremes exactly, with an engine,
and reports the box of the more extreme one and the training rows inside it, the anonymity set:
the rows the attacker cannot tell apart from the deleted one.

It takes forests, not ensembles: the anonymity set is made of the training rows, which only the
forest holds (an :class:`Ensemble` knows its trees, not its data).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from veritas_dsl.errors import UserError
from veritas_dsl.ir.query import (
    Feature,
    Maximize,
    Minimize,
    OneHot,
    OutputAtom,
    OutputTerm,
    Query,
)
from veritas_dsl.ir.reductions import CancelTrees
from veritas_dsl.model.dare import DareForest
from veritas_dsl.model.ensemble import Ensemble, as_inputs
from veritas_dsl.result import Result
from veritas_dsl.solvers import registry
from veritas_dsl.solvers.base import Limits
from veritas_dsl.solvers.solve import check, solve
from veritas_dsl.validate import validate_witness

#: The time limit of each of the two optimisations, unless told otherwise.
DEFAULT_TIMEOUT_S = 60.0


class LeakageError(UserError):
    """The two forests cannot be compared, or the engine could not prove an extreme."""


@dataclass(frozen=True)
class Leakage:
    """What comparing ``before`` and ``after`` reveals.

    Attributes
    ----------
    minimum, maximum : float
        The exact extremes of ``after(x) - before(x)`` over every input.
    direction : {"min", "max"}
        The extreme of larger magnitude (``"min"`` on a tie), whose box is reported. Deleting a
        positive row lowers the leaves it was in, a negative one raises them.
    box : tuple of (low, high)
        Per feature, ``low <= x < high`` (float32; infinite when unconstrained): the leaves of
        the trees that changed (the others cancel) that the engine's optimal point reaches.
        The footprint equals the extreme on the whole box; the set where it is extreme may hold
        other such boxes, which are not enumerated.
    anonymity : tuple of int
        Ids of ``before``'s training rows inside ``box``, the deleted ones included.
    deleted : tuple of int
        Ids ``before`` holds and ``after`` no longer does.
    point : tuple of float
        The optimal input the engine found (inside ``box``).
    changed_trees : int
        Trees of the two forests that do not cancel: those a deletion changed, on both sides.
    engine : str
    features : tuple of str
        The features' names, in the order of ``box`` and ``point``.
    """

    minimum: float
    maximum: float
    direction: str
    box: tuple[tuple[float, float], ...]
    anonymity: tuple[int, ...]
    deleted: tuple[int, ...]
    point: tuple[float, ...]
    changed_trees: int
    engine: str
    features: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        """A JSON-ready dict (infinite box ends as ``null``)."""

        def end(v: float) -> float | None:
            return None if math.isinf(v) else v

        return {
            "minimum": self.minimum,
            "maximum": self.maximum,
            "direction": self.direction,
            "box": [[end(lo), end(hi)] for lo, hi in self.box],
            "anonymity": list(self.anonymity),
            "anonymity_size": len(self.anonymity),
            "deleted": list(self.deleted),
            "point": list(self.point),
            "changed_trees": self.changed_trees,
            "engine": self.engine,
            "features": list(self.features),
        }


def footprint_query(
    before: Ensemble,
    after: Ensemble,
    goal: type,
    features: tuple[Feature, ...] | None = None,
    groups: tuple[tuple[int, ...], ...] = (),
) -> Query:
    """``goal`` (Maximize or Minimize) of ``after(x) - before(x)`` over the inputs in the
    features' domains (default: every input) and in every one-hot group of ``groups``."""
    diff = OutputTerm((OutputAtom(1.0, "after", "x"), OutputAtom(-1.0, "before", "x")))
    if features is None:
        features = tuple(Feature(name) for name in before.feature_names)
    onehot = tuple(OneHot("x", group) for group in groups)
    models = {"before": before, "after": after}
    return Query("footprint", features, ("x",), models, onehot, goal(diff))


def leaf_box(models, x: np.ndarray, n_features: int) -> tuple[tuple[float, float], ...]:
    """The intersection of the leaf boxes ``x`` reaches in every tree of ``models``."""
    low, high = np.full(n_features, -math.inf), np.full(n_features, math.inf)
    for model in models:
        for root in model.roots:
            node = int(root)
            while model.feature[node] >= 0:
                f, t = int(model.feature[node]), float(model.threshold[node])
                if x[f] < model.threshold[node]:
                    high[f], node = min(high[f], t), int(model.left[node])
                else:
                    low[f], node = max(low[f], t), int(model.right[node])
    return tuple(zip(low.tolist(), high.tolist(), strict=True))


def leakage(
    before: DareForest,
    after: DareForest,
    *,
    engine: str = "milp",
    timeout_s: float | None = DEFAULT_TIMEOUT_S,
    cancel: bool = True,
    features: tuple[Feature, ...] | None = None,
    groups: tuple[tuple[int, ...], ...] = (),
) -> Leakage:
    """The exact extremes of ``after(x) - before(x)``, the box of the larger one and its
    anonymity set (see :class:`Leakage`). ``after`` is ``before`` after deletions (the same
    training rows, fewer of them remaining). ``cancel=False`` hands the engine both whole
    forests (for comparison: the answer is the same).

    ``features`` (one per feature of the forests, in order) name the box's features and bound
    the inputs the extremes are taken over by their domains, and ``groups`` (tuples of feature
    indices) by one-hot rules; default: the forests' names, every input. The box is still a box
    of leaves, where the footprint equals the extreme, whether or not the domains cut it.

    Raises :class:`LeakageError` when the forests are not before and after of one another, or
    the engine stops before proving an extreme (a time limit: give it more, or another engine).
    """
    deleted = _deleted(before, after)
    models = before.to_ensemble(), after.to_ensemble()
    names = list(models[0].feature_names)
    if features is not None and [f.name for f in features] != names:
        raise LeakageError(f"features are the forests' {', '.join(names)}, in that order")
    queries = [footprint_query(*models, goal, features, groups) for goal in (Minimize, Maximize)]
    results = [_solve(query, engine, timeout_s, cancel) for query in queries]
    low, high = results[0].lower, results[1].upper
    direction = "min" if abs(low) >= abs(high) else "max"
    query, result = (queries[0], results[0]) if direction == "min" else (queries[1], results[1])
    point = as_inputs(result.witnesses[0].inputs["x"], before.n_features)[0]
    reduced, _ = CancelTrees().apply(query)
    changed = [m for m in reduced.models.values() if not _zero_leaf(m)]
    box = leaf_box(changed, point, before.n_features)
    X, _ = before.training_rows()
    lo, hi = np.array([b[0] for b in box]), np.array([b[1] for b in box])
    inside = np.all((lo <= X) & (hi > X), axis=1)
    return Leakage(
        minimum=low + 0.0,  # not -0.0
        maximum=high,
        direction=direction,
        box=box,
        anonymity=tuple(int(i) for i in before.remaining()[inside]),
        deleted=deleted,
        point=tuple(float(v) for v in point),
        changed_trees=sum(m.n_trees for m in changed),
        engine=engine,
        features=tuple(f.name for f in query.features),
    )


def _deleted(before: DareForest, after: DareForest) -> tuple[int, ...]:
    """The ids ``before`` holds and ``after`` does not; refuses forests of other rows."""
    if not isinstance(before, DareForest) or not isinstance(after, DareForest):
        raise LeakageError("leakage compares two DareForest objects (before and after deleting)")
    ids_b, ids_a = before.remaining(), after.remaining()
    (X_b, _), (X_a, _) = before.training_rows(), after.training_rows()
    shared = ids_a < before.n_rows  # ids beyond were added after `before`
    at = np.searchsorted(ids_b, ids_a[shared])
    if before.n_features != after.n_features or not (
        np.all(at < len(ids_b))
        and np.array_equal(ids_b[np.minimum(at, len(ids_b) - 1)], ids_a[shared])
        and np.array_equal(X_b[np.minimum(at, len(ids_b) - 1)], X_a[shared])
    ):
        raise LeakageError(
            "after is not before with rows deleted: they hold different training rows"
        )
    return tuple(int(i) for i in np.setdiff1d(ids_b, ids_a))


def _solve(query: Query, name: str, timeout_s: float | None, cancel: bool) -> Result:
    engine = registry.get(name)
    if not engine.available():
        raise LeakageError(f"engine {name} is not available here")
    limits = Limits(timeout_s=timeout_s)
    if cancel:
        result = solve(engine, query, limits)
    else:  # the whole forests, without the shared reductions: for comparison only
        check(engine, query, limits)
        result = engine.solve(query, limits)
    if not result.exact or not result.witnesses:
        raise LeakageError(
            f"engine {name} stopped ({result.termination.value}) before proving the "
            f"{'minimum' if isinstance(query.goal, Minimize) else 'maximum'} of the footprint; "
            "give it more time or try another engine"
        )
    for witness in result.witnesses:
        validate_witness(query, witness)
    return result


def _zero_leaf(model: Ensemble) -> bool:
    """Whether ``model`` is what :class:`CancelTrees` leaves when every tree cancels."""
    return model.n_trees == 1 and model.n_nodes == 1 and not model.value.any()
