"""A verified cap on what a deletion reveals: publish Mu', a tree ensemble whose footprint
``|Mu'(x) - Mo(x)|`` is at most ``tau`` on every input, proven.

Mu' clips each tree's change: ``Mu'_t(x) = Mo_t(x) + clip(Mu_t(x) - Mo_t(x), -c, c)``. Each
``Mu'_t`` is one tree, the product of ``Mo_t`` and ``Mu_t`` (:func:`product`): both are walked
together, so where they share their splits (a deletion retrains few subtrees) the product is
``Mo_t``'s shape; where they differ, one is grafted under the other's leaves, pruned to the box.
The footprint ``max_x |Mu'(x) - Mo(x)|`` is monotone in ``c`` and at most, per side, the sum
over trees of each tree's largest clipped change: ``c`` starts at the largest value where that
sum proves the cap, then grows by bisection while an engine's *upper* bound on the footprint
stays at most ``tau`` (a time limit gives a smaller ``c``, never a wrong bound).

Why clip and not interpolate (``Mo + a (Mu - Mo)``): interpolation keeps the order of
``|Mu - Mo|`` over rows, so an attacker that ranks rows by it is not slowed at all; clipping
makes the rows whose change was largest tie. Docs: docs/unlearning-leakage.md, "A verified cap".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from veritas_dsl.errors import UserError
from veritas_dsl.ir.query import Feature, Maximize, Minimize
from veritas_dsl.model.ensemble import Ensemble, as_inputs
from veritas_dsl.model.fractions import LIMIT, LeafFractions
from veritas_dsl.result import Termination
from veritas_dsl.solvers import registry
from veritas_dsl.unlearning.leakage import footprint_query, solve_query

#: ``c`` is a whole number of ``1 / (n_trees * 2**GRID)``: exact leaf fractions stay small.
GRID = 16
#: Footprints the bisection measures (two engine calls each: maximum and minimum), unless told.
DEFAULT_STEPS = 12


class CapError(UserError):
    """The two models cannot be capped, or the engine failed."""


@dataclass(frozen=True)
class Product:
    """The trees of ``Mo_t x Mu_t`` in preorder: at each leaf, the leaves ``before_leaf`` of
    ``Mo`` and ``after_leaf`` of ``Mu`` its box lies in (-1 at splits)."""

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    tree_offsets: np.ndarray
    before_leaf: np.ndarray
    after_leaf: np.ndarray


def product(before: Ensemble, after: Ensemble) -> Product:
    """The product trees of two ensembles with as many trees and features (see the module)."""
    nodes: list[list] = []  # feature, threshold, left, right, before leaf, after leaf
    offsets = [0]
    for ra, rb in zip(before.roots, after.roots, strict=True):
        low = np.full(before.n_features, -np.inf, dtype=np.float32)
        high = np.full(before.n_features, np.inf, dtype=np.float32)
        _walk(before, int(ra), after, int(rb), low, high, nodes)
        offsets.append(len(nodes))
    columns = list(zip(*nodes, strict=True))
    return Product(
        feature=np.array(columns[0], dtype=np.int32),
        threshold=np.array(columns[1], dtype=np.float32),
        left=np.array(columns[2], dtype=np.int32),
        right=np.array(columns[3], dtype=np.int32),
        tree_offsets=np.array(offsets, dtype=np.int64),
        before_leaf=np.array(columns[4], dtype=np.int64),
        after_leaf=np.array(columns[5], dtype=np.int64),
    )


def _walk(a: Ensemble, na: int, b: Ensemble, nb: int, low, high, nodes) -> int:
    """Append the product of ``a``'s subtree ``na`` and ``b``'s ``nb`` on the box
    ``low <= x < high``; return its root's index. A test the box decides is followed, not
    copied; a test both trees make at once is made once."""
    fa, fb = int(a.feature[na]), int(b.feature[nb])
    if fa < 0 and fb < 0:
        nodes.append([-1, 0.0, -1, -1, na, nb])
        return len(nodes) - 1
    f, t = (fa, a.threshold[na]) if fa >= 0 else (fb, b.threshold[nb])
    both = fa == fb and a.threshold[na] == b.threshold[nb]
    children = []
    for side in (a.left, b.left), (a.right, b.right):
        ca = int(side[0][na]) if fa >= 0 else na
        cb = int(side[1][nb]) if fb >= 0 and (both or fa < 0) else nb
        children.append((ca, cb))
    if t <= low[f]:  # every x of the box has x[f] >= t
        return _walk(a, children[1][0], b, children[1][1], low, high, nodes)
    if t >= high[f]:
        return _walk(a, children[0][0], b, children[0][1], low, high, nodes)
    node = len(nodes)
    nodes.append([f, float(t), -1, -1, -1, -1])
    saved = high[f]
    high[f] = t
    nodes[node][2] = _walk(a, children[0][0], b, children[0][1], low, high, nodes)
    high[f], saved = saved, low[f]
    low[f] = t
    nodes[node][3] = _walk(a, children[1][0], b, children[1][1], low, high, nodes)
    low[f] = saved
    return node


def _raw(model: Ensemble, nodes: np.ndarray) -> list[tuple[int, int]]:
    """The leaf values of ``nodes`` as the model's fractions hold them."""
    num, den = model.fractions.numerator[:, 0], model.fractions.denominator[:, 0]
    return [(int(num[n]), int(den[n])) for n in nodes]


def clipped(
    before: Ensemble,
    after: Ensemble,
    trees: Product,
    clip: Fraction,
    noise: dict[int, Fraction] | None = None,
) -> Ensemble:
    """Mu' for the product ``trees`` of ``before`` and ``after``: each leaf
    ``Mo_t + clip(Mu_t - Mo_t, -clip, clip) + noise``, exactly. ``noise`` maps product leaves
    to their draw
    (:func:`draw_noise`). A leaf unchanged and without noise keeps its model's own terms (so
    an unchanged tree without noise is ``before``'s bit for bit, and cancels)."""
    leaves = _leaves(before, after, trees)
    terms = [(0, 1)] * len(trees.feature)
    for k, (_, o, shift) in _shifts(leaves, clip, noise or {}).items():
        terms[k] = leaves[k].terms if shift == 0 else (o + shift).as_integer_ratio()
    if not all(abs(a) <= LIMIT and b <= LIMIT for a, b in terms):
        raise CapError(f"a capped leaf's fraction does not fit in 2**53 (c = {clip})")
    fractions = LeafFractions([a for a, _ in terms], [b for _, b in terms])
    return Ensemble(
        feature=trees.feature,
        threshold=trees.threshold,
        left=trees.left,
        right=trees.right,
        value=fractions.values(),
        tree_offsets=trees.tree_offsets,
        base_score=before.base_score,
        feature_names=before.feature_names,
        task=before.task,
        class_threshold=before.class_threshold,
        source=f"{after.source}, capped" + (", noisy" if noise else ""),
        fractions=fractions,
    )


@dataclass(frozen=True)
class _Leaf:
    """A product leaf: its tree, ``Mo_t``'s value there (and its terms as ``Mo`` holds them)
    and ``Mu_t - Mo_t``, exactly."""

    tree: int
    old: Fraction
    change: Fraction
    terms: tuple[int, int]


def _leaves(before: Ensemble, after: Ensemble, trees: Product) -> dict[int, _Leaf]:
    """Every leaf of the product ``trees``, by node."""
    at = np.flatnonzero(trees.feature < 0)
    old = _raw(before, trees.before_leaf[at])
    new = _raw(after, trees.after_leaf[at])
    tree = np.searchsorted(trees.tree_offsets, at, side="right") - 1
    return {
        int(k): _Leaf(int(t), Fraction(*o), Fraction(*n) - Fraction(*o), o)
        for k, t, o, n in zip(at, tree, old, new, strict=True)
    }


def _shifts(leaves, clip: Fraction, noise: dict[int, Fraction]) -> dict[int, tuple]:
    """Per product leaf ``(tree, Mo_t's value, Mu'_t - Mo_t)``: the change clipped to ``clip``,
    plus its noise. The noise is not held within ``[0, 1 / trees]``: held, a pure leaf (0 or
    ``1 / trees``) could move one way only, and the rows in many pure leaves (training rows,
    more than others) would stand out: bench/cap.py measured the attack's AUC rise with it."""
    return {
        k: (leaf.tree, leaf.old, max(-clip, min(clip, leaf.change)) + noise.get(k, Fraction(0)))
        for k, leaf in leaves.items()
    }


def draw_noise(trees: Product, share: Fraction, seed: int | None) -> dict[int, Fraction]:
    """Seeded noise for every leaf of the product ``trees``: a whole number of ``unit`` (see
    :func:`cap`) drawn uniformly in ``[-share / n_trees, share / n_trees]``, so that the noise
    of all trees together moves no input by more than ``share``."""
    n_trees = len(trees.tree_offsets) - 1
    unit = Fraction(1, n_trees * 2**GRID)
    top = math.floor(share / n_trees / unit)
    at = np.flatnonzero(trees.feature < 0)
    draws = np.random.default_rng(seed).integers(-top, top + 1, size=len(at))
    return {int(k): int(d) * unit for k, d in zip(at, draws, strict=True) if d}


@dataclass(frozen=True)
class Cap:
    """Mu' (``model``) and what is proven of its footprint over the inputs asked.

    Attributes
    ----------
    tau : float
        The cap asked for: ``footprint <= tau``.
    clip : float
        ``c``, the most one tree's change is allowed (in output units; ``uncapped``: none).
    footprint : float
        An upper bound on ``max_x |Mu'(x) - Mo(x)|``, at most ``tau``: the engine's, or the
        trees' own (:func:`_tree_bound`) when smaller or no engine ran.
    reached : float or None
        The largest ``|Mu'(x) - Mo(x)|`` at an input the engine found (None: no engine ran).
    proven : bool
        The engine proved both extremes optimal: ``footprint`` is then the maximum, to the
        engine's rounding.
    point : tuple of float or None
        An input where ``|Mu'(x) - Mo(x)| == reached``, evaluated on both models.
    uncapped : float
        The trees' bound on Mu's own footprint.
    changed_trees : int
        Trees where Mu differs from Mo.
    steps : int
        Footprints measured by the bisection (two engine calls each).
    noise : float
        The share of ``tau`` given to seeded noise in every leaf (0: none).
    seed : int or None
        The noise's seed (None: fresh entropy, or no noise).
    """

    model: Ensemble
    tau: float
    clip: float
    footprint: float
    reached: float | None
    proven: bool
    point: tuple[float, ...] | None
    uncapped: float
    changed_trees: int
    steps: int
    engine: str
    noise: float = 0.0
    seed: int | None = None

    def predict_proba(self, X) -> np.ndarray:
        """``[1 - Mu'(x), Mu'(x)]`` per row: Mu' as the attack of :mod:`.membership` reads it."""
        p = self.model.eval(as_inputs(X, self.model.n_features))
        return np.column_stack([1.0 - p, p])

    def to_dict(self) -> dict:
        return {
            "tau": self.tau,
            "clip": self.clip,
            "footprint": self.footprint,
            "reached": self.reached,
            "proven": self.proven,
            "point": None if self.point is None else list(self.point),
            "uncapped_footprint": self.uncapped,
            "changed_trees": self.changed_trees,
            "steps": self.steps,
            "engine": self.engine,
            "noise": self.noise,
            "seed": self.seed,
        }


@dataclass(frozen=True)
class _Measured:
    """The footprint of one Mu': an upper bound on ``max |Mu' - Mo|``, the best point found."""

    model: Ensemble
    upper: float
    reached: float | None
    proven: bool
    point: tuple[float, ...] | None


def cap(
    before: Ensemble,
    after: Ensemble,
    tau: float,
    *,
    engine: str = "astar",
    timeout_s: float | None = 10.0,
    steps: int = DEFAULT_STEPS,
    features: tuple[Feature, ...] | None = None,
    groups: tuple[tuple[int, ...], ...] = (),
    noise: float = 0.0,
    seed: int | None = None,
) -> Cap:
    """Mu' of ``before`` (Mo) and ``after`` (Mu) with ``|Mu'(x) - Mo(x)| <= tau`` over the
    inputs in the ``features``' domains and one-hot ``groups`` (default: every input). Both
    models are binary, of one output, with as many trees and features and one base score (a
    DaRE forest's ``to_ensemble()`` before and after a deletion). Raises :class:`CapError`.

    ``c`` starts where the trees' own extremes prove the cap (:func:`_tree_bound`: arithmetic,
    no engine), then grows by bisection while ``engine`` proves the footprint at most ``tau``:
    ``steps`` footprints measured (the last one of the Mu' returned; 0: no engine), each
    engine call limited to ``timeout_s`` (at a limit its upper bound still counts).

    ``noise`` (a share of ``tau``, in ``[0, 1)``): every leaf of every tree of Mu' also moves
    by seeded noise (:func:`draw_noise`, ``seed``; None: fresh entropy) of at most
    ``noise * tau`` over all trees together, drawn before ``c`` is chosen; the footprint proven
    is that of the noisy Mu' published. The noise makes every input's footprint a sum of many
    small draws, so the deleted rows' own changes no longer stand out (docs: "A noisy cap")."""
    _check(before, after, tau, engine, steps)
    if not (isinstance(noise, int | float) and 0 <= noise < 1):
        raise CapError(f"noise must be a share of tau in [0, 1), not {noise!r}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise CapError(f"seed must be a whole number >= 0, not {seed!r}")
    trees = product(before, after)
    leaves = _leaves(before, after, trees)
    spread = Fraction(noise) * Fraction(tau)
    jitter = draw_noise(trees, spread, seed) if noise else {}
    unit = Fraction(1, before.n_trees * 2**GRID)
    top = math.ceil(max((abs(leaf.change) for leaf in leaves.values()), default=0) / unit)

    def bound(m: int) -> float:
        return _tree_bound(_shifts(leaves, m * unit, jitter), before.n_trees, spread)

    def measure(m: int) -> _Measured:
        model = clipped(before, after, trees, m * unit, jitter)
        if steps == 0:
            return _Measured(model, bound(m), None, False, None)
        return _footprint(before, model, engine, timeout_s, features, groups, bound(m))

    good = _largest(0, top, lambda m: bound(m) <= tau)
    found, bad, used = {}, None if good == top else top, 0
    while bad is not None and bad - good > 1 and used < steps - 1:
        mid = (good + bad) // 2
        found[mid], used = measure(mid), used + 1
        good, bad = (mid, bad) if found[mid].upper <= tau else (good, mid)
    if good not in found:
        found[good], used = measure(good), used + (steps > 0)
    best = found[good]
    return Cap(
        model=best.model,
        tau=tau,
        clip=float(good * unit),
        footprint=best.upper,
        reached=best.reached,
        proven=best.proven,
        point=best.point,
        uncapped=_tree_bound(_shifts(leaves, unit * top, {}), before.n_trees, Fraction(0)),
        changed_trees=len({leaf.tree for leaf in leaves.values() if leaf.change}),
        steps=used,
        engine=engine if steps else "",
        noise=float(noise),
        seed=seed if noise else None,
    )


def _largest(good: int, bad: int, holds) -> int:
    """The largest ``m`` in ``[good, bad]`` where ``holds`` (monotone, true at ``good``)."""
    if holds(bad):
        return bad
    while bad - good > 1:
        mid = (good + bad) // 2
        good, bad = (mid, bad) if holds(mid) else (good, mid)
    return good


def _rounding(noise: Fraction) -> Fraction:
    """What rounding the two outputs to float64 may add to their exact difference: each is an
    exact sum rounded once (leaf fractions), of magnitude below ``M``, the power of two at least
    ``1 + noise`` (Mo's in [0, 1]; Mu''s clipped trees lie between Mo_t and Mu_t, and its noise
    adds at most ``noise``), so each errs by at most ``M * 2**-54``."""
    return Fraction(2 ** math.ceil(math.log2(1 + noise)), 2**53)


def _tree_bound(shifts: dict[int, tuple], n_trees: int, noise: Fraction) -> float:
    """A bound on ``max_x |Mu'(x) - Mo(x)|`` from each tree alone: per side, the sum over trees
    of the tree's largest shift (the most ``x`` can collect, if every tree's largest shift met
    in one box), plus what rounding the outputs adds (``noise``: the noise's largest sum)."""
    up, down = [Fraction(0)] * n_trees, [Fraction(0)] * n_trees
    for t, _, shift in shifts.values():
        up[t], down[t] = max(up[t], shift), max(down[t], -shift)
    if not any(up) and not any(down):  # every leaf is Mo's: one exact sum, rounded alike
        return 0.0
    exact = max(sum(up), sum(down)) + _rounding(noise)
    rounded = float(exact)
    return rounded if rounded >= exact else math.nextafter(rounded, math.inf)


def _check(before: Ensemble, after: Ensemble, tau: float, engine: str, steps: int) -> None:
    if not (isinstance(tau, int | float) and math.isfinite(tau) and tau >= 0):
        raise CapError(f"tau must be a number >= 0, not {tau!r}")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise CapError(f"steps must be a whole number >= 0, not {steps!r}")
    if engine not in registry.ENGINES or not registry.get(engine).available():
        raise CapError(f"engine {engine} is not available here")
    for model in before, after:
        if model.n_outputs != 1 or model.task != "binary" or model.fractions is None:
            raise CapError(
                f"{model.source} is not a forest of probabilities with exact leaf fractions "
                "(a DaRE forest's to_ensemble())"
            )
    if (before.n_trees, before.feature_names) != (after.n_trees, after.feature_names):
        raise CapError("the models have different tree counts or features")
    if not np.array_equal(before.base_score, after.base_score):
        raise CapError("the models have different base scores: a cap clips trees, not those")


def _footprint(before, model, engine, timeout_s, features, groups, known) -> _Measured:
    """Both extremes of ``model(x) - before(x)`` by ``engine``: an upper bound of their
    largest magnitude (the engine's, or ``known`` when smaller), and the input found where it
    is largest."""
    upper, reached, proven, point = 0.0, 0.0, True, None
    for goal, sign in (Maximize, 1.0), (Minimize, -1.0):
        query = footprint_query(before, model, goal, features, groups)
        result = solve_query(query, engine, timeout_s, True, CapError)
        bound = result.upper if sign > 0 else -result.lower
        upper = max(upper, bound + 0.0)
        proven = proven and result.termination == Termination.OPTIMAL
        if result.witnesses:
            x = as_inputs(result.witnesses[0].inputs["x"], before.n_features)
            value = abs(float(model.eval(x)[0] - before.eval(x)[0]))
            if point is None or value > reached:
                reached, point = value, tuple(float(v) for v in x[0])
    return _Measured(model, min(upper, known), reached, proven, point)


def capped_deletion(tau: float, noise: float = 0.0, **options):
    """An unlearning for :func:`~veritas_dsl.unlearning.membership.membership`: the forest's
    own deletion, published capped at ``tau`` (``options`` go to :func:`cap`; by default no
    engine runs, ``steps=0``: the trees' bound proves the cap, and a game plays many). With
    ``noise``, each publication draws its noise from the game's seed for it: fresh per
    deletion, and the attacker's shadows play the same mechanism with their own draws."""
    from veritas_dsl.unlearning.dare.derive import deleted

    options = {"steps": 0, **options}

    def unlearn(before, ids, seed: int) -> Cap:
        after = deleted(before, ids).to_ensemble()
        return cap(before.to_ensemble(), after, tau, noise=noise, seed=seed, **options)

    return unlearn
