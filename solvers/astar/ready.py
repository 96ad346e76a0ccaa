"""The kernels made ready (compiled, or loaded from Numba's cache) once per process, before any
time limit starts.

A kernel is compiled on its first call in a process, or loaded from the cache
(:mod:`veritas_dsl.jit`): cold, that takes seconds to tens of seconds, loaded a second or so,
and the search itself often milliseconds. A limit bounds the engine's work, so the engine makes
ready what a query will call before its clock starts: :func:`ready` without kinds the kernels
that build a problem (the trees' compaction), and the run, before it starts a search, the
search and repair of its :func:`kind`, and moves its clock on by the time that took
(:class:`Run`). The search is compiled once per kind, and only for the kinds a query runs: a
query without change counts or distances compiles none of their code
(:mod:`.kernels.feasibility`), and int32 boxes are rare.

A kind is made ready by a tiny canned query of that kind (a maximisation, or a closest example
under L1 with an output constraint; on a widened model for int32 boxes) that goes through the
same Python code as a real one (:func:`build_problem` and :class:`Run`), and so calls each
kernel with the very types a real query of its kind passes: a real query compiles nothing on
its clock (``tests/solvers/test_astar_ready.py``).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable

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
from veritas_dsl.solvers.astar.problem import Plan, Problem, build_problem
from veritas_dsl.solvers.astar.repair import Repairer
from veritas_dsl.solvers.astar.search import box_dtype

#: Memory limit of the canned searches (they use a few kilobytes).
_MEMORY_BYTES = 64 << 20


#: A kind of search: whether its boxes are int32 (:func:`.search.box_dtype`), and whether it has
#: resources (``Problem.lifted_resources``).
Kind = tuple[bool, bool]

#: Every kind, for ``ver warmup``.
KINDS: tuple[Kind, ...] = ((False, False), (False, True), (True, False), (True, True))


def describe(kind: Kind) -> str:
    """``kind`` in words."""
    wide, resources = kind
    boxes = "int32 boxes" if wide else "uint8 boxes"
    return f"{boxes}, {'with' if resources else 'without'} change counts or distances"


def kind(problem: Problem) -> Kind:
    """The kind of search ``problem`` runs."""
    return box_dtype(problem) == np.int32, problem.lifted_resources is not None


def ready(wanted: Iterable[Kind] = ()) -> float:
    """Make ready in this process the kernels that build a problem, and the search and repair
    of each kind ``wanted``; the seconds this call took (about 0 once they are). Raises
    ``KeyboardInterrupt`` when Ctrl-C stopped it, and it is then tried again by the next call."""
    start = time.monotonic()
    _build_canned_problem()
    for wide, resources in sorted(wanted):
        _run_canned_query(wide, resources)
    return time.monotonic() - start


@functools.cache
def _build_canned_problem() -> None:
    """Compiles the trees' compaction (pairs of trees too), which building any problem calls."""
    maximize, _ = _canned_queries(_canned_model())
    reduced, _ = Chain((MergeTies(), StaticBounds())).apply(maximize)
    build_problem(reduced, Plan(K.MODE_MAXIMIZE, objective=maximize.goal.term, pair_trees="always"))


@functools.cache
def _run_canned_query(wide: bool, resources: bool) -> None:
    model = widened(_canned_model()) if wide else _canned_model()
    maximize, closest = _canned_queries(model)
    if resources:
        query, plan = closest, Plan(K.MODE_DISTANCE, distance=closest.goal)
    else:  # pairs of trees, as a real maximisation may search (compiles pair_gains)
        query = maximize
        plan = Plan(K.MODE_MAXIMIZE, objective=maximize.goal.term, pair_trees="always")
    reduced, _ = Chain((MergeTies(), StaticBounds())).apply(query)
    problem = build_problem(reduced, plan)
    run = Run([problem], plan, time.monotonic(), None, None, _MEMORY_BYTES, None)
    if run.run().termination is Termination.INTERRUPTED:  # Run catches Ctrl-C
        raise KeyboardInterrupt
    # the canned search may end before it repairs a point
    Repairer(problem).repaired({"x": np.zeros(2, dtype=np.float32)}, 1.0)


def _canned_queries(model: Ensemble) -> tuple[Query, Query]:
    """A maximisation of ``model``, and a closest example under L1 with an output constraint."""
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
    return maximize, closest


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
