"""Identical trees that cancel in a linear term of model outputs, removed before any engine runs.

In ``after(x) - before(x)`` a tree that both models hold, unchanged, adds its leaf value once
with each sign: it contributes exactly nothing, for every input. :class:`CancelTrees` removes such
trees from every output term (the goal's, an output constraint's, a conclusion's), so that the
cost of a footprint query grows with the trees a change touched, not with the forest.

What cancels: within one :class:`OutputTerm`, among the atoms on the same instance and output, a
set of occurrences of one tree (same nodes in the same order: features, float32 thresholds,
children and, for that output, float64 leaf values and any exact fractions, all compared bit
for bit) whose coefficients sum to exactly zero (opposite coefficients of equal magnitude pair
off first; the rest goes when its rational sum is zero). Removing them changes the term's
value by exactly zero on every input, so the answer, bounds and witnesses are those of the
original query and ``invert`` is the identity. Nothing else cancels: a :class:`VoteMargin`
(``class``, hard votes) compares a whole model with a threshold, and it keeps reading the
original model.

An atom that lost trees reads a new model, its original's remaining trees and base score (a
single leaf of value 0 when none remain, as an :class:`Ensemble` holds at least one tree), under
a name no model has; models no longer read are dropped. The originals stay with the caller, who
validates witnesses on them (``veritas_dsl.validate``).
"""

from __future__ import annotations

import dataclasses
import weakref
from collections import defaultdict
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from veritas_dsl.ir.query import (
    AnyOf,
    Maximize,
    MaximizeMin,
    Minimize,
    MinimizeMax,
    OutputAtom,
    OutputConstraint,
    OutputTerm,
    Prove,
    Query,
    models_read,
)
from veritas_dsl.ir.reductions.base import Reduction
from veritas_dsl.model.ensemble import Ensemble
from veritas_dsl.model.fractions import LeafFractions


def shape_keys(model: Ensemble) -> list[bytes]:
    """One key per tree of ``model``: equal keys mean the same nodes in the same order (features,
    float32 thresholds, children, compared bit for bit), leaf values aside: trees that reach the
    same leaf on every input. Computed once per model (an Ensemble's arrays are read-only)."""
    cached = _SHAPES.get(model)
    if cached is not None:
        return cached
    keys = []
    offsets = model.tree_offsets
    for t in range(model.n_trees):
        a, b = int(offsets[t]), int(offsets[t + 1])
        left = np.where(model.left[a:b] >= 0, model.left[a:b] - a, -1)
        right = np.where(model.right[a:b] >= 0, model.right[a:b] - a, -1)
        parts = (
            np.int64(b - a).tobytes(),
            model.feature[a:b].tobytes(),
            model.threshold[a:b].tobytes(),
            left.astype(np.int64).tobytes(),
            right.astype(np.int64).tobytes(),
        )
        keys.append(b"|".join(parts))
    _SHAPES[model] = keys
    return keys


_SHAPES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def tree_keys(model: Ensemble, output: int) -> list[bytes]:
    """One key per tree of ``model``: equal keys mean the same function of the input on
    ``output`` (the same shape, :func:`shape_keys`, and the same float64 leaf values, and
    fractions when the model adds fractions: two may round to one float64)."""
    offsets = model.tree_offsets
    columns = [model.value[:, output]]
    if model.fractions is not None:  # in lowest terms: 0/5 and 0/4 are one value
        a, b = model.fractions.numerator[:, output], model.fractions.denominator[:, output]
        columns += [a // np.gcd(a, b), b // np.gcd(a, b)]
    return [
        shape
        + b"|"
        + b"|".join(np.ascontiguousarray(c[offsets[t] : offsets[t + 1]]).tobytes() for c in columns)
        for t, shape in enumerate(shape_keys(model))
    ]


def cancelled_occurrences(coefs: list[tuple[int, float]]) -> set[int]:
    """Of one tree's occurrences, given as ``(occurrence, coefficient)``, those to remove: pairs
    of opposite coefficients of equal magnitude, then all the rest when it sums to exactly 0."""
    gone: set[int] = set()
    by_size: dict[float, tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
    for occurrence, coef in coefs:
        if coef != 0:
            by_size[abs(coef)][coef < 0].append(occurrence)
    for positive, negative in by_size.values():
        pairs = min(len(positive), len(negative))
        gone.update(positive[:pairs] + negative[:pairs])
    rest = [(o, c) for o, c in coefs if o not in gone]
    if rest and sum(Fraction(c) for _, c in rest) == 0:
        gone.update(o for o, _ in rest)
    return gone


def without_trees(model: Ensemble, drop: frozenset[int]) -> Ensemble:
    """``model`` without the trees ``drop`` (same base score; a zero leaf if none remain)."""
    keep = [t for t in range(model.n_trees) if t not in drop]
    fractions = model.fractions
    if not keep:
        zero = np.zeros((1, model.n_outputs), dtype=np.int64)
        return dataclasses.replace(
            model,
            feature=[-1],
            threshold=[0.0],
            left=[-1],
            right=[-1],
            value=np.zeros((1, model.n_outputs)),
            tree_offsets=[0, 1],
            library=None,
            fractions=None if fractions is None else LeafFractions(zero, zero + 1),
        )
    offsets = model.tree_offsets
    parts: dict[str, list[np.ndarray]] = defaultdict(list)
    sizes = []
    start = 0
    for t in keep:
        a, b = int(offsets[t]), int(offsets[t + 1])
        for name in ("feature", "threshold", "value"):
            parts[name].append(getattr(model, name)[a:b])
        for name in ("left", "right"):
            child = getattr(model, name)[a:b].astype(np.int64)
            parts[name].append(np.where(child >= 0, child - a + start, -1))
        parts["nodes"].append(np.arange(a, b))
        sizes.append(b - a)
        start += b - a
    arrays = {name: np.concatenate(chunks) for name, chunks in parts.items()}
    nodes = arrays.pop("nodes")
    return dataclasses.replace(
        model,
        **arrays,
        tree_offsets=np.concatenate([[0], np.cumsum(sizes)]),
        library=None,
        fractions=None if fractions is None else fractions.slice(nodes),
    )


class _Pruner:
    """Rewrites the terms of one query, sharing one pruned model per (model, trees dropped)."""

    def __init__(self, query: Query) -> None:
        self.models = dict(query.models)
        self.names: dict[tuple[str, frozenset[int]], str] = {}
        self.keys: dict[tuple[str, int], list[bytes]] = {}
        self.changed = False

    def term(self, term: OutputTerm) -> OutputTerm:
        groups: dict[tuple[str, int], list[int]] = defaultdict(list)
        for i, atom in enumerate(term.atoms):
            groups[atom.instance, atom.output].append(i)
        drops: dict[int, set[int]] = defaultdict(set)
        for members in groups.values():
            if len(members) < 2:
                continue
            occurrences: dict[bytes, list[tuple[int, float]]] = defaultdict(list)
            where = []
            for i in members:
                atom = term.atoms[i]
                for t, key in enumerate(self._keys(atom.model, atom.output)):
                    occurrences[key].append((len(where), atom.coef))
                    where.append((i, t))
            for coefs in occurrences.values():
                if len(coefs) > 1:
                    for occurrence in cancelled_occurrences(coefs):
                        i, t = where[occurrence]
                        drops[i].add(t)
        if not drops:
            return term
        atoms = list(term.atoms)
        for i, trees in drops.items():
            atom = atoms[i]
            atoms[i] = OutputAtom(
                atom.coef, self._pruned(atom.model, frozenset(trees)), atom.instance, atom.output
            )
        self.changed = True
        return OutputTerm(tuple(atoms), term.constant)

    def constraints(self, constraints: tuple) -> tuple:
        out = []
        for c in constraints:
            if isinstance(c, OutputConstraint):
                c = OutputConstraint(self.term(c.term), c.op, c.rhs)
            elif isinstance(c, AnyOf):
                c = AnyOf(tuple(self.constraints(a) for a in c.alternatives))
            out.append(c)
        return tuple(out)

    def _keys(self, name: str, output: int) -> list[bytes]:
        if (name, output) not in self.keys:
            self.keys[name, output] = tree_keys(self.models[name], output)
        return self.keys[name, output]

    def _pruned(self, name: str, drop: frozenset[int]) -> str:
        if (name, drop) not in self.names:
            new = f"{name}~{len(self.names) + 1}"
            while new in self.models:
                new += "~"
            self.models[new] = without_trees(self.models[name], drop)
            self.names[name, drop] = new
        return self.names[name, drop]


@dataclass(frozen=True)
class CancelTrees(Reduction):
    """Remove the trees that cancel in each output term (see the module docstring). The answer
    is the original's exactly, so ``invert`` is the identity; a query where nothing cancels is
    returned as it is."""

    def apply(self, query: Query) -> tuple[Query, None]:
        pruner = _Pruner(query)
        constraints = pruner.constraints(query.constraints)
        goal = query.goal
        if isinstance(goal, Maximize | Minimize):
            goal = type(goal)(pruner.term(goal.term))
        elif isinstance(goal, MaximizeMin | MinimizeMax):
            goal = type(goal)(tuple(pruner.term(term) for term in goal.terms))
        elif isinstance(goal, Prove):
            goal = Prove(pruner.constraints(goal.conclusion))
        if not pruner.changed:
            return query, None
        rewritten = dataclasses.replace(
            query, models=pruner.models, constraints=constraints, goal=goal
        )
        read = models_read(rewritten)
        models = {name: m for name, m in pruner.models.items() if name in read}
        return dataclasses.replace(rewritten, models=models), None
