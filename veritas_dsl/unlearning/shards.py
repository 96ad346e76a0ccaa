"""``ShardedForest``: DaRE forests on disjoint shards, published through a private vote.

Adaptive-safe publishing in the manner of Gupta, Jung, Neel, Roth, Sharifi-Malvajerdi and Waites
(NeurIPS 2021). A deletion is exact only against requests chosen independently of the forest's
internal randomness; a requester who reads what is published can correlate their requests with
it. Here the training rows are split into ``n_shards`` disjoint shards, each learnt by its own
:class:`DareForest` with its own seed, and the only thing published is a label per input, drawn
by the exponential mechanism from the shards' votes. What that buys, with its parameters:

- **The randomness protected**: the shards' seeds ``r = (r_1, ..., r_k)``, drawn afresh at each
  draw. Changing one ``r_i`` changes one shard's forest, whatever the rows and the requests, so
  one vote. The shard of a row is a public function of ``partition_seed`` and the row's id, not
  part of ``r``: a fit from scratch on the remaining rows uses the same shards.
- **Each published label** is ``epsilon``-differentially private in ``r`` (one vote moves each
  count by at most 1; the exponential mechanism with that sensitivity), and the labels published
  since the last draw are ``spent``-private by basic composition, ``spent <= budget``
  (:class:`Accountant`). Once the next label would overrun the budget, every shard is fitted
  again on its remaining rows with fresh seeds (a *draw*), the noise gets a fresh seed and the
  budget starts again: what was published before is independent of the new ``r``.
- **Deletion**: a row is forgotten by its shard's forest alone; the shard's forest is then the
  fit on its remaining rows, node for node in the deterministic configuration and in
  distribution otherwise (:mod:`.dare.forest`), so the sharded forest is, for requests chosen
  without reading ``r``, distributed as a fit from scratch on the remaining rows. Gupta et al.
  show that such a guarantee carries over to adaptive requesters when what they read is
  differentially private in ``r`` (through the max-information between ``r`` and the requests);
  here, by group privacy over the ``k`` seeds, the shards given every request are within a
  factor ``exp(k * spent)`` of such a fit, either way (:meth:`ShardedForest.adaptive_bound`).
  That is a real bound only where ``k * budget`` is about 1 or less: each label is then close to
  a coin toss (the bench ``bench/dare_shards.py`` measures both sides of the trade).

Not covered: what the labels reveal about the training rows themselves (the mechanism is private
in the seeds, not in the data); anything published besides the labels (the votes, the forests, or
timing that reveals when a draw happens); floating-point artefacts of the noise. Deterministic
for an integer ``random_state``; it must be secret for the guarantee (``None``: fresh entropy).
"""

from __future__ import annotations

import copy
from fractions import Fraction

import numpy as np

from veritas_dsl.model.errors import ModelError
from veritas_dsl.unlearning.dare.estimator import check_params
from veritas_dsl.unlearning.dare.forest import DareForest, _ids, _rows
from veritas_dsl.unlearning.dare.view import _inputs


class Accountant:
    """The privacy spent since the last draw, by basic composition: the sum of the published
    answers' epsilons, never above ``budget``. Sums are exact: each epsilon counts as the decimal
    it prints as (``0.1`` is 1/10), so ten answers at 0.1 fit a budget of 1."""

    def __init__(self, budget: float) -> None:
        self.budget = _positive("budget", budget)
        self.spent = Fraction(0)
        self.answers = 0  # published since the last draw
        self.draws = 0  # draws after the first fit

    def room(self, epsilon: float) -> int:
        """How many more answers at ``epsilon`` fit before the next draw."""
        return int((_exact(self.budget) - self.spent) // _exact(epsilon))

    def spend(self, epsilon: float, answers: int = 1) -> None:
        if answers > self.room(epsilon):
            raise ModelError(f"{answers} answers at epsilon {epsilon} overrun the budget")
        self.spent += answers * _exact(epsilon)
        self.answers += answers

    def redraw(self) -> None:
        self.spent, self.answers = Fraction(0), 0
        self.draws += 1


def vote_probability(votes: np.ndarray, n_shards: int, epsilon: float) -> np.ndarray:
    """The exponential mechanism's probability of answering 1, where ``votes`` shards vote 1 and
    the others 0: ``exp(eps * votes / 2)`` against ``exp(eps * (n_shards - votes) / 2)``, the
    count of a class being its score, of sensitivity 1. Written with tanh, which neither
    overflows nor stops short of 0 and 1 exactly for a large ``epsilon``."""
    margin = 2 * np.asarray(votes, dtype=np.float64) - n_shards
    return 0.5 + 0.5 * np.tanh(epsilon * margin / 4)


class ShardedForest:
    """``n_shards`` DaRE forests on disjoint shards of the rows; labels published privately.

    ``epsilon``: the privacy of one published label in the shards' seeds; ``budget``: what the
    labels published between two draws may spend (basic composition); ``partition_seed``: the
    public seed of the rows' shards; ``random_state``: the secret seed of the shards' seeds and
    of the noise (``None``: fresh entropy); ``forest``: each shard's :class:`DareForest` settings.
    Methods that raise :class:`ModelError` leave the forest as it was.
    """

    def __init__(
        self,
        n_shards: int = 5,
        epsilon: float = 1.0,
        budget: float = 100.0,
        random_state: int | None = 0,
        partition_seed: int = 0,
        **forest,
    ) -> None:
        if isinstance(n_shards, bool) or not isinstance(n_shards, (int, np.integer)):
            raise ModelError(f"n_shards must be an integer >= 1, not {n_shards!r}")
        if n_shards < 1:
            raise ModelError(f"n_shards must be an integer >= 1, not {n_shards!r}")
        self.n_shards, self.partition_seed = int(n_shards), partition_seed
        self.epsilon = _positive("epsilon", epsilon)
        if _exact(self.epsilon) > _exact(_positive("budget", budget)):
            raise ModelError(f"epsilon {epsilon} is above the budget {budget}: no answer fits")
        check_params(DareForest(**forest, random_state=0))
        self.forest = dict(forest)
        if random_state is not None:
            check_params(DareForest(random_state=random_state))  # an integer >= 0
        else:
            random_state = np.random.SeedSequence().entropy
        self.random_state = random_state
        self.accountant = Accountant(budget)
        self._shards: list[DareForest] = []
        self._ids: list[np.ndarray] = []  # per shard, the global id of each local row id
        self._X: np.ndarray | None = None

    # -- fit, delete, draw -------------------------------------------------------------------

    def fit(self, X, y, shard=None) -> ShardedForest:
        """Fit a forest per shard. ``shard`` gives each row's shard (``0 .. n_shards - 1``);
        None: a balanced assignment from ``partition_seed`` (a seeded permutation of the ids,
        dealt round the shards). Resets the budget and the draws."""
        X, y = _rows(X, y, None)
        if len(np.unique(y)) > 2:  # the shards vote for one class of two
            raise ModelError("ShardedForest learns two classes; y holds more")
        if shard is None:
            order = np.random.default_rng(self.partition_seed).permutation(len(X))
            shard = np.empty(len(X), dtype=np.int64)
            shard[order] = np.arange(len(X)) % self.n_shards
        shard = np.asarray(shard)
        if shard.shape != (len(X),) or not np.issubdtype(shard.dtype, np.integer):
            raise ModelError(f"shard must give one integer per row ({len(X)}), not {shard!r}")
        if len(shard) and (shard.min() < 0 or shard.max() >= self.n_shards):
            raise ModelError(f"shard ids must run from 0 to {self.n_shards - 1}")
        ids = [np.flatnonzero(shard == i) for i in range(self.n_shards)]
        for i, rows in enumerate(ids):
            if len(np.unique(y[rows])) < 2:
                raise ModelError(
                    f"shard {i} holds {len(rows)} rows and not both classes: "
                    "use fewer shards or more rows"
                )
        self._X, self._y, self._shard = X, y, shard.astype(np.int64)
        self._alive = np.ones(len(X), dtype=bool)
        self._ids = ids
        self.accountant = Accountant(self.accountant.budget)
        self._draw()
        return self

    def _draw(self) -> None:
        """Fit every shard on its remaining rows with the seeds of draw ``accountant.draws``.
        A shard left with one class keeps its forest: every tree is then one leaf holding its
        rows, which no seed changes."""
        seeds = np.random.SeedSequence(self.random_state, spawn_key=(self.accountant.draws,))
        children = seeds.spawn(self.n_shards + 1)
        shards, ids = [], []
        for i in range(self.n_shards):
            rows = np.flatnonzero(self._alive & (self._shard == i))
            if len(np.unique(self._y[rows])) < 2:
                shards.append(self._shards[i])
                ids.append(self._ids[i])
                continue
            seed = int(children[i].generate_state(1)[0])
            forest = DareForest(**self.forest, random_state=seed)
            shards.append(forest.fit(self._X[rows], self._y[rows]))
            ids.append(rows)
        self._shards, self._ids = shards, ids
        self._noise = np.random.Generator(np.random.PCG64(children[self.n_shards]))

    def redraw(self) -> None:
        """Fit every shard again on its remaining rows with fresh seeds, draw a fresh noise seed
        and start the budget again (done by :meth:`predict` when the budget runs out)."""
        self._fitted()
        self.accountant.redraw()
        self._draw()

    def delete(self, indices) -> ShardedForest:
        """Forget the rows with these (global) ids, each in its shard's forest alone; the other
        shards are not touched. Every id is checked first (exists, remains, listed once, and
        some row would remain in its shard)."""
        self._fitted()
        ids = _ids(indices, len(self._X))
        dead = ids[~self._alive[ids]]
        if len(dead):
            raise ModelError(f"row {int(dead[0])} is already deleted")
        for i in np.unique(self._shard[ids]).tolist():
            left = np.setdiff1d(np.flatnonzero(self._alive & (self._shard == i)), ids)
            if len(left) == 0:
                raise ModelError(f"deleting these rows would leave shard {i} with no row")
        for i in np.unique(self._shard[ids]).tolist():
            mine = ids[self._shard[ids] == i]
            self._shards[i].delete(np.searchsorted(self._ids[i], mine))
        self._alive[ids] = False
        return self

    def add(self, X, y) -> ShardedForest:
        """Learn new rows; they get the next global ids, and the row of id ``g`` goes to shard
        ``g % n_shards`` (public, like ``partition_seed``), where its shard's forest adds it
        exactly (:meth:`DareForest.add`: the shard's refit with the rows). Publishes nothing, so
        it neither spends the budget nor draws again: :meth:`adaptive_bound` holds as before,
        the shards being a function of the same seeds and the rows, as after a deletion."""
        self._fitted()
        X, y = _rows(X, y, self._X.shape[1])
        ids = np.arange(len(self._X), len(self._X) + len(X))
        shard = ids % self.n_shards
        shards = [forest.copy() for forest in self._shards]  # all or nothing
        for i in np.unique(shard).tolist():
            shards[i].add(X[shard == i], y[shard == i])
        self._shards = shards
        self._ids = [np.concatenate([self._ids[i], ids[shard == i]]) for i in range(self.n_shards)]
        self._X = np.concatenate([self._X, X])
        self._y = np.concatenate([self._y, y])
        self._shard = np.concatenate([self._shard, shard])
        self._alive = np.concatenate([self._alive, np.ones(len(X), dtype=bool)])
        return self

    # -- outputs -----------------------------------------------------------------------------

    def votes(self, X) -> np.ndarray:
        """How many shards vote 1 on each row of ``X`` (a shard at a tie, probability exactly
        0.5, gives half a vote). Not private: publish :meth:`predict`'s labels, not these."""
        self._fitted()
        X = _inputs(X, self._X.shape[1])
        total = np.zeros(len(X))
        for forest in self._shards:
            p = forest.predict_proba(X)[:, 1]
            total += np.where(p > 0.5, 1.0, np.where(p == 0.5, 0.5, 0.0))
        return total

    def predict(self, X, epsilon: float | None = None) -> np.ndarray:
        """Labels to publish, one per row of ``X``, each drawn by the exponential mechanism at
        ``epsilon`` (None: the forest's) and charged to the budget; when the next label would
        overrun it, the shards are drawn again first (:meth:`redraw`)."""
        self._fitted()
        epsilon = self.epsilon if epsilon is None else _positive("epsilon", epsilon)
        if _exact(epsilon) > _exact(self.accountant.budget):
            raise ModelError(f"epsilon {epsilon} is above the budget: no answer fits")
        X = _inputs(X, self._X.shape[1])  # checked before any draw
        labels = np.empty(len(X), dtype=np.int8)
        start = 0
        while start < len(X):
            room = self.accountant.room(epsilon)
            if room == 0:
                self.redraw()
                continue
            stop = min(len(X), start + room)
            p = vote_probability(self.votes(X[start:stop]), self.n_shards, epsilon)
            labels[start:stop] = self._noise.random(stop - start) < p
            self.accountant.spend(epsilon, stop - start)
            start = stop
        return labels

    def predict_proba(self, X) -> np.ndarray:
        """``[1 - p, p]`` per row, ``p`` the probability that :meth:`predict` publishes 1 there
        now: the mechanism's output distribution, what an attacker who could ask without limit
        would learn (the membership attack reads it, :mod:`.membership`). It spends no budget
        and is not private itself: publish :meth:`predict`'s labels, not these."""
        p = vote_probability(self.votes(X), self.n_shards, self.epsilon)
        return np.column_stack([1.0 - p, p])

    def adaptive_bound(self) -> float:
        """``n_shards * spent``: for any set ``E`` of forests, the probability that the shards
        are in ``E`` given every request and label since the last draw is within a factor
        ``exp(adaptive_bound())`` (either way) of the probability that a fit from scratch on
        the remaining rows (the same shards, fresh seeds) is in ``E``. By group privacy: the
        labels are ``spent``-private in each seed, so in all ``n_shards`` at once to within
        ``n_shards * spent``, and so are the requests made from them; for requests fixed in
        advance, the shards are distributed as such a fit (DaRE's deletions are exact)."""
        self._fitted()
        return self.n_shards * float(self.accountant.spent)

    # -- rows and shards ---------------------------------------------------------------------

    def params(self) -> dict:
        """The constructor's arguments (each shard's forest settings among them)."""
        return {
            "n_shards": self.n_shards,
            "epsilon": self.epsilon,
            "budget": self.accountant.budget,
            "random_state": self.random_state,
            "partition_seed": self.partition_seed,
            **self.forest,
        }

    def copy(self) -> ShardedForest:
        """An independent copy: shards, budget spent and noise generator included."""
        self._fitted()
        return copy.deepcopy(self)

    @property
    def n_features(self) -> int:
        self._fitted()
        return self._X.shape[1]

    def training_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """Copies of the remaining rows (float32) and their labels, in id order."""
        keep = self.remaining()
        return self._X[keep].copy(), self._y[keep].copy()

    @property
    def n_rows(self) -> int:
        self._fitted()
        return len(self._X)

    def remaining(self) -> np.ndarray:
        """Ids of the rows not deleted, increasing."""
        self._fitted()
        return np.flatnonzero(self._alive)

    def shard_of(self) -> np.ndarray:
        """Each row's shard (deleted rows included), a copy."""
        self._fitted()
        return self._shard.copy()

    def shard(self, i: int) -> DareForest:
        """Shard ``i``'s forest (its row ids are the positions of its rows among the shard's
        remaining rows at the last draw, see :meth:`shard_ids`)."""
        self._fitted()
        return self._shards[i]

    def shard_ids(self, i: int) -> np.ndarray:
        """The global id of each of shard ``i``'s local row ids."""
        self._fitted()
        return self._ids[i].copy()

    def save(self, path) -> None:
        """Write the forest to one file (no pickle), see :mod:`.shard_store`. The file holds the
        secret ``random_state``: whoever reads it can predict every draw and the noise."""
        from veritas_dsl.unlearning.shard_store import save

        self._fitted()
        save(self, path)

    @classmethod
    def load(cls, path) -> ShardedForest:
        """Read a forest written by :meth:`save`; a damaged or foreign file is a ModelError."""
        from veritas_dsl.unlearning.shard_store import load

        return load(cls, path)

    def _fitted(self) -> None:
        if self._X is None:
            raise ModelError("the forest is not fitted yet: call fit(X, y) first")


def _positive(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ModelError(f"{name} must be a positive number, not {value!r}")
    if not (np.isfinite(value) and value > 0):
        raise ModelError(f"{name} must be a positive number, not {value!r}")
    return float(value)


def _exact(value: float) -> Fraction:
    """The decimal ``value`` prints as, exactly (repr gives the shortest round-trip decimal)."""
    return Fraction(repr(float(value)))
