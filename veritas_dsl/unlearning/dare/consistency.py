"""Trial deletions on copies of a DaRE forest's trees: the training rows an observer of a forest
before and after a deletion cannot rule out.

A remaining row ``r`` of ``before`` is *consistent* with the pair when some set ``S`` of as many
rows as were deleted, ``r`` among them, gives ``after`` when deleted from ``before``
(``before.copy().delete(S)``: the random state ``before`` records, as ``delete`` itself uses) as
the export shows it: every tree with the same splits (feature and float32 rule), children and
leaf fractions (:func:`published`). :func:`consistent_rows` tries, for each remaining row ``r``
and each deleted row ``d``, ``S = D - {d} + {r}``. For one deleted row these are all the
candidate deletions, so the rows found are exactly the consistent ones. For more, each row found
is consistent (it has its ``S``), but a row consistent only through sets that differ from ``D``
in two rows or more is not found: the set found is a subset of the consistent rows, and holds
``D`` whenever deleting ``D`` from ``before`` gives ``after``.

Speed: a trial works on copies of single trees (the original holding the caches a trial reads,
built as trials first need them), row by row, and stops at the first tree that
differs from ``after``'s (the trees ``after`` changed come first). That is what ``delete`` gives
when no random draw is needed: without draws each tree's update depends on its own rows and
seeds only, whatever the order the rows leave in (a greedy subtree is a function of its rows and
its root's seed, ``tree.py``; a random node keeps its split while both sides keep
``min_samples_leaf`` rows, which holds after the last row exactly when it holds after each). A
trial that would draw (a random node's side fell under the minimum) is made again whole, with
``delete`` on a copy of the forest and its generator.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from veritas_dsl.model.library import le_threshold_as_lt
from veritas_dsl.unlearning.dare.forest import DareForest
from veritas_dsl.unlearning.dare.tree import LEAF, Grower, Tree


@dataclass(frozen=True)
class Consistent:
    """The rows :func:`consistent_rows` found consistent.

    ``reproduced`` is False when deleting ``deleted`` from ``before`` does not give ``after``
    (the two were not made so: another random state, rows added); ``rows`` is then empty,
    nothing being known. ``exact``: ``rows`` is every consistent row (one row deleted, every
    candidate tried). ``tried`` of ``candidates`` remaining rows were tried before the deadline.
    """

    rows: tuple[int, ...]
    reproduced: bool
    exact: bool
    tried: int
    candidates: int


class _Drew(Exception):
    """A trial on single trees needed a random draw."""


class _NoDraws:
    """The generator of a trial on single trees: drawing from it is refused."""

    def __getattr__(self, name: str):
        raise _Drew(name)


def published(tree: Tree) -> tuple[np.ndarray, ...]:
    """``tree`` as :meth:`DareForest.to_ensemble` shows it (a compact tree, nodes in preorder):
    features and float32 rules at splits, children, and each leaf's positives and count."""
    kind = np.asarray(tree.kind)
    leaf = kind == LEAF
    feature = np.where(leaf, -1, np.asarray(tree.feature))
    rule = np.where(leaf, np.float32(0), le_threshold_as_lt(np.asarray(tree.threshold)))
    return (
        feature,
        rule,
        np.asarray(tree.left),
        np.asarray(tree.right),
        np.where(leaf, np.asarray(tree.positives), 0),
        np.where(leaf, np.asarray(tree.count), 1),
    )


def same(a: tuple[np.ndarray, ...], b: tuple[np.ndarray, ...]) -> bool:
    """Whether two :func:`published` trees are one: leaf fractions compared exactly."""
    if len(a[0]) != len(b[0]):
        return False
    if not all(np.array_equal(x, y) for x, y in zip(a[:4], b[:4], strict=True)):
        return False
    return bool(np.array_equal(a[4] * b[5], b[4] * a[5]))


def _key(tree: tuple[np.ndarray, ...]) -> bytes:
    return b"|".join(np.ascontiguousarray(a).tobytes() for a in tree)


def consistent_rows(
    before: DareForest, after: DareForest, deleted: Sequence[int], deadline: float | None = None
) -> Consistent:
    """The rows of ``before`` found consistent with ``after`` (module docstring), trying rows
    in id order until ``deadline`` (a ``time.monotonic()`` value; None: all)."""
    target = [published(tree) for tree in after._trees]
    ids = sorted(int(d) for d in deleted)
    if len(target) != before.n_trees or not _gives(before, ids, target):
        return Consistent((), False, False, 0, 0)
    trials = _Trials(before, ids, target)
    candidates = [r for r in before.remaining().tolist() if r not in set(ids)]
    found, tried = set(ids), 0
    for r in candidates:
        if deadline is not None and time.monotonic() > deadline:
            break
        tried += 1
        if any(trials.gives(r, d) for d in ids):
            found.add(r)
    exact = len(ids) == 1 and tried == len(candidates)
    return Consistent(tuple(sorted(found)), True, exact, tried, len(candidates))


def _gives(before: DareForest, ids: list[int], target) -> bool:
    """Whether deleting ``ids`` from a copy of ``before`` gives the trees ``target``."""
    trees = before.copy().delete(ids)._trees
    return all(same(published(tree), want) for tree, want in zip(trees, target, strict=True))


class _Trials:
    """Trials ``D - {d} + {r}`` on single trees, each tree with ``D - {d}`` deleted once."""

    def __init__(self, before: DareForest, ids: list[int], target) -> None:
        self.before, self.ids, self.target = before, ids, target
        self.forest = before.copy()
        grower = self.forest._grower()
        self.grower = Grower(grower.X, grower.y, grower.settings, _NoDraws(), grower.presorted)
        trees = self.forest._trees
        order = [t for t in range(len(trees)) if not same(published(trees[t]), target[t])]
        order += [t for t in range(len(trees)) if t not in set(order)]
        s = grower.settings
        if s.k is None and s.max_features == grower.X.shape[1] and s.random_depth == 0:
            # Nothing drawn, not even a seed's sample: a tree's update depends on its nodes
            # and rows alone, so trees alike before and after give one trial's answer.
            keys = [_key(published(trees[t])) + _key(target[t]) for t in order]
            order = [t for i, t in enumerate(order) if keys[i] not in keys[:i]]
        self.order = order
        self.bases: dict[tuple[int, int], Tree | None] = {}  # None: deleting needed a draw

    def gives(self, r: int, d: int) -> bool:
        """Whether deleting ``D - {d} + {r}`` gives ``after``."""
        try:
            for t in self.order:
                base = self._base(d, t)
                self.grower.warm(base, r)  # its copies start with the caches r's path reads
                tree = base.copy()
                self.grower.forget(tree, r)
                if not same(published(tree), self.target[t]):
                    return False
            return True
        except _Drew:
            rows = sorted([i for i in self.ids if i != d] + [r])
            return _gives(self.before, rows, self.target)

    def _base(self, d: int, t: int) -> Tree:
        """Tree ``t`` with the deleted rows but ``d`` deleted (raises :class:`_Drew`)."""
        if (d, t) not in self.bases:
            self.bases[d, t] = None
            tree = self.forest._trees[t]
            rest = [i for i in self.ids if i != d]
            if rest:
                tree = tree.copy()
                for i in rest:
                    self.grower.forget(tree, i)
            self.bases[d, t] = tree
        if self.bases[d, t] is None:
            raise _Drew("an earlier trial")
        return self.bases[d, t]
