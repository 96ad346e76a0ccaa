"""The kernels made ready (compiled, or loaded from Numba's cache) once per process, before any
time limit starts.

A kernel is compiled on its first call in a process, or loaded from the cache
(:mod:`veritas_dsl.jit`): cold, that takes tens of seconds on a loaded machine, loaded a second
or so, and the search itself often milliseconds. A limit bounds the engine's work, so
:func:`ready` runs every kernel Python calls on two tiny canned queries (a maximisation, and a
closest example under L1 with an output constraint), and repairs a point of the first, before the
engine's clock starts; on a wider model too when a query's boxes need int32.

The canned queries go through the same Python code as a real one (:func:`build_problem` and
:class:`Run`), and so call each kernel with the very types a real query passes (read-only model
arrays, the same tuples of arrays): a real query compiles nothing more
(``tests/solvers/test_astar_ready.py`` checks each kernel's signatures).
"""

from __future__ import annotations

import functools
import time

import numpy as np

from veritas_dsl.ir.query import (
    Feature,
    Maximize,
    MinimizeDistance,
    OutputAtom,
    OutputConstraint,
    OutputTerm,
    Query,
    Row,
)
from veritas_dsl.ir.reductions import Chain, MergeTies, StaticBounds
from veritas_dsl.model import Ensemble
from veritas_dsl.result import Termination
from veritas_dsl.solvers.astar import kernels as K
from veritas_dsl.solvers.astar.anytime import Run
from veritas_dsl.solvers.astar.problem import Plan, build_problem
from veritas_dsl.solvers.astar.repair import Repairer

#: Memory limit of the canned searches (they use a few kilobytes).
_MEMORY_BYTES = 64 << 20


def ready(wide: bool = False) -> float:
    """Make every kernel the engine calls ready in this process, and with ``wide`` also the
    search over int32 boxes (:func:`.search.box_dtype`: some variable has more than 256 cells;
    compiling it costs a cold cache another 15 s or so, which most models never need); the
    seconds this call took (about 0 once they are). Raises ``KeyboardInterrupt`` when Ctrl-C
    stopped it, and it is then tried again by the next call."""
    start = time.monotonic()
    _run_canned_queries(False)
    if wide:
        _run_canned_queries(True)
    return time.monotonic() - start


@functools.cache
def _run_canned_queries(wide: bool) -> None:
    model = widened(_canned_model()) if wide else _canned_model()
    features = (Feature("a"), Feature("b"))
    models = {"m": model}
    value = OutputTerm((OutputAtom(1.0, "m", "x"),))
    maximize = Query("ready", features, ("x",), models, goal=Maximize(value))
    closest = Query(
        "ready",
        features,
        ("x",),
        models,
        (OutputConstraint(value, ">=", 3.0),),
        MinimizeDistance("l1", "x", Row((0.0, 0.0))),
    )
    plans = (
        Plan(K.MODE_MAXIMIZE, objective=value, pair_trees="always"),  # compiles pair_gains
        Plan(K.MODE_DISTANCE, distance=closest.goal),
    )
    for query, plan in zip((maximize, closest), plans, strict=True):
        reduced, _ = Chain((MergeTies(), StaticBounds())).apply(query)
        problem = build_problem(reduced, plan)
        run = Run([problem], plan, time.monotonic(), None, None, _MEMORY_BYTES, None)
        if run.run().termination is Termination.INTERRUPTED:  # Run catches Ctrl-C
            raise KeyboardInterrupt
        if plan.mode == K.MODE_MAXIMIZE:  # the canned search ends before it repairs a point
            Repairer(problem).repaired({"x": np.zeros(2, dtype=np.float32)}, 1.0)


#: Splits of the widening tree: more cells than a uint8 box holds (:func:`.search.box_dtype`).
_WIDE_SPLITS = 300


def widened(model: Ensemble) -> Ensemble:
    """``model`` with one more tree, a chain of ``_WIDE_SPLITS`` splits on its first feature (one
    leaf off each), so that the search holds its boxes as int32
    (``tests/solvers/test_astar_ready.py`` widens its model the same way)."""
    n, k = model.n_nodes, _WIDE_SPLITS
    chain = n + 2 * np.arange(k)  # split i at node chain[i]; its leaf at chain[i] + 1
    feature = np.full(2 * k + 1, -1)
    feature[::2][:k] = 0
    threshold = np.zeros(2 * k + 1)
    threshold[::2][:k] = np.arange(k) + 0.5
    left = np.full(2 * k + 1, -1)
    left[::2][:k] = chain + 1
    right = np.full(2 * k + 1, -1)
    right[::2][:k] = chain + 2
    value = np.zeros((2 * k + 1, 1))
    value[1::2, 0] = np.arange(k) % 3
    return Ensemble(
        feature=np.concatenate([model.feature, feature]),
        threshold=np.concatenate([model.threshold, threshold]),
        left=np.concatenate([model.left, left]),
        right=np.concatenate([model.right, right]),
        value=np.concatenate([model.value, value]),
        tree_offsets=[*model.tree_offsets, n + 2 * k + 1],
        base_score=model.base_score,
        feature_names=model.feature_names,
        source="canned",
    )


def _canned_model() -> Ensemble:
    """Two trees of depth two over features ``a`` and ``b``, built as an importer builds one."""
    return Ensemble(
        feature=[0, -1, 1, -1, -1, 1, 0, -1, -1, -1],
        threshold=[1.0, 0.0, 2.0, 0.0, 0.0, 1.0, 2.0, 0.0, 0.0, 0.0],
        left=[1, -1, 3, -1, -1, 6, 7, -1, -1, -1],
        right=[2, -1, 4, -1, -1, 9, 8, -1, -1, -1],
        value=[[0.0], [1.0], [0.0], [3.0], [-2.0], [0.0], [0.0], [0.5], [4.0], [-1.0]],
        tree_offsets=[0, 5, 10],
        base_score=[0.0],
        feature_names=("a", "b"),
        source="canned",
    )
