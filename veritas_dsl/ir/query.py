"""The query IR: what a `.ver` query asks, in solver-neutral terms.

A :class:`Query` has a feature space shared by its models, one or two named input instances, a
conjunction of constraints, and a goal (:mod:`.goals`, whose names this module re-exports). Types
are named after the mathematics, never after an encoding; every engine (A*, MILP, SAT, the
brute-force oracle) reads this and nothing of the syntax.

Semantics, which every engine follows:

* An instance is a vector of float32 values, one per feature; models see it exactly as their
  library does (``x[f] < t`` goes left).
* Distances (each feature's gap times its weight, when weighted: :data:`Weights`) and linear
  constraints are exact (rational arithmetic) on those float32 values; an ``l2`` distance is
  compared through its exact square and reported rounded to the nearest float64.
* A model output ``model(instance)[output]`` is the raw margin (:meth:`Ensemble.eval`).
* ``lower <= optimum <= upper`` for every result; the optimum of an infeasible maximisation is
  ``-inf`` (``+inf`` when minimising).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

import numpy as np

from veritas_dsl.ir.goals import Find as Find
from veritas_dsl.ir.goals import Goal as Goal
from veritas_dsl.ir.goals import Maximize as Maximize
from veritas_dsl.ir.goals import MaximizeMin as MaximizeMin
from veritas_dsl.ir.goals import Minimize as Minimize
from veritas_dsl.ir.goals import MinimizeDistance as MinimizeDistance
from veritas_dsl.ir.goals import MinimizeMax as MinimizeMax
from veritas_dsl.ir.goals import Prove as Prove
from veritas_dsl.ir.goals import goal_terms as goal_terms
from veritas_dsl.ir.goals import infeasible_optimum as infeasible_optimum
from veritas_dsl.ir.goals import maximizes as maximizes
from veritas_dsl.ir.goals import normalise_weights
from veritas_dsl.model.ensemble import Ensemble


class IRError(ValueError):
    """A query refers to something that does not exist; a bug in whoever built it."""


class DomainKind(enum.Enum):
    """The values a feature may take."""

    REAL = "real"
    """Any float32 value in the feature's range."""
    INT = "int"
    """Integral float32 values in the range."""
    BOOL = "bool"
    """0 or 1."""


@dataclass(frozen=True)
class Feature:
    """One input feature: its name, kind and closed range ``[lo, hi]`` (shared by all instances)."""

    name: str
    kind: DomainKind = DomainKind.REAL
    lo: float = -math.inf
    hi: float = math.inf


@dataclass(frozen=True)
class Row:
    """A constant input point (a data row); values are rounded to float32, as models see them."""

    values: tuple[float, ...]
    label: str = field(default="row", compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "values", tuple(float(v) for v in np.float32(self.values)))


#: The center of a distance or the reference of a change count: a constant row, or an instance name.
Reference: TypeAlias = "Row | str"

Norm = Literal["linf", "l1", "l2"]
ComparisonOp = Literal["<", "<=", ">", ">="]
LinearOp = Literal["<=", ">=", "=="]


# -- constraints on inputs --------------------------------------------------------------------


@dataclass(frozen=True)
class Interval:
    """``lo <= instance[feature] <= hi`` (closed; strict bounds are lowered to the next float32)."""

    instance: str
    feature: int
    lo: float = -math.inf
    hi: float = math.inf


@dataclass(frozen=True)
class Tie:
    """``first[feature] == second[feature]``: two instances share a feature's value."""

    first: str
    second: str
    feature: int


@dataclass(frozen=True)
class OneHot:
    """Exactly one of ``features`` (all bool) is 1 in ``instance``."""

    instance: str
    features: tuple[int, ...]


@dataclass(frozen=True)
class AtMostKChanged:
    """At most ``k`` units of ``instance`` differ from ``reference`` (a row or an instance).

    ``units`` partitions the features into what is counted: a unit is one change when any of its
    members differs. A one-hot group is one unit (switching it moves two members, yet a user
    changed one feature); every other feature is a unit of its own (:func:`change_units`).
    """

    instance: str
    reference: Reference
    k: int
    units: tuple[tuple[int, ...], ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "units", tuple(tuple(int(f) for f in u) for u in self.units))


def change_units(n_features: int, groups=()) -> tuple[tuple[int, ...], ...]:
    """The units of a change count: each of ``groups`` (one-hot groups, tuples of feature
    indices) as one unit, every other feature alone, in the order of their first feature."""
    units = [tuple(group) for group in groups]
    grouped = {f for group in units for f in group}
    units += [(f,) for f in range(n_features) if f not in grouped]
    return tuple(sorted(units, key=min))


#: Per-feature weights of a distance: ``None`` (every weight 1) or one positive finite float64 a
#: feature. The weighted distance is ``sum_f w_f * |a_f - b_f|`` (``l1``), ``max_f`` of the
#: same (``linf``) or ``sqrt(sum_f (w_f * |a_f - b_f|)^2)`` (``l2``), exact on the float32 values;
#: the language's ``scale = s`` gives ``w = 1/s``.
Weights: TypeAlias = "tuple[float, ...] | None"


def weight_of(weights: Weights, feature: int) -> float:
    """The weight of ``feature`` (1 when the distance is unweighted)."""
    return 1.0 if weights is None else weights[feature]


@dataclass(frozen=True)
class Ball:
    """``distance(instance, center) <= radius`` under ``norm`` (``linf``, ``l1``, ``l2``),
    weighted by ``weights`` (see :data:`Weights`)."""

    norm: Norm
    instance: str
    center: Reference
    radius: float
    weights: Weights = None

    def __post_init__(self) -> None:
        normalise_weights(self)


@dataclass(frozen=True)
class LinearTerm:
    """``coef * instance[feature]``."""

    coef: float
    instance: str
    feature: int


@dataclass(frozen=True)
class Linear:
    """``sum(terms) op rhs`` over input features, op one of ``<=``, ``>=``, ``==``."""

    terms: tuple[LinearTerm, ...]
    op: LinearOp
    rhs: float


# -- constraints on outputs -------------------------------------------------------------------


@dataclass(frozen=True)
class OutputAtom:
    """``coef * model(instance)[output]``."""

    coef: float
    model: str
    instance: str
    output: int = 0


@dataclass(frozen=True)
class OutputTerm:
    """An affine sum of model outputs: ``constant + sum(atoms)``."""

    atoms: tuple[OutputAtom, ...]
    constant: float = 0.0


@dataclass(frozen=True)
class OutputConstraint:
    """``term op rhs`` with op one of ``<``, ``<=``, ``>``, ``>=``."""

    term: OutputTerm
    op: ComparisonOp
    rhs: float


@dataclass(frozen=True)
class VoteMargin:
    """Hard voting: ``votes(model, instance)[label] - votes(model, instance)[other] >= k``.

    Each tree of ``model`` casts one vote, for the label its leaf prefers: in a model of several
    outputs the first output of largest leaf value; in a one-output model label 1 when the leaf
    value is above the model's class threshold divided by its number of trees (how a forest's
    probability leaves are scaled), else label 0. Closed under negation: ``not VoteMargin(a, b,
    k)`` is ``VoteMargin(b, a, 1 - k)``.
    """

    model: str
    instance: str
    label: int
    other: int
    k: int = 1


def vote_wins(model: str, instance: str, label: int, n_labels: int) -> tuple[VoteMargin, ...]:
    """Label ``label`` wins the vote: strictly more votes than every label before it and at least
    as many as every label after it (``argmax`` picks the first of equal counts)."""
    return tuple(
        VoteMargin(model, instance, label, other, 1 if other < label else 0)
        for other in range(n_labels)
        if other != label
    )


@dataclass(frozen=True)
class AnyOf:
    """At least one alternative holds; each alternative is a conjunction of constraints."""

    alternatives: tuple[tuple[Constraint, ...], ...]


Constraint: TypeAlias = (
    "Interval | Tie | OneHot | AtMostKChanged | Ball | Linear | OutputConstraint | VoteMargin "
    "| AnyOf"
)


@dataclass(frozen=True)
class Query:
    """A solver-neutral verification problem.

    Attributes
    ----------
    name : str
        The query's name, for messages.
    features : tuple of Feature
        The shared feature space; every model is expressed over it (``Ensemble.reindex``).
    instances : tuple of str
        Names of the input instances, e.g. ``("x",)`` or ``("x1", "x2")``.
    models : mapping of str to Ensemble
        The models that output terms refer to by name.
    constraints : tuple of Constraint
        A conjunction.
    goal : Goal
        What to find.
    """

    name: str
    features: tuple[Feature, ...]
    instances: tuple[str, ...]
    models: Mapping[str, Ensemble]
    constraints: tuple[Constraint, ...] = ()
    goal: Goal = field(default_factory=Find)

    def __post_init__(self) -> None:
        check_query(self)

    @property
    def n_features(self) -> int:
        return len(self.features)

    def feature_index(self, name: str) -> int:
        """Index of the feature called ``name``."""
        for i, feature in enumerate(self.features):
            if feature.name == name:
                return i
        raise IRError(f"query {self.name}: no feature {name!r}")


def walk(constraints: tuple[Constraint, ...]):
    """Yield every constraint, descending into the alternatives of :class:`AnyOf`."""
    for constraint in constraints:
        yield constraint
        if isinstance(constraint, AnyOf):
            for alternative in constraint.alternatives:
                yield from walk(alternative)


def output_terms(query: Query):
    """Yield every output term of the query: in constraints, the goal and a conclusion."""
    goal = query.goal
    yield from goal_terms(goal)
    conclusion = goal.conclusion if isinstance(goal, Prove) else ()
    for constraint in walk(query.constraints + conclusion):
        if isinstance(constraint, OutputConstraint):
            yield constraint.term


def models_read(query: Query) -> set[str]:
    """The models that ``query``'s terms and votes read."""
    goal = query.goal
    conclusion = goal.conclusion if isinstance(goal, Prove) else ()
    names = {c.model for c in walk(query.constraints + conclusion) if isinstance(c, VoteMargin)}
    return names | {atom.model for term in output_terms(query) for atom in term.atoms}


def check_query(query: Query) -> None:
    """Raise :class:`IRError` when the query refers to unknown instances, features or models."""
    # Long by design: one short branch per constraint kind, all sharing the checkers defined
    # first; read top to bottom, it is the list of what a query may refer to.
    n = query.n_features
    names = [f.name for f in query.features]
    if len(set(names)) != len(names):
        raise IRError(f"query {query.name}: feature names are not unique")
    if not query.instances or len(set(query.instances)) != len(query.instances):
        raise IRError(f"query {query.name}: instances must be named, once each")
    for name, model in query.models.items():
        if model.feature_names != tuple(names):
            raise IRError(f"query {query.name}: model {name} is not over the query's features")

    def instance(name: str) -> None:
        if name not in query.instances:
            raise IRError(f"query {query.name}: unknown instance {name!r}")

    def reference(ref: Reference) -> None:
        if isinstance(ref, Row):
            if len(ref.values) != n:
                raise IRError(f"query {query.name}: row {ref.label} has {len(ref.values)} values")
            if not all(math.isfinite(v) for v in ref.values):
                raise IRError(f"query {query.name}: row {ref.label} has a value that is not finite")
        else:
            instance(ref)

    def finite(rhs: float) -> None:
        if not math.isfinite(rhs):
            raise IRError(
                f"query {query.name}: a comparison with {rhs} is decided for every input; "
                "leave it out, or write AnyOf(()) for one that never holds"
            )

    def feature(index: int) -> None:
        if not 0 <= index < n:
            raise IRError(f"query {query.name}: feature index {index} out of range")

    def weights(values: Weights) -> None:
        if values is None:
            return
        if len(values) != n or not all(math.isfinite(w) and w > 0 for w in values):
            raise IRError(
                f"query {query.name}: a distance needs {n} positive finite weights, got {values}"
            )

    goal = query.goal
    conclusion = goal.conclusion if isinstance(goal, Prove) else ()
    for c in walk(query.constraints + conclusion):
        if isinstance(c, Interval):
            instance(c.instance)
            feature(c.feature)
        elif isinstance(c, Tie):
            instance(c.first)
            instance(c.second)
            feature(c.feature)
        elif isinstance(c, OneHot):
            instance(c.instance)
            for f in c.features:
                feature(f)
                if query.features[f].kind is not DomainKind.BOOL:
                    raise IRError(f"query {query.name}: one-hot feature {names[f]} is not bool")
        elif isinstance(c, AtMostKChanged):
            instance(c.instance)
            reference(c.reference)
            if not all(c.units) or sorted(f for u in c.units for f in u) != list(range(n)):
                raise IRError(
                    f"query {query.name}: the units of a change count must partition the features"
                )
        elif isinstance(c, Ball):
            instance(c.instance)
            reference(c.center)
            weights(c.weights)
        elif isinstance(c, Linear):
            for term in c.terms:
                instance(term.instance)
                feature(term.feature)
            finite(c.rhs)
        elif isinstance(c, VoteMargin):
            instance(c.instance)
            if c.model not in query.models:
                raise IRError(f"query {query.name}: unknown model {c.model!r}")
            labels = vote_labels(query.models[c.model])
            if not (0 <= c.label < labels and 0 <= c.other < labels and c.label != c.other):
                raise IRError(
                    f"query {query.name}: model {c.model} has no votes {c.label}, {c.other}"
                )
        elif isinstance(c, OutputConstraint):
            finite(c.rhs)
        elif isinstance(c, AnyOf):
            pass
        else:
            raise IRError(f"query {query.name}: unknown constraint {c!r}")
    for c in conclusion:
        for inner in walk((c,)):
            if not isinstance(inner, OutputConstraint | VoteMargin | AnyOf):
                raise IRError(f"query {query.name}: a conclusion may only constrain outputs")
    if isinstance(goal, MinimizeDistance):
        instance(goal.instance)
        reference(goal.center)
        weights(goal.weights)
    if isinstance(goal, MaximizeMin | MinimizeMax) and not goal.terms:
        raise IRError(f"query {query.name}: the worst of no terms has no value")
    for term in output_terms(query):
        for atom in term.atoms:
            instance(atom.instance)
            if atom.model not in query.models:
                raise IRError(f"query {query.name}: unknown model {atom.model!r}")
            if not 0 <= atom.output < query.models[atom.model].n_outputs:
                raise IRError(f"query {query.name}: model {atom.model} has no output {atom.output}")


def vote_labels(model) -> int:
    """How many labels the trees of ``model`` vote among (at least two)."""
    return max(2, model.n_outputs)
