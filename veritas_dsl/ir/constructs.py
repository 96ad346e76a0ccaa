"""The constructs of the query IR: the names engines declare support for, and the ones a
query uses (the registry matches the two before any engine runs)."""

from __future__ import annotations

from veritas_dsl.ir.query import (
    AnyOf,
    AtMostKChanged,
    Ball,
    DomainKind,
    Find,
    Linear,
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
    output_terms,
    walk,
)

#: Every construct a query can use; engines declare the subset they answer. ``l2`` is a distance
#: to a row to minimise; ``l2_ball`` a radius, ``l2_pair`` a distance between two instances:
#: engines that take the first need not take the others (squares over two copies of the inputs
#: or under a radius are another encoding).
CONSTRUCTS = frozenset(
    {
        "two_instances",
        "several_models",
        "multiclass",
        "int_domain",
        "bool_domain",
        "tie",
        "one_hot",
        "changed",
        "linf",
        "l1",
        "l2",
        "l2_ball",
        "l2_pair",
        "weighted_distance",
        "linear",
        "output_constraint",
        "disjunction",
        "maximize",
        "minimize",
        "worst_of",
        "minimize_distance",
        "find",
        "prove",
        "hard_vote",
    }
)


#: The kind of query each goal is: its construct, and the name reports give it.
GOAL_KINDS = {
    Maximize: "maximize",
    Minimize: "minimize",
    MaximizeMin: "maximize",
    MinimizeMax: "minimize",
    MinimizeDistance: "minimize_distance",
    Find: "find",
    Prove: "prove",
}


def constructs(query: Query) -> frozenset[str]:
    """The constructs ``query`` uses (a subset of :data:`CONSTRUCTS`)."""
    found = {GOAL_KINDS[type(query.goal)]}
    if isinstance(query.goal, MaximizeMin | MinimizeMax):
        found.add("worst_of")  # the least (or largest) of several terms
    if len(query.instances) > 1:
        found.add("two_instances")
    models = {atom.model for term in output_terms(query) for atom in term.atoms}
    if len(models) > 1:
        found.add("several_models")
    if any(query.models[m].n_outputs > 1 for m in models):
        found.add("multiclass")
    kinds = {f.kind for f in query.features}
    if DomainKind.INT in kinds:
        found.add("int_domain")
    if DomainKind.BOOL in kinds:
        found.add("bool_domain")
    goal = query.goal
    if isinstance(goal, MinimizeDistance):
        found.add(goal.norm)
        if goal.norm == "l2" and not isinstance(goal.center, Row):
            found.add("l2_pair")
        if goal.weights is not None:
            found.add("weighted_distance")
    conclusion = goal.conclusion if isinstance(goal, Prove) else ()
    names = {
        Tie: "tie",
        OneHot: "one_hot",
        AtMostKChanged: "changed",
        Linear: "linear",
        OutputConstraint: "output_constraint",
        VoteMargin: "hard_vote",
        AnyOf: "disjunction",
    }
    for c in walk(query.constraints + conclusion):
        if isinstance(c, Ball):
            found.add("l2_ball" if c.norm == "l2" else c.norm)
            if c.norm == "l2" and not isinstance(c.center, Row):
                found.add("l2_pair")
            if c.weights is not None:
                found.add("weighted_distance")
        elif type(c) in names:
            found.add(names[type(c)])
    if len(conclusion) > 1:  # the negation of a conjunction is a disjunction
        found.add("disjunction")
    return frozenset(found)
