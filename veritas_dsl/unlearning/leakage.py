"""What comparing a forest before and after a deletion reveals about the deleted rows.

Two facts, kept apart (``docs/unlearning-leakage.md``, "leakage"):

- the **anonymity set**: the training rows whose deletion is consistent with the change, those
  an observer of both models cannot rule out (:mod:`.dare.consistency`, by trial
  deletions on copies; no engine). It always holds the deleted rows;
- the **footprint** ``after(x) - before(x)``: both extremes, each with bounds from an engine
  (proven, or what it had at its limit), the best input found, the box of leaves around it where
  the footprint takes the same value, and which training rows (deleted ones among them) lie in
  that box. The box says where the models' answers moved, not where a deleted row lies.

It takes forests, not ensembles: both facts are about training rows, which only the forest holds.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from veritas_dsl.diagnostics import Span
from veritas_dsl.errors import UserError
from veritas_dsl.ir.bounds import term_extreme
from veritas_dsl.ir.lowered import Lowered, Origin
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
from veritas_dsl.model.ensemble import Ensemble, as_inputs
from veritas_dsl.result import Result, Termination
from veritas_dsl.run import solve
from veritas_dsl.solvers import registry
from veritas_dsl.solvers.base import ALONE, Limits
from veritas_dsl.solvers.solve import SHARED, check
from veritas_dsl.unlearning.dare import DareForest, classes
from veritas_dsl.unlearning.dare.consistency import consistent_rows

#: The time limit of the whole report (trial deletions and both optimisations), unless told.
DEFAULT_TIMEOUT_S = 60.0

#: The engine of the two optimisations, unless told: A*'s bounds close faster on forests where
#: a deletion changed many trees (``docs/unlearning-leakage.md``, "leakage", measured).
DEFAULT_ENGINE = "astar"


class LeakageError(UserError):
    """The two forests cannot be compared, or the engine failed."""


@dataclass(frozen=True)
class Extreme:
    """One extreme (the minimum or the maximum) of the footprint ``after(x) - before(x)``.

    Attributes
    ----------
    lower, upper : float
        Bounds on the extreme: ``lower <= extreme <= upper``, equal when proven.
    termination : str
        Why the engine stopped (``"optimal"``: proven; ``"time_limit"``, ...: the bounds it had).
    point : tuple of float, or None
        The best input the engine found (None if it found none), validated on both forests'
        own ``predict_proba``; ``value`` is the footprint there (the extreme when proven).
    box : tuple of (low, high), or None
        Per feature, ``low <= x < high`` (float32; infinite when unconstrained): the leaves that
        ``point`` reaches in the trees that changed (the others cancel). The footprint takes
        ``value`` on all of it (the extreme may be reached in other boxes too, not listed).
    rows : tuple of int
        Ids of ``before``'s training rows inside ``box`` (the deleted ones included).
    deleted : tuple of int
        The deleted rows among ``rows``.
    """

    lower: float
    upper: float
    termination: str
    point: tuple[float, ...] | None = None
    value: float | None = None
    box: tuple[tuple[float, float], ...] | None = None
    rows: tuple[int, ...] = ()
    deleted: tuple[int, ...] = ()

    @property
    def proven(self) -> bool:
        return self.termination == Termination.OPTIMAL.value

    def to_dict(self) -> dict:
        def end(v: float) -> float | None:
            return None if math.isinf(v) else v

        return {
            "lower": end(self.lower),
            "upper": end(self.upper),
            "proven": self.proven,
            "termination": self.termination,
            "point": None if self.point is None else list(self.point),
            "value": self.value,
            "box": None if self.box is None else [[end(lo), end(hi)] for lo, hi in self.box],
            "rows": list(self.rows),
            "rows_size": len(self.rows),
            "deleted": list(self.deleted),
        }


@dataclass(frozen=True)
class Leakage:
    """What comparing ``before`` and ``after`` reveals.

    Attributes
    ----------
    deleted : tuple of int
        Ids ``before`` holds and ``after`` no longer does.
    anonymity : tuple of int
        ``before``'s rows found consistent with the change: each has a deletion of
        ``len(deleted)`` rows, itself among them, that gives ``after`` from ``before`` (with the
        random state ``before`` records). Always holds ``deleted`` (when ``reproduced``).
    anonymity_exact : bool
        ``anonymity`` is every consistent row (one row deleted, every row tried); otherwise it
        is a subset of them: rows outside it are not ruled out.
    reproduced : bool
        Deleting ``deleted`` from ``before`` gives ``after``. When not (another random state,
        rows added), nothing is known of the set and ``anonymity`` is empty.
    tried, candidates : int
        Remaining rows (the deleted aside) tried before the time limit, of all of them.
    minimum, maximum : Extreme
        The footprint's extremes over the inputs asked (every input by default).
    changed_trees : int
        Trees of the two forests that do not cancel: those a deletion changed, on both sides.
    engine : str
    features : tuple of str
        The features' names, in the order of every box and point.
    """

    deleted: tuple[int, ...]
    anonymity: tuple[int, ...]
    anonymity_exact: bool
    reproduced: bool
    tried: int
    candidates: int
    minimum: Extreme
    maximum: Extreme
    changed_trees: int
    engine: str
    features: tuple[str, ...] = ()

    @property
    def unchanged(self) -> bool:
        """No tree changed: the two models are one, and comparing them shows nothing."""
        return self.changed_trees == 0

    @property
    def identified(self) -> bool:
        """The change tells exactly which rows were deleted: no other row is consistent."""
        return self.anonymity_exact and set(self.anonymity) == set(self.deleted)

    def to_dict(self) -> dict:
        """A JSON-ready dict (infinite box ends as ``null``)."""
        return {
            "deleted": list(self.deleted),
            "anonymity": list(self.anonymity),
            "anonymity_size": len(self.anonymity),
            "anonymity_exact": self.anonymity_exact,
            "reproduced": self.reproduced,
            "tried": self.tried,
            "candidates": self.candidates,
            "unchanged": self.unchanged,
            "identified": self.identified,
            "minimum": self.minimum.to_dict(),
            "maximum": self.maximum.to_dict(),
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
    engine: str = DEFAULT_ENGINE,
    timeout_s: float | None = DEFAULT_TIMEOUT_S,
    cancel: bool = True,
    features: tuple[Feature, ...] | None = None,
    groups: tuple[tuple[int, ...], ...] = (),
) -> Leakage:
    """The anonymity set and both extremes of ``after(x) - before(x)`` (see :class:`Leakage`).
    ``after`` is ``before`` after deletions (the same training rows, fewer of them remaining).

    ``timeout_s`` bounds the whole: the trial deletions take at most a third of it, then each
    optimisation half of what is left. At the limit the answer holds what was found: rows
    tried so far, the engines' bounds and best points (``Extreme.proven`` says which).
    ``cancel=False`` hands the engine both whole forests (for comparison: the answer is the
    same). ``features`` (one per feature of the forests, in order) name the features and bound
    the inputs by their domains, and ``groups`` (tuples of feature indices) by one-hot rules;
    default: the forests' names, every input.

    Raises :class:`LeakageError` when the forests are not before and after of one another, or
    the engine fails (an error, not a limit). The optimisations take the run's path
    (:func:`veritas_dsl.run.solve`: witnesses validated, an engine's exception an ``error``
    Result); Ctrl-C ends one with the bounds so far (``interrupted``), and the other does not
    start.
    """
    start = time.monotonic()
    deleted = _deleted(before, after)
    models = before.to_ensemble(), after.to_ensemble()
    names = list(models[0].feature_names)
    if features is not None and [f.name for f in features] != names:
        raise LeakageError(f"features are the forests' {', '.join(names)}, in that order")
    if engine not in registry.ENGINES or not registry.get(engine).available():
        raise LeakageError(f"engine {engine} is not available here")
    found = consistent_rows(before, after, deleted, _at(start, timeout_s, 1 / 3))
    queries = [footprint_query(*models, goal, features, groups) for goal in (Minimize, Maximize)]
    reduced, _ = CancelTrees().apply(queries[0])
    changed = [m for m in reduced.models.values() if not _zero_leaf(m)]
    X, _ = before.training_rows()
    extremes = []
    for share, query in zip((1 / 2, 1.0), queries, strict=True):
        if extremes and extremes[0].termination == Termination.INTERRUPTED.value:
            term = query.goal.term  # Ctrl-C stopped the first: the second does not start
            bounds = term_extreme(query, term, up=False), term_extreme(query, term, up=True)
            extremes.append(Extreme(*bounds, Termination.INTERRUPTED.value))
            continue
        limit = _at(start, timeout_s, share, since=time.monotonic())
        result = solve_query(query, engine, limit, cancel)
        extremes.append(_extreme(query, result, changed, X, before, deleted))
    return Leakage(
        deleted=deleted,
        anonymity=found.rows,
        anonymity_exact=found.exact,
        reproduced=found.reproduced,
        tried=found.tried,
        candidates=found.candidates,
        minimum=extremes[0],
        maximum=extremes[1],
        changed_trees=sum(m.n_trees for m in changed),
        engine=engine,
        features=tuple(f.name for f in queries[0].features),
    )


def _at(start: float, timeout_s: float | None, share: float, since: float | None = None):
    """A deadline (``since`` None) or a time limit in seconds (from ``since``): ``share`` of
    what is left of ``timeout_s`` after ``start``; None without a limit."""
    if timeout_s is None:
        return None
    if since is None:
        return start + share * timeout_s
    return max(1e-3, share * (start + timeout_s - since))


def _extreme(query, result, changed, X, before, deleted) -> Extreme:
    """An :class:`Extreme` of ``result`` (validated), with its box and the rows in it."""
    termination = result.termination.value
    if not result.witnesses:
        return Extreme(result.lower + 0.0, result.upper + 0.0, termination)
    point = as_inputs(result.witnesses[0].inputs["x"], before.n_features)[0]
    box = leaf_box(changed, point, before.n_features)
    lo, hi = np.array([b[0] for b in box]), np.array([b[1] for b in box])
    inside = before.remaining()[np.all((lo <= X) & (hi > X), axis=1)]
    models = query.models
    value = float(models["after"].eval(point[None])[0] - models["before"].eval(point[None])[0])
    return Extreme(
        lower=result.lower + 0.0,  # not -0.0
        upper=result.upper + 0.0,
        termination=termination,
        point=tuple(float(v) for v in point),
        value=value + 0.0,
        box=box,
        rows=tuple(int(i) for i in inside),
        deleted=tuple(int(i) for i in inside if int(i) in deleted),
    )


def _deleted(before: DareForest, after: DareForest) -> tuple[int, ...]:
    """The ids ``before`` holds and ``after`` does not; refuses forests of other rows."""
    if not isinstance(before, DareForest) or not isinstance(after, DareForest):
        raise LeakageError("leakage compares two DareForest objects (before and after deleting)")
    for forest in before, after:
        if forest.multiclass:
            raise LeakageError(str(classes.refuse("leakage")))
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


#: Terminations that are a limit: the Result's bounds and witnesses stand, unproven.
_LIMITS = (
    Termination.TIME_LIMIT,
    Termination.STEP_LIMIT,
    Termination.MEMORY_LIMIT,
    Termination.INTERRUPTED,
)


#: Where a footprint query comes from: no spec wrote it (its reports never show this).
_NOWHERE = Span("<leakage>", 1, 1, 1, 1)


def solve_query(
    query: Query, name: str, timeout_s: float | None, cancel: bool, error=LeakageError
) -> Result:
    """``query`` (a footprint) solved by engine ``name`` on the run's path; an engine that
    stops on neither an answer nor a limit raises ``error``."""
    limits = Limits(timeout_s=timeout_s)
    check(registry.get(name), query, limits)
    lowered = Lowered(query, Origin(query.name, False, _NOWHERE, None, ()), None, ())
    # Without ``cancel``, the whole forests, without the shared reductions: for comparison only.
    result = solve(lowered, name, limits, shared=SHARED if cancel else ALONE)
    if not (result.exact and result.witnesses) and result.termination not in _LIMITS:
        what = "minimum" if isinstance(query.goal, Minimize) else "maximum"
        detail = f": {result.message}" if result.message else ""
        raise error(
            f"engine {name} stopped ({result.termination.value}) on the {what} of the "
            f"footprint{detail}"
        )
    return result


def _zero_leaf(model: Ensemble) -> bool:
    """Whether ``model`` is what :class:`CancelTrees` leaves when every tree cancels."""
    return model.n_trees == 1 and model.n_nodes == 1 and not model.value.any()
