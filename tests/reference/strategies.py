"""Hypothesis strategies: small random ensembles and queries over every IR construct.

Every engine is tested on these against the brute-force oracle (``tests/solvers/test_engines.py``).
Thresholds and leaf values come from small sets, so that ties, shared thresholds and equal
optima (the cases engines get wrong) are common. :func:`corner_queries` draws the float32
corners instead: magnitudes from subnormals to 1e30, rows on thresholds, -0.0, int features with
bounds between whole numbers or none at all.
"""

from __future__ import annotations

import math

from hypothesis import strategies as st

from veritas_dsl.float32 import next_down
from veritas_dsl.ir import (
    AnyOf,
    AtMostKChanged,
    Ball,
    DomainKind,
    Find,
    Interval,
    Linear,
    LinearTerm,
    Maximize,
    MaximizeMin,
    Minimize,
    MinimizeDistance,
    MinimizeMax,
    OneHot,
    OutputConstraint,
    Prove,
    Query,
    Row,
    Tie,
    VoteMargin,
    change_units,
)
from veritas_dsl.ir.query import vote_labels, vote_wins

from conftest import build
from reference.ir import features, out, term

THRESHOLDS = [-1.0, -0.5, 0.0, 0.25, 0.5, 1.0, 2.0]
COORDINATES = [-1.5, -0.5, 0.0, 0.1, 0.5, 1.0, 2.5]

#: Thresholds at the float32 corners: huge, tiny, the smallest subnormal, 0.
CORNER_THRESHOLDS = [-1e30, -1.0, -1e-30, 0.0, 1e-45, 1e-30, 0.5, 8.5, 1e30]
#: Row values on those thresholds and just below them, -0.0 (kept apart from 0.0) and a subnormal.
CORNER_VALUES = [
    *sorted({*CORNER_THRESHOLDS, *(next_down(t) for t in CORNER_THRESHOLDS), 3.0, 1e-40}),
    -0.0,
]
#: Distance weights at the corners: 1 / scale for scales 10, 1/3, 2**20 and 1e-6.
CORNER_WEIGHTS = [0.1, 1.0, 3.0, 2.0**-20, 1e6]
#: Feature and interval bounds: none, between whole numbers, -0.0 and huge or tiny ones.
CORNER_BOUNDS = [
    -math.inf,
    math.inf,
    8.000000000000002,
    16.999999999999996,
    -2.5,
    0.49999999999,
    -0.0,
    1e-30,
    -1e30,
    1e30,
]

#: The query families :func:`queries` draws from; each names the construct it exercises.
FAMILIES = (
    "maximize",
    "minimize",
    "box",
    "int_domain",
    "one_hot",
    "changed",
    "changed_one_hot",
    "linf",
    "l1",
    "output_constraint",
    "disjunction",
    "prove",
    "min_linf",
    "min_l1",
    "two_instances",
    "two_models",
    "multiclass",
    "linear",
    "hard_vote",
    "weighted_distance",
    "worst_of",
)

#: Per-feature weights of a distance (1 / scale): powers of two, and 0.1 and 3, whose products
#: with float32 gaps are not float64 values.
WEIGHTS = [0.1, 0.25, 1.0, 2.0, 3.0]


@st.composite
def ensembles(draw, n_features=3, max_trees=3, max_depth=2, n_outputs=1, thresholds=None):
    """A random ensemble; multi-output leaves when ``n_outputs > 1`` (task multiclass)."""
    n_trees = draw(st.integers(1, max_trees))
    base = draw(VALUES)
    return build(
        [draw_tree(draw, max_depth, n_features, n_outputs, thresholds) for _ in range(n_trees)],
        n_features,
        base=base if n_outputs == 1 else [base] * n_outputs,
        task="regression" if n_outputs == 1 else "multiclass",
    )


VALUES = st.integers(-4, 4).map(lambda v: v / 2)


def draw_tree(draw, max_depth=2, n_features=3, n_outputs=1, thresholds=None, depth=None):
    """One random tree as nested tuples for ``conftest.build``."""
    depth = max_depth if depth is None else depth
    if depth == 0 or (depth < max_depth and draw(st.booleans())):
        if n_outputs == 1:
            return draw(VALUES)
        return [draw(VALUES) for _ in range(n_outputs)]
    feature = draw(st.integers(0, n_features - 1))
    threshold = draw(st.sampled_from(thresholds or THRESHOLDS))
    low, high = (
        draw_tree(draw, max_depth, n_features, n_outputs, thresholds, depth - 1) for _ in range(2)
    )
    return (feature, threshold, low, high)


@st.composite
def variants(draw, n_features=3):
    """Two or three models sharing most of their trees, as deletion variants do: each is a
    base's trees with one of them redrawn, and its own base score."""
    specs = [draw_tree(draw, 2, n_features) for _ in range(draw(st.integers(1, 4)))]
    models = []
    for _ in range(draw(st.integers(2, 3))):
        changed = list(specs)
        changed[draw(st.integers(0, len(specs) - 1))] = draw_tree(draw, 2, n_features)
        base = draw(st.sampled_from([0.0, 0.0, 0.5, -1.5]))
        models.append(build(changed, n_features, base=base))
    return models


def rows(n_features: int):
    return st.lists(st.sampled_from(COORDINATES), min_size=n_features, max_size=n_features).map(
        lambda values: Row(tuple(values))
    )


@st.composite
def queries(draw, family: str) -> Query:
    """A random small query of one family (see :data:`FAMILIES`)."""
    n = 3
    model = draw(ensembles(n_features=n))
    models = {"m": model}
    instances = ("x",)
    names = [f"x{i}" for i in range(n)]
    space = features(names)
    constraints: list = []
    goal = Maximize(term(out())) if draw(st.booleans()) else Minimize(term(out()))
    level = draw(st.sampled_from([-1.0, 0.0, 0.5, 1.5]))
    row = draw(rows(n))
    radius = draw(st.sampled_from([0.0, 0.3, 0.5, 1.0, 2.0]))

    if family == "maximize":
        goal = Maximize(term(out()))
    elif family == "minimize":
        goal = Minimize(term(out()))
    elif family == "box":
        for f in range(n):
            lo = draw(st.sampled_from([-math.inf, -1.0, 0.0, 0.3]))
            hi = draw(st.sampled_from([0.3, 0.6, 1.0, 2.0, math.inf]))
            constraints.append(Interval("x", f, lo, hi))
    elif family == "int_domain":
        kinds = [DomainKind.INT, DomainKind.REAL, DomainKind.INT]
        space = features(names, kinds, [(-2, 3), (-2, 3), (0, 1)])
        if draw(st.booleans()):  # the closest integers to a row of fractional values
            constraints.append(
                OutputConstraint(term(out()), draw(st.sampled_from([">", "<"])), level)
            )
            goal = MinimizeDistance(draw(st.sampled_from(["linf", "l1"])), "x", row)
    elif family == "one_hot":
        space = features(names, [DomainKind.BOOL] * n)
        constraints.append(OneHot("x", tuple(range(n))))
    elif family == "changed":
        constraints.append(AtMostKChanged("x", row, draw(st.integers(0, 2)), change_units(n)))
    elif family == "changed_one_hot":
        # A one-hot group of two or three bools is one unit of the change count; the row's
        # values on it are 0s and 1s, one-hot or not; sometimes the closest such point.
        size = draw(st.integers(2, n))
        space = features(names, [DomainKind.BOOL] * size + [DomainKind.REAL] * (n - size))
        group = tuple(range(size))
        bits = draw(st.lists(st.sampled_from([0.0, 1.0]), min_size=size, max_size=size))
        row = Row((*bits, *row.values[size:]))
        units = change_units(n, [group])
        constraints += [
            OneHot("x", group),
            AtMostKChanged("x", row, draw(st.integers(0, 2)), units),
        ]
        if draw(st.booleans()):
            constraints.append(
                OutputConstraint(term(out()), draw(st.sampled_from([">", "<"])), level)
            )
            goal = MinimizeDistance(draw(st.sampled_from(["linf", "l1"])), "x", row)
    elif family in ("linf", "l1"):
        constraints.append(Ball(family, "x", row, radius))
    elif family == "output_constraint":
        constraints.append(
            OutputConstraint(term(out()), draw(st.sampled_from(["<", "<=", ">", ">="])), level)
        )
        goal = draw(st.sampled_from([goal, Find()]))
    elif family == "disjunction":
        constraints.append(
            AnyOf(
                (
                    (Interval("x", 0, -math.inf, 0.0),),
                    (Interval("x", 1, 0.5, math.inf), Interval("x", 2, 0.0, 1.0)),
                )
            )
        )
    elif family == "prove":
        constraints.append(Ball("linf", "x", row, radius))
        goal = Prove((OutputConstraint(term(out()), draw(st.sampled_from([">", "<="])), level),))
    elif family in ("min_linf", "min_l1"):
        constraints.append(OutputConstraint(term(out()), draw(st.sampled_from([">", "<"])), level))
        goal = MinimizeDistance(family[4:], "x", row)
    elif family == "two_instances":
        instances = ("x1", "x2")
        shared = draw(st.sets(st.integers(0, n - 1), max_size=n - 1))
        constraints += [Tie("x1", "x2", f) for f in sorted(shared)]
        if draw(st.booleans()):
            constraints.append(Ball("linf", "x2", "x1", radius))
        goal = Maximize(term(out("x2"), out("x1", coef=-1.0)))
        if draw(st.booleans()):  # the closest pair whose outputs differ by at least the level
            constraints.append(OutputConstraint(goal.term, ">=", level))
            goal = MinimizeDistance(draw(st.sampled_from(["linf", "l1"])), "x2", "x1")
    elif family == "two_models":
        models["m2"] = draw(ensembles(n_features=n))
        goal = Maximize(term(out(model="m2"), out(coef=-1.0)))
    elif family == "multiclass":
        model = draw(ensembles(n_features=n, n_outputs=3))
        models = {"m": model}
        target = draw(st.integers(0, 2))
        other = draw(st.integers(0, 2).filter(lambda k: k != target))
        goal = Maximize(term(out(output=target), out(output=other, coef=-1.0)))
    elif family == "linear":
        terms = (
            LinearTerm(1.0, "x", 0),
            LinearTerm(draw(st.sampled_from([-1.0, 1.0, 2.0])), "x", 1),
        )
        constraints += [
            Linear(terms, draw(st.sampled_from(["<=", ">="])), level),
            Interval("x", 1, -2.0, 2.0),
        ]
    elif family == "hard_vote":
        # Hard voting, of a one-output model (a tree votes 1 above 0 / n_trees) or of three
        # classes; as a constraint next to a goal, or as the conclusion of a property.
        if draw(st.booleans()):
            model = draw(ensembles(n_features=n, n_outputs=3))
            models = {"m": model}
            goal = Maximize(term(out(output=draw(st.integers(0, 2)))))
        labels = vote_labels(model)
        label = draw(st.integers(0, labels - 1))
        other = draw(st.integers(0, labels - 1).filter(lambda k: k != label))
        margin = VoteMargin("m", "x", label, other, draw(st.integers(-1, 2)))
        if draw(st.booleans()):
            constraints.append(margin)
        else:
            constraints.append(Ball("linf", "x", row, radius))
            goal = Prove(vote_wins("m", "x", label, labels))
    elif family == "weighted_distance":
        # A weighted ball and/or a weighted closest point, around a row or between instances,
        # on real or int features.
        weights = tuple(draw(st.lists(st.sampled_from(WEIGHTS), min_size=n, max_size=n)))
        if draw(st.booleans()):
            space = features(names, [DomainKind.INT, DomainKind.REAL, DomainKind.REAL])
        norm = draw(st.sampled_from(["linf", "l1"]))
        center = row
        if draw(st.booleans()):
            instances, center = ("x1", "x2"), "x1"
            constraints.append(Tie("x1", "x2", 2))
            goal = Maximize(term(out("x2"), out("x1", coef=-1.0)))
        x = instances[-1]
        if draw(st.booleans()):
            constraints.append(
                Ball(draw(st.sampled_from(["linf", "l1"])), x, center, radius, weights)
            )
        if draw(st.booleans()):
            constraints.append(
                OutputConstraint(goal.term, draw(st.sampled_from([">", "<"])), level)
            )
            goal = MinimizeDistance(norm, x, center, weights)
    elif family == "worst_of":
        # maximize the least / minimize the largest output of models that share trees, with a
        # constant in one term; maybe in a ball, maybe above a level on each model
        models = {f"m{i}": m for i, m in enumerate(draw(variants(n)))}
        shift = draw(st.sampled_from([0.0, 0.0, 0.25, -1.0]))
        terms = tuple(
            term(out(model=name), constant=shift * (i == 0)) for i, name in enumerate(models)
        )
        goal = MaximizeMin(terms) if draw(st.booleans()) else MinimizeMax(terms)
        if draw(st.booleans()):
            constraints.append(Ball(draw(st.sampled_from(["linf", "l1"])), "x", row, radius))
        if draw(st.booleans()):
            constraints.append(
                OutputConstraint(terms[-1], draw(st.sampled_from([">", "<"])), level)
            )
    else:
        raise ValueError(f"unknown family {family!r}")
    return Query(family, space, instances, models, tuple(constraints), goal)


@st.composite
def corner_queries(draw) -> Query:
    """A small query at the float32 corners (see the module docstring): int or real features
    with corner bounds, one or two instances, change counts, balls and intervals against corner
    rows or the other instance, and an output or distance goal."""
    n = 3
    model = draw(ensembles(n_features=n, thresholds=CORNER_THRESHOLDS))
    kinds = draw(
        st.lists(st.sampled_from([DomainKind.INT, DomainKind.REAL]), min_size=n, max_size=n)
    )

    def bounds():
        lo, hi = sorted(draw(st.lists(st.sampled_from(CORNER_BOUNDS), min_size=2, max_size=2)))
        return (-math.inf, math.inf) if lo == math.inf or hi == -math.inf else (lo, hi)

    space = features([f"x{i}" for i in range(n)], kinds, [bounds() for _ in range(n)])
    instances = draw(st.sampled_from([("x",), ("x1", "x2")]))
    instance = st.sampled_from(instances)
    row = st.lists(st.sampled_from(CORNER_VALUES), min_size=n, max_size=n).map(
        lambda values: Row(tuple(values))
    )

    def reference(of: str):
        others = [i for i in instances if i != of]
        return others[0] if others and draw(st.booleans()) else draw(row)

    def weights():
        """None (unweighted) or a weight a feature, tiny and huge ones among them."""
        each = st.sampled_from(CORNER_WEIGHTS)
        return draw(st.none() | st.lists(each, min_size=n, max_size=n).map(tuple))

    constraints = []
    for _ in range(draw(st.integers(0, 2))):
        kind = draw(st.sampled_from(["changed", "linf", "l1", "interval", "tie"]))
        x = draw(instance)
        if kind == "changed":
            constraints.append(
                AtMostKChanged(x, reference(x), draw(st.integers(0, 2)), change_units(n))
            )
        elif kind in ("linf", "l1"):
            radius = draw(st.sampled_from([0.0, 1e-45, 1e-30, 0.5, 1e30]))
            constraints.append(Ball(kind, x, reference(x), radius, weights()))
        elif kind == "interval":
            constraints.append(Interval(x, draw(st.integers(0, n - 1)), *bounds()))
        elif len(instances) == 2:
            constraints.append(Tie("x1", "x2", draw(st.integers(0, n - 1))))
    goal = draw(st.sampled_from(["max", "min", "distance"]))
    last = instances[-1]
    gap = term(out(last), out(instances[0], coef=-1.0)) if len(instances) == 2 else term(out())
    if goal == "max":
        goal = Maximize(gap)
    elif goal == "min":
        goal = Minimize(gap)
    else:
        x = draw(instance)
        goal = MinimizeDistance(draw(st.sampled_from(["linf", "l1"])), x, reference(x), weights())
    return Query("corner", space, instances, {"m": model}, tuple(constraints), goal)
