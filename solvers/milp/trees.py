"""The trees of the MILP (Kantchelian): leaf columns per tree, and output terms over them.

One leaf column per leaf reachable within the variables' bounds, exactly one per tree; at each
internal node whose both sides are reachable, the leaves under the left child sum to at most its
predicate and those under the right child to at most one minus it. An output term is then affine
in the leaf columns; :meth:`Trees.grid_margin` is the half grid step that makes its comparisons
exact (see the formulation's module doc, "Output constraints").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from veritas_dsl.ir.query import OutputConstraint, OutputTerm, Query
from veritas_dsl.ir.reductions.cancel import shape_keys
from veritas_dsl.solvers.base import Deadline
from veritas_dsl.solvers.milp.predicates import Predicates
from veritas_dsl.solvers.milp.program import Affine


@dataclass(frozen=True)
class TreeLeaves:
    """The reachable leaves of one tree for one (model, instance): node ids and their columns.

    ``cols`` is None when a single leaf is reachable (its value is a constant).
    """

    nodes: np.ndarray
    cols: np.ndarray | None

    def column(self, node: int) -> int | None:
        """The column of leaf ``node`` (None for a constant tree); KeyError if it was pruned."""
        if self.cols is None:
            return None
        hit = np.nonzero(self.nodes == node)[0]
        if len(hit) == 0:
            raise KeyError(node)
        return int(self.cols[hit[0]])


def lowest_bit(values) -> int | None:
    """The exponent of the lowest set bit over nonzero finite float64 ``values`` (None if none)."""
    x = np.asarray(values, dtype=np.float64).ravel()
    x = x[np.isfinite(x) & (x != 0)]
    if len(x) == 0:
        return None
    mantissa, exponent = np.frexp(np.abs(x))
    digits = (mantissa * 2.0**53).astype(np.int64)  # exact: 53-bit integers
    low = digits & -digits
    return int(np.min(exponent - 53 + np.log2(low).astype(np.int64)))


class Trees(Predicates):
    """Leaf columns and output terms, on the predicates of :class:`Predicates`."""

    def __init__(self, query: Query, deadline: Deadline, pairs: list[tuple[str, str]]) -> None:
        super().__init__(query, deadline, pairs)
        self.leaves: dict[tuple[str, str], list[TreeLeaves]] = {}

    # -- trees --------------------------------------------------------------------------------

    def make_leaves(self) -> None:
        """Leaf columns per tree and (model, instance). Trees of the same shape (the same nodes,
        ``shape_keys``) whose split features are the same variables reach the same leaf on every
        input, so they share their columns: a tree read on two instances tied at the top level
        (in a fairness query, only the trees that test the feature the instances differ in are
        left in the objective), and a tree that several models hold (the variants of a deletion
        family: one leaf block per distinct tree)."""
        shared: dict[tuple[bytes, tuple[int, ...]], tuple[int, TreeLeaves]] = {}
        for model_name, instance in self.pairs:
            model = self.query.models[model_name]
            trees = []
            var_of = self.var_of[self.query.instances.index(instance)]
            for tree, shape in enumerate(shape_keys(model)):
                self.deadline.check()
                start = int(model.tree_offsets[tree])
                nodes = slice(start, model.tree_offsets[tree + 1])
                tested = sorted({int(f) for f in model.feature[nodes] if f >= 0})
                key = (shape, tuple(int(var_of[f]) for f in tested))
                if key not in shared:
                    shared[key] = (start, self.tree(model, var_of, int(model.roots[tree])))
                first, leaves = shared[key]
                if first != start:  # the same shape elsewhere: its nodes, shifted to this tree
                    leaves = TreeLeaves(leaves.nodes - first + start, leaves.cols)
                trees.append(leaves)
            self.leaves[model_name, instance] = trees

    def tree(self, model, var_of: np.ndarray, root: int) -> TreeLeaves:
        splits: list[tuple[int, float, list[int], list[int]]] = []

        def descend(node: int, bounds: dict[int, tuple[float, float]]) -> list[int]:
            f = int(model.feature[node])
            if f < 0:
                return [node]
            v = int(var_of[f])
            var = self.vars[v]
            t = var.cut_of(float(model.threshold[node]))
            lo, hi = bounds.get(v, (var.lo, var.hi))
            left = right = []
            if lo < t:
                left = descend(int(model.left[node]), {**bounds, v: (lo, min(hi, var.below(t)))})
            if hi >= t:
                right = descend(int(model.right[node]), {**bounds, v: (max(lo, t), hi)})
            if left and right:
                splits.append((v, t, left, right))
            return left + right

        reachable = descend(root, {})
        if len(reachable) == 1:
            return TreeLeaves(np.array(reachable), None)
        cols = {node: self.p.column(0.0, 1.0) for node in reachable}
        self.p.row(Affine(dict.fromkeys(cols.values(), 1.0)), 1.0, 1.0)
        for v, t, left, right in splits:
            p = self.pred(v, t)
            self.p.row(Affine({cols[n]: 1.0 for n in left}) - p, upper=0.0)
            self.p.row(Affine({cols[n]: 1.0 for n in right}) + p, upper=1.0)
        return TreeLeaves(np.array(reachable), np.array([cols[n] for n in reachable]))

    def term(self, term: OutputTerm) -> tuple[Affine, float, float]:
        """The term as an affine expression of leaf columns, and its smallest and largest value
        (per tree, since exactly one leaf of a tree is chosen)."""
        terms: dict[int, float] = {}
        const = lo = hi = float(term.constant)
        for atom in term.atoms:
            model = self.query.models[atom.model]
            base = atom.coef * float(model.base_score[atom.output])
            const, lo, hi = const + base, lo + base, hi + base
            for leaves in self.leaves[atom.model, atom.instance]:
                self.deadline.check()
                values = atom.coef * model.value[leaves.nodes, atom.output]
                lo, hi = lo + float(values.min()), hi + float(values.max())
                if leaves.cols is None:
                    const += float(values[0])
                    continue
                for col, value in zip(leaves.cols, values, strict=True):
                    terms[int(col)] = terms.get(int(col), 0.0) + float(value)
        return Affine(terms, const), lo, hi

    def rounding(self, term: OutputTerm) -> float:
        """How far the semantics' float64 sum of ``term`` (``Ensemble.eval``: the base, then
        each tree's leaf) can lie from the real sum the program computes: a recursive sum of
        ``n`` numbers errs by at most ``(n - 1) * 2**-53`` times the sum of their magnitudes.
        Leaves of exact fractions (each within ``2**-53`` of its value, the sum rounded once)
        err by at most twice that of one, which ``n + 2`` covers."""
        total = abs(float(term.constant))
        for atom in term.atoms:
            model = self.query.models[atom.model]
            trees = self.leaves[atom.model, atom.instance]
            size = abs(float(model.base_score[atom.output])) + sum(
                float(np.abs(model.value[leaves.nodes, atom.output]).max()) for leaves in trees
            )
            total += abs(atom.coef) * (len(trees) + 2) * size
        return 2.0**-52 * (len(term.atoms) + 1) * total

    def constant_outputs(self, term: OutputTerm) -> dict[tuple[str, str], np.ndarray] | None:
        """The outputs ``term`` reads, when each of their trees has one reachable leaf: added as
        ``Ensemble.eval`` adds them (``Ensemble.outputs_at``), so that the term is decided as
        the semantics decide it. None when a tree has a choice."""
        outputs = {}
        for atom in term.atoms:
            key = (atom.model, atom.instance)
            if any(leaves.cols is not None for leaves in self.leaves[key]):
                return None
            model = self.query.models[atom.model]
            nodes = [int(leaves.nodes[0]) for leaves in self.leaves[key]]
            outputs[key] = model.outputs_at(np.array([nodes]))[0]
        return outputs

    def grid_margin(self, constraint: OutputConstraint) -> float:
        """Half the grid step of the values ``constraint.term - rhs`` can take (see module doc)."""
        term = constraint.term
        bits = [lowest_bit([term.constant, constraint.rhs])]
        for atom in term.atoms:
            model = self.query.models[atom.model]
            values = [model.base_score[atom.output]]
            for leaves in self.leaves[atom.model, atom.instance]:
                values.append(model.value[leaves.nodes, atom.output])
            low = lowest_bit(np.concatenate([np.ravel(v) for v in values]))
            coef = lowest_bit([atom.coef])
            if low is not None and coef is not None:
                bits.append(low + coef)
        bits = [b for b in bits if b is not None]
        return 2.0 ** (min(bits) - 1) if bits else 0.5
