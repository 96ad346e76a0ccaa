"""Shared fixtures: hand-built ensembles with answers known by hand, and small seeded models."""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import sys
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

from veritas_dsl.model import Ensemble

# `VER_TEST_WITHOUT_GUROBIPY=1 pytest ...` runs the tests as a plain `pip install .` would:
# gurobipy cannot be imported (our modules import it lazily), so `milp` solves on HiGHS.
# .ci/run runs the engine tests this way too.
if os.environ.get("VER_TEST_WITHOUT_GUROBIPY") == "1":
    sys.modules["gurobipy"] = None  # `import gurobipy` raises ImportError
# `VER_TEST_WITHOUT_XGBOOST=1`: XGBoost model files read without XGBoost, as a plain
# `pip install .` reads them (.ci/run runs the examples this way).
if os.environ.get("VER_TEST_WITHOUT_XGBOOST") == "1":
    sys.modules["xgboost"] = None

settings.register_profile(
    "ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", max_examples=25, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


def examples(weight: float) -> int:
    """``max_examples`` for a test worth ``weight`` times the profile's number of examples, so
    that every test follows the profile (``ci`` asks more of each than ``dev``)."""
    return max(1, round(weight * settings().max_examples))


#: Engines whose library is an optional dependency; every other engine must be available.
OPTIONAL_ENGINES = {"gurobi": "gurobipy with a licence"}


def require(engine) -> None:
    """Skip a test of an optional engine that cannot run here; fail for any other engine."""
    availability = engine.available()
    if availability:
        return
    if engine.name in OPTIONAL_ENGINES:
        needs = OPTIONAL_ENGINES[engine.name]
        pytest.skip(f"engine {engine.name} needs {needs} ({availability.value})")  # gurobi only
    pytest.fail(f"engine {engine.name} must run everywhere, but is {availability.value}")


@contextlib.contextmanager
def sigint_as_in_a_terminal():
    """Processes started meanwhile get SIGINT's default disposition, as a terminal's foreground
    job has. A shell starts a background command (`pytest ... &`) with SIGINT ignored; a child
    inherits that, and a test's Ctrl-C to it would be lost (the run went on to its time limit
    in every suite started so, and only there)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def group_ends(group: int, within_s: float = 120.0) -> bool:
    """Whether every process of ``group`` is gone (multiprocessing's resource tracker ends after
    the run, and is reaped by init). ``within_s`` only tells a process that stays from one slow
    to exit on a loaded machine: it returns as soon as they are gone."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.2)
    return False


def build(trees, n_features, base=0.0, task="regression", names=None) -> Ensemble:
    """An Ensemble from nested tuples: a leaf is a number or list; a split is (f, t, lo, hi)."""
    feature, threshold, left, right, value, offsets = [], [], [], [], [], [0]
    n_outputs = 1

    def outputs(leaf):
        return list(leaf) if isinstance(leaf, (list, tuple)) else [leaf]

    def first_leaf(node):
        while isinstance(node, tuple) and len(node) == 4 and isinstance(node[0], int):
            node = node[2]
        return node

    n_outputs = len(outputs(first_leaf(trees[0])))

    def add(node) -> int:
        index = len(feature)
        feature.append(-1)
        threshold.append(0.0)
        left.append(-1)
        right.append(-1)
        value.append([0.0] * n_outputs)
        if isinstance(node, tuple) and len(node) == 4 and isinstance(node[0], int):
            f, t, lo, hi = node
            feature[index], threshold[index] = f, t
            left[index] = add(lo)
            right[index] = add(hi)
        else:
            value[index] = outputs(node)
        return index

    for tree in trees:
        add(tree)
        offsets.append(len(feature))
    return Ensemble(
        feature=feature,
        threshold=threshold,
        left=left,
        right=right,
        value=value,
        tree_offsets=offsets,
        base_score=[base] * n_outputs if np.ndim(base) == 0 else base,
        feature_names=names or tuple(f"x{i}" for i in range(n_features)),
        task=task,
        source="hand-built",
    )


def random_forest(n_trees: int, depth: int, n_features: int, seed: int) -> Ensemble:
    """Complete trees of ``depth`` with random splits and leaf values (float32), seeded."""
    rng = np.random.default_rng(seed)
    feature, threshold, left, right, value, offsets = [], [], [], [], [], [0]

    def add(level: int) -> int:
        node = len(feature)
        feature.append(-1)
        threshold.append(0.0)
        left.append(-1)
        right.append(-1)
        value.append([0.0])
        if level < depth:
            feature[node] = int(rng.integers(n_features))
            threshold[node] = float(np.float32(rng.normal()))
            left[node] = add(level + 1)
            right[node] = add(level + 1)
        else:
            value[node] = [float(np.float32(rng.normal() * 0.1))]
        return node

    for _ in range(n_trees):
        add(0)
        offsets.append(len(feature))
    names = tuple(f"f{i}" for i in range(n_features))
    return Ensemble(
        feature=feature,
        threshold=threshold,
        left=left,
        right=right,
        value=value,
        tree_offsets=offsets,
        base_score=[0.0],
        feature_names=names,
        task="regression",
        source="random",
    )


@pytest.fixture
def astar_pace_fixed(monkeypatch) -> None:
    """A* with no clock in its path: every kernel call doubles the last (its sizing by time
    made huge) and nothing is repaired (a repair climbs for a share of the time searched), so
    where a run stops, and the incumbent it holds there, do not depend on the machine's speed."""
    from veritas_dsl.solvers.astar import anytime

    monkeypatch.setattr(anytime, "CALL_SECONDS", 1e9)
    monkeypatch.setattr(anytime, "LONGEST_CALL_SECONDS", 1e9)
    monkeypatch.setattr(anytime, "REPAIR_SHARE", 0.0)


@pytest.fixture
def two_trees() -> Ensemble:
    """Two trees over (x0, x1); the output by region is

    ===============  =========  ==========  ======
    region           x1 < 1     1 <= x1 < 2  x1 >= 2
    ===============  =========  ==========  ======
    x0 < 1           1.5        0           0
    1 <= x0 < 2      3.5        2           -3
    x0 >= 2          7          2           -3
    ===============  =========  ==========  ======
    """
    t0 = (0, 1.0, 1.0, (1, 2.0, 3.0, -2.0))
    t1 = (1, 1.0, (0, 2.0, 0.5, 4.0), -1.0)
    return build([t0, t1], 2)


@pytest.fixture
def one_hot_trees() -> Ensemble:
    """Bool features b0, b1, b2: b0 ? 5 : (b1 ? 2 : 0), plus b2 ? 3 : 1."""
    t0 = (0, 0.5, (1, 0.5, 0.0, 2.0), 5.0)
    t1 = (2, 0.5, 1.0, 3.0)
    return build([t0, t1], 3, names=("b0", "b1", "b2"))


pytest_plugins = ["pytester"]

#: Libraries a spec may load that cannot be imported twice in one process; and our checker, whose
#: public names (``veritas_dsl.load``, ``SpecError``) the package keeps once read: read first in
#: an inline run, they would check specs with the classes of modules that run then dropped.
_IMPORTED_ONCE = ("numba", "highspy", "xgboost", "sklearn", "skops.io", "veritas_dsl.spec")


@pytest.fixture(scope="session")
def _imported_once() -> None:
    """The libraries of :data:`_IMPORTED_ONCE` imported, and Numba's CPU target set up (it
    imports more of Numba on the first compile): a session fixture, so set up before any
    ``pytester``."""
    for name in _IMPORTED_ONCE:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    from numba import njit

    njit(lambda x: x + 1)(1)


@pytest.fixture
def pytester(_imported_once, pytester):
    """``pytester``, after :func:`_imported_once`. Its inline runs drop the modules imported
    meanwhile (they restore ``sys.modules``): an engine or a model format that first loaded
    one of those libraries in an inline run would leave every later test unable to import it
    (``import veritas_dsl`` loads none of them: tests/test_imports.py)."""
    return pytester
