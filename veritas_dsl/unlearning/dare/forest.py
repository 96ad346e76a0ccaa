"""``DareForest``: a random forest that forgets training rows exactly (Brophy & Lowd, ICML 2021).

Binary labels, no bootstrap (every tree holds every row), Gini, ``x <= v`` goes left, a leaf's
value is its fraction of positives and the forest outputs the mean over its trees. Row ids are
the positions of the rows in the order given to :meth:`fit` then :meth:`add`; deleted ids stay
deleted. With ``random_depth=0, k=None, max_features=None`` the forest is deterministic and a
deletion gives the very forest a fit on the remaining rows gives, node for node; otherwise it
gives a forest distributed as such a fit (see :mod:`veritas_dsl.unlearning.dare.tree`).
"""

from __future__ import annotations

import copy as copying
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from veritas_dsl.model.errors import ModelError
from veritas_dsl.steps import step
from veritas_dsl.unlearning.dare import classes as classes_
from veritas_dsl.unlearning.dare.estimator import (
    CRITERIA,
    BaseEstimator,
    ClassifierMixin,
    NotFitted,
    check_feature_names,
    check_params,
    encode_labels,
    feature_count,
    feature_names,
    labels,
    matrix,
)
from veritas_dsl.unlearning.dare.splits import Presorted
from veritas_dsl.unlearning.dare.tree import Grower, Settings
from veritas_dsl.unlearning.dare.view import ForestView

if TYPE_CHECKING:
    from veritas_dsl.model.ensemble import Ensemble

#: The most rows :meth:`DareForest.delete` forgets one at a time. Beyond, updating each tree
#: once from its rows is cheaper where nodes flip on many deletions: on make_classification
#: (100_000, 40), 100 trees, one at a time took 70 s for 100 rows against 83 s at once, and
#: 668 s for 1,000 rows against 122 s (bench/dare_batch.py).
ONE_BY_ONE = 100


class DareForest(ClassifierMixin, BaseEstimator):
    """A data-removal-enabled random forest for binary classification, a scikit-learn
    classifier (:mod:`.estimator`).

    ``k`` thresholds are sampled per sampled attribute (None: every valid one); ``max_features``
    attributes are sampled per greedy node (:func:`~.estimator.feature_count`); the top
    ``random_depth`` levels are random nodes; ``max_depth`` None grows until the leaves are
    pure or too small. ``random_state``: a seed, None (fresh entropy) or a Generator, which the
    forest then draws from. :meth:`fit` and :meth:`add` return the forest; every method that
    raises :class:`ModelError` (a ValueError) leaves the forest as it was.
    """

    _members: list | None = None  # three or more classes: one binary forest per class

    def __init__(
        self,
        n_trees: int = 100,
        max_depth: int | None = 10,
        k: int | None = 10,
        random_depth: int = 0,
        max_features: int | float | str | None = "sqrt",
        min_samples_leaf: int = 1,
        random_state: int | np.random.Generator | None = 0,
        criterion: str = "gini",
    ) -> None:
        # Stored as given and checked at fit, as scikit-learn asks (set_params and clone rely
        # on it).
        self.n_trees, self.max_depth, self.k = n_trees, max_depth, k
        self.random_depth, self.max_features = random_depth, max_features
        self.min_samples_leaf, self.random_state = min_samples_leaf, random_state
        self.criterion = criterion

    def params(self) -> dict:
        """The constructor's arguments (``get_params()``)."""
        return self.get_params()

    def __sklearn_is_fitted__(self) -> bool:
        return getattr(self, "_X", None) is not None

    @property
    def last_deletion_cost(self) -> int:
        """Rows the last deletion re-examined (see :meth:`delete`); 0 after a fit."""
        self._fitted()
        return self._last_deletion_cost

    @last_deletion_cost.setter
    def last_deletion_cost(self, value: int) -> None:
        self._last_deletion_cost = value

    # -- training rows -----------------------------------------------------------------------

    @property
    def n_features(self) -> int:
        self._fitted()
        return self._X.shape[1]

    @property
    def n_rows(self) -> int:
        """Row ids handed out so far (deleted ones included)."""
        self._fitted()
        return len(self._X)

    def remaining(self) -> np.ndarray:
        """Ids of the rows not deleted, increasing."""
        self._fitted()
        return np.flatnonzero(self._alive)

    def training_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """Copies of the remaining rows (float32) and their labels (from ``classes_``), in id
        order."""
        keep = self.remaining()
        return self._X[keep].copy(), self.classes_[self._y[keep]]

    # -- fit, delete, add --------------------------------------------------------------------

    def fit(self, X, y) -> DareForest:
        """Grow the trees on ``X`` (cast to float32; a DataFrame's column names become
        ``feature_names_in_``) and labels ``y`` of two classes (``classes_``, sorted); forget
        any earlier fit and restart the random generator from ``random_state``."""
        check_params(self)
        names = feature_names(X)
        X, y_raw = _rows(X, y, None)
        classes, y = encode_labels(y_raw, None)
        self._rng = np.random.default_rng(self.random_state)  # an int: PCG64(random_state)
        self.classes_, self.n_features_in_ = classes, X.shape[1]
        if names is None:
            self.__dict__.pop("feature_names_in_", None)
        else:
            self.feature_names_in_ = names
        self._X, self._y, self._presorted = X, y, None
        self._alive = np.ones(len(X), dtype=bool)
        self.last_deletion_cost = 0
        self._members = classes_.fit_members(self, X, y) if len(classes) > 2 else None
        if self._members is not None:
            self._trees = []
            return self
        grower = self._grower()
        rows = np.arange(len(X))
        self._trees = []
        for t in range(self.n_trees):
            step(f"DaRE fit: tree {t + 1} of {self.n_trees}")
            self._trees.append(grower.grow(rows))
        return self

    def delete(self, indices) -> DareForest:
        """Forget the rows with these ids. Every id is checked first: a bad one raises before
        any tree changes. Up to ``ONE_BY_ONE`` rows are then forgotten one at a time in
        increasing id order, in place (only the deleted row travels down a tree,
        :meth:`Grower.forget`): ``delete([a, b])`` gives the forest ``delete([a])`` then
        ``delete([b])`` gives. More rows update each tree from its rows at once, which then
        costs less than growing a node again for every row whose deletion flips it; the
        choice depends on the count alone, so either way the result is distributed as a fit
        on the remaining rows, and is that very fit in the deterministic configuration.
        ``last_deletion_cost`` becomes the number of rows the trees re-examined by growing
        subtrees again (summed over the rows when one at a time): each node grown (or made a
        leaf) counts its rows, and a subtree grafted back from a memo (:mod:`.memo`) counts
        the rows of every node its update went through (chosen again from its rows)."""
        ids = self._deletable(indices)
        if self._members is not None:
            for member in self._members:
                member.delete(ids)
            self._alive[ids] = False
            self.last_deletion_cost = sum(m.last_deletion_cost for m in self._members)
            return self
        if len(ids) > ONE_BY_ONE:
            alive = self._alive.copy()
            alive[ids] = False
            self._change(alive, ids, adding=False)
        else:
            self._forget(ids)
        return self

    def deletion_cost(self, row: int) -> int:
        """The ``last_deletion_cost`` that ``delete([row])`` would give, exactly; the forest is
        left as it was (generator included). Costs about one walk of the row down each tree,
        plus the deletion itself on a copy of each tree where the walk stops early
        (:mod:`.trial`): :meth:`warm` a loaded forest first, or every tree stops early."""
        from veritas_dsl.unlearning.dare.trial import deletion_cost

        if self.multiclass:
            raise classes_.refuse("deletion_cost")
        return deletion_cost(self, int(self._deletable([row])[0]))

    def _deletable(self, indices) -> np.ndarray:
        """The ids ``indices``, checked: each exists and remains, and some row would remain."""
        self._fitted()
        ids = _ids(indices, len(self._X))
        dead = ids[~self._alive[ids]]
        if len(dead):
            raise ModelError(f"row {int(dead[0])} is already deleted")
        if len(ids) == int(self._alive.sum()):
            raise ModelError("deleting every remaining row would leave nothing to learn from")
        return ids

    def _forget(self, ids: np.ndarray) -> None:
        """Forget the rows ``ids`` (checked) one at a time, in place."""
        grower = self._grower()
        for k, r in enumerate(ids.tolist()):
            step(f"DaRE deletion: row {k + 1} of {len(ids)}")
            for tree in self._trees:
                grower.forget(tree, r)
            self._alive[r] = False
        self.last_deletion_cost = grower.cost

    def copy(self) -> DareForest:
        """An independent copy: editing either leaves the other as it is. Cheaper than
        ``copy.deepcopy`` (a fifth of the time on 100 trees of depth 10): the training rows and
        their sorted orders, which no edit changes in place, are shared."""
        self._fitted()
        other = copying.copy(self)  # parameters and fitted attributes, shared
        other._alive = self._alive.copy()
        if self._members is not None:
            other._members = [m.copy() for m in self._members]
            return other
        other._presorted = self._grower().presorted  # built once, for every copy
        other._trees = [tree.copy() for tree in self._trees]
        other._rng = copying.deepcopy(self._rng)
        return other

    def warm(self, indices) -> None:
        """Build the cached counts that deleting the rows ``indices`` would read and that are
        missing (a loaded forest builds them as deletions first pass), so that several copies
        deleting some of these rows follow them instead of each choosing again from rows. A
        cache is a function of its node's rows and seed: no answer changes."""
        self._fitted()
        ids = _ids(indices, len(self._X)).tolist()
        for member in self._members or ():
            member.warm(ids)
        if self._members is not None:
            return
        grower = self._grower()
        for tree in self._trees:
            for r in ids:
                grower.warm(tree, r)

    def add(self, X, y) -> DareForest:
        """Learn new rows; they get the next ids."""
        self._fitted()
        check_feature_names(self, X)
        X, y = _rows(X, y, self._X.shape[1])
        y = encode_labels(y, self.classes_)[1]
        ids = np.arange(len(self._X), len(self._X) + len(X))
        old = (self._X, self._y, self._alive)
        self._X = np.concatenate([self._X, X])
        self._y = np.concatenate([self._y, y])
        alive = np.concatenate([self._alive, np.ones(len(X), dtype=bool)])
        self._alive = np.concatenate([self._alive, np.zeros(len(X), dtype=bool)])
        try:
            if self._members is not None:
                self._add_to_members(X, y)
                self._alive = alive
            else:
                self._change(alive, ids, adding=True)
        except BaseException:
            self._X, self._y, self._alive = old
            raise
        return self

    def _add_to_members(self, X: np.ndarray, codes: np.ndarray) -> None:
        """Add the rows to every member, all or nothing (copies are edited)."""
        self._members = [
            m.copy().add(X, (codes == c).astype(np.int8)) for c, m in enumerate(self._members)
        ]

    def _change(self, alive: np.ndarray, touched: np.ndarray, adding: bool) -> None:
        """Update every tree to the rows ``alive`` from its rows (each node on the way chosen
        again from them); all or nothing (a copy is updated)."""
        grower = self._grower()
        rows = np.flatnonzero(alive)
        rng_state = self._rng.bit_generator.state
        trees = []
        try:
            for t, tree in enumerate(self._trees):
                step(f"DaRE {'addition' if adding else 'deletion'} of {len(touched)} rows: tree "
                     f"{t + 1} of {len(self._trees)}")
                copy = tree.copy()
                grower.update(copy, rows, np.sort(touched), adding)
                trees.append(copy)
        except BaseException:
            self._rng.bit_generator.state = rng_state
            raise
        self._trees, self._alive = trees, alive
        if not adding:
            self.last_deletion_cost = grower.cost

    def _grower(self) -> Grower:
        # No depth limit is a limit no tree reaches: a split leaves a row on each side.
        depth = len(self._X) if self.max_depth is None else self.max_depth
        settings = Settings(
            max_depth=depth,
            k=self.k,
            random_depth=self.random_depth,
            max_features=feature_count(self.max_features, self._X.shape[1]),
            min_samples_leaf=self.min_samples_leaf,
            criterion=CRITERIA[self.criterion],
        )
        if self._presorted is None or self._presorted.order.shape[1] != len(self._X):
            self._presorted = Presorted.of(self._X, self._y)
        return Grower(self._X, self._y, settings, self._rng, self._presorted)

    @property
    def multiclass(self) -> bool:
        """Whether the forest learns three or more classes (:mod:`.classes`)."""
        self._fitted()
        return self._members is not None

    def _fitted(self) -> None:
        if not self.__sklearn_is_fitted__():
            raise NotFitted("the forest is not fitted yet: call fit(X, y) first")

    # -- outputs -----------------------------------------------------------------------------

    def view(self) -> ForestView:
        """The trees as they are now, frozen (later deletions do not change it)."""
        if self.multiclass:
            raise classes_.refuse("view()")
        return ForestView.of(self._trees, self._X.shape[1])

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities, shape ``(n, 2)``, columns in ``classes_`` order: column 1 is
        the mean over trees of the fraction of the second class in the leaf ``x`` reaches
        (``X`` is cast to float32)."""
        self._fitted()
        check_feature_names(self, X)
        X = matrix(X, self.n_features_in_)
        if self._members is not None:
            return classes_.probabilities(self._members, X)
        return self.view().predict_proba(X)

    def predict(self, X) -> np.ndarray:
        """The class of each row: the second class where its probability is above 0.5, as the
        exported Ensemble decides (a tie goes to the first)."""
        p = self.predict_proba(X)
        if p.shape[1] > 2:
            return self.classes_[np.argmax(p, axis=1)]
        return self.classes_[(p[:, 1] > 0.5).astype(np.int64)]

    def to_ensemble(self) -> Ensemble:
        """The forest as a binary :class:`Ensemble` whose ``eval`` is ``predict_proba[:, 1]``,
        its features named by ``feature_names_in_`` (``f0, f1, ...`` without)."""
        from veritas_dsl.model.ensemble import Ensemble

        names = getattr(self, "feature_names_in_", None)
        if self.multiclass:
            return classes_.to_ensemble(self._members, None if names is None else tuple(names))
        return self.view().to_ensemble(Ensemble, names=None if names is None else tuple(names))

    # -- files -------------------------------------------------------------------------------

    def save(self, path: str | Path) -> None:
        """Write the forest to an ``.npz`` file (no pickle), see :mod:`.store`."""
        from veritas_dsl.unlearning.dare.store import save

        if self.multiclass:
            raise classes_.refuse("save")
        save(self, path)

    @classmethod
    def load(cls, path: str | Path) -> DareForest:
        """Read a forest written by :meth:`save`; a corrupt or foreign file is a ModelError."""
        from veritas_dsl.unlearning.dare.store import load

        return load(cls, path)


def _rows(X, y, width: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Validated float32 rows and their labels, as given."""
    if y is None:
        raise ModelError("DareForest requires y to be passed, but the target y is None")
    X = matrix(X, width)
    return X, labels(y, len(X))


def _ids(indices, n: int) -> np.ndarray:
    ids = np.atleast_1d(np.asarray(indices))
    if ids.ndim != 1 or len(ids) == 0 or not np.issubdtype(ids.dtype, np.integer):
        raise ModelError(f"rows to delete must be a non-empty list of integer ids, not {indices!r}")
    out = np.flatnonzero((ids < 0) | (ids >= n))
    if len(out):
        raise ModelError(f"row {int(ids[out[0]])} does not exist (ids run from 0 to {n - 1})")
    unique, counts = np.unique(ids, return_counts=True)
    if np.any(counts > 1):
        raise ModelError(f"row {int(unique[counts > 1][0])} is listed twice")
    return unique.astype(np.int64)
