"""What makes two solutions of an objective distinct (``solutions = N``): the leaves the inputs
reach in the trees that add to the objective. Their combination fixes the objective's value, so
the N best values are those of N combinations, which a brute force can enumerate.

A tree adds nothing, on any input, when its leaves are 0 on every output the objective reads,
or when every instance that reads it reaches the same leaf (each feature it tests is tied
between them, ``x1 == x2 except sex``) and the coefficients of those instances cancel (a tree
without ``sex`` in ``m(x2) - m(x1)``). Such a tree does not tell solutions apart: every engine
leaves it out of its search (A* does), and counting it would list the same value once per leaf
of it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from fractions import Fraction

from veritas_dsl.float32 import next_down, next_up
from veritas_dsl.ir.evaluate import Inputs, as_point
from veritas_dsl.ir.query import AnyOf, Interval, Query, Tie, goal_terms

#: A tree of a model read on an instance: (model, instance, tree).
CountedTree = tuple[str, str, int]


def leaf_combination(
    query: Query, inputs: Inputs, trees: list[CountedTree] | None = None
) -> tuple[int, ...]:
    """The leaf ``inputs`` reach in every tree that adds to the objective of ``query``
    (``trees``, :func:`counted_trees` when None): two solutions are distinct when these
    differ."""
    trees = counted_trees(query) if trees is None else trees
    leaves = {}
    for model, instance, _ in trees:
        if (model, instance) not in leaves:
            point = as_point(inputs[instance], query.n_features)[None]
            leaves[model, instance] = query.models[model].leaves(point)[0]
    return tuple(int(leaves[m, i][t]) for m, i, t in trees)


def elsewhere(query: Query, inputs: Inputs) -> AnyOf | None:
    """The constraint that the inputs reach another :func:`leaf_combination` than ``inputs``
    does: the inputs reaching the same leaves form a box (the paths' conditions), so another
    combination is a coordinate outside it. None when the box holds every input."""
    box = {}  # (instance, feature): closed float32 bounds of the box
    for model_name, instance, tree in counted_trees(query):
        model = query.models[model_name]
        point = as_point(inputs[instance], query.n_features)
        node = int(model.roots[tree])
        while model.feature[node] >= 0:
            f, threshold = int(model.feature[node]), float(model.threshold[node])
            lo, hi = box.get((instance, f), (-math.inf, math.inf))
            if point[f] < threshold:  # XGBoost's rule: x < t goes left
                box[instance, f] = (lo, min(hi, next_down(threshold)))
                node = int(model.left[node])
            else:
                box[instance, f] = (max(lo, threshold), hi)
                node = int(model.right[node])
    sides = []
    for (instance, f), (lo, hi) in sorted(box.items()):
        if lo > -math.inf:
            sides.append((Interval(instance, f, hi=next_down(lo)),))
        if hi < math.inf:
            sides.append((Interval(instance, f, lo=next_up(hi)),))
    return AnyOf(tuple(sides)) if sides else None


def counted_trees(query: Query) -> list[CountedTree]:
    """The trees whose leaves tell the solutions of ``query``'s objective apart, in a stable
    order: every tree of every (model, instance) the objective reads, but those that add
    nothing to it (the module's docstring)."""
    atoms = [(k, atom) for k, term in enumerate(goal_terms(query.goal)) for atom in term.atoms]
    tied = _tie_groups(query)
    counted = []
    for name in sorted({atom.model for _, atom in atoms}):
        model = query.models[name]
        reading = sorted({atom.instance for _, atom in atoms if atom.model == name})
        sums: dict[tuple[int, int], Fraction] = defaultdict(Fraction)  # (term, output)
        for k, atom in atoms:
            if atom.model == name:
                sums[k, atom.output] += Fraction(atom.coef)
        for tree in range(model.n_trees):
            nodes = slice(int(model.tree_offsets[tree]), int(model.tree_offsets[tree + 1]))
            tested = {int(f) for f in model.feature[nodes] if f >= 0}
            same_leaf = all(len({tied(i, f) for i in reading}) == 1 for f in tested)
            values = model.value[nodes][model.feature[nodes] < 0]
            adds = [s != 0 and values[:, o].any() for (_, o), s in sums.items()]
            if any(adds) if same_leaf else any(values[:, o].any() for _, o in sums):
                counted += [(name, instance, tree) for instance in reading]
    return counted


def _tie_groups(query: Query):
    """``tied(instance, feature)``: a representative of the features the query's top-level
    ties make equal to it (the same for every member)."""
    parent: dict[tuple[str, int], tuple[str, int]] = {}

    def find(item):
        while parent.get(item, item) != item:
            item = parent[item]
        return item

    for c in query.constraints:
        if isinstance(c, Tie):
            a, b = find((c.first, c.feature)), find((c.second, c.feature))
            if a != b:
                parent[a] = b
    return lambda instance, feature: find((instance, feature))
