"""examples/recourse.ver keeps its promises: each certified counterfactual (found on
`worst_case(before, deletions = 3)`) is still granted by the shipped forest after deleting any 3
of its training rows: checked on random sets and on the rows most likely to undo it (the
positive rows nearest to it, which share its leaves), by the deleted forest's predict_proba; and
each robust one (granted by every model of the family V) is granted by the forest as it is."""

from __future__ import annotations

import copy
import functools
from pathlib import Path

import numpy as np

from veritas_dsl import parse
from veritas_dsl.result import Termination
from veritas_dsl.unlearning import DareForest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@functools.cache
def _runs() -> tuple:
    path = EXAMPLES / "recourse.ver"
    return tuple(parse(path.read_text(), str(path)).run(jobs=1))


def _witnesses(query: str) -> np.ndarray:
    runs = [r for r in _runs() if r.name.startswith(f"{query}[")]
    assert len(runs) >= 3
    found = []
    for run in runs:
        assert run.result.termination is Termination.OPTIMAL, run.name
        found.append(np.asarray(run.result.witnesses[0].inputs["x"], dtype=np.float32))
    return np.array(found)


def test_robust_counterfactuals_are_granted_by_the_forest_as_it_is():
    forest = DareForest.load(EXAMPLES / "models" / "recourse.dare")
    assert np.all(forest.predict_proba(_witnesses("robust"))[:, 1] > 0.5)


def test_certified_counterfactuals_survive_deleting_three_rows():
    forest = DareForest.load(EXAMPLES / "models" / "recourse.dare")
    points = _witnesses("certified")
    assert np.all(forest.predict_proba(points)[:, 1] > 0.5)
    X, y = forest.training_rows()
    ids = forest.remaining()
    scale = np.median(np.abs(X - np.median(X, axis=0)), axis=0)
    scale[scale == 0] = 1
    sets = []
    positives = ids[y == 1]
    for x in points:  # the positives nearest to x: deleting them lowers x's leaves the most
        near = np.argsort((np.abs(X[y == 1] - x) / scale).sum(axis=1), kind="stable")
        sets.append(positives[near[:3]])
    rng = np.random.default_rng(0)
    sets += [rng.choice(ids, size, replace=False) for size in (1, 2, 3) for _ in range(10)]
    for rows in sets:
        after = copy.deepcopy(forest).delete(sorted(rows.tolist()))
        assert np.all(after.predict_proba(points)[:, 1] > 0.5), rows
