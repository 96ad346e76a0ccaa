"""What a one-query spec costs end to end, against dtai-veritas's load + search, in one process.

    pip install dtai-veritas==0.3.1      # for this benchmark only; never a dependency
    python bench/spec_overhead.py [--models breast,digits,credit] [--repeats 7]

The small models of ``bench/astar_vs_veritas.py`` (breast cancer 100 x 6, digits 2 vs 6 200 x 4,
credit-like 50 x 4, trained by ``bench/veritas_suite.py``) are saved as XGBoost JSON files, and
each gets two one-query specs: the global maximum of the margin, and the closest L-inf example
that changes the class of one row (the data's last). Both sides run in this process after a
warm-up (compiled kernels, imported libraries: a process's first spec pays those once, see
``bench/cold_start.py``), and each figure is the median CPU time (``time.process_time``) of
``--repeats`` runs:

* **ours, end to end**: ``veritas_dsl.load`` (parse, read the model file, check, lower) and
  ``Spec.run`` (solve, validate the witness with XGBoost), with the process's model cache emptied
  before each run, so that every run reads its model file as a first spec does; ``again``: the
  same with the model cached (a second spec on the same file in a pytest session);
* **ours, engine**: the A* engine's ``solve`` of the spec's query on a freshly loaded model, after
  its per-model build (the cells and compacted trees of the model under the features' box,
  :meth:`AStarEngine.prepare`), which is shown apart (``build``), as dtai-veritas's per-model
  conversion (``get_addtree``) is not in its search time either;
* **theirs, load + search**: ``xgboost.Booster(model_file=...)``, ``get_addtree``, and the search
  (plain A*, ``focal_eps`` 1, stepped until optimal, as ``bench/astar_vs_veritas.py``; for the
  closest example ``VeritasRobustnessSearch``, which bisects the radius and returns a bracket,
  not the distance); **theirs, search**: the search alone.

The ratios printed are ours / theirs: end to end against load + search (issue 40's target: at
most 3), engine against search (target: at most 1). What is not covered: the process's start
(imports, kernels loaded from the cache: ``bench/cold_start.py``), and models bigger than these.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import veritas_dsl
from veritas_dsl.model import load as model_load
from veritas_dsl.result import Termination
from veritas_dsl.solvers.astar.engine import AStarEngine
from veritas_dsl.solvers.base import Limits

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from veritas_suite import SUITE, dataset, train

TIMEOUT_S = 60.0


def cpu(call) -> tuple[float, object]:
    """``(CPU seconds, value)`` of ``call()``."""
    start = time.process_time()
    value = call()
    return time.process_time() - start, value


def write_specs(folder: Path, n_features: int, row: np.ndarray) -> dict[str, Path]:
    """The two one-query specs on ``folder/model.json``, with ``row`` as ``folder/row.csv``."""
    names = [f"f{i}" for i in range(n_features)]
    (folder / "row.csv").write_text(
        ",".join(names) + "\n" + ",".join(repr(float(v)) for v in row) + "\n"
    )
    head = 'model m = xgboost "model.json"\n'
    specs = {
        "global max": head + "query top {\n    input x\n    maximize m(x)\n}\n",
        "closest linf": head
        + 'data rows = csv "row.csv"\n'
        + "query closest for r in rows[0:1] {\n    input x\n    where class(m, x) != class(m, r)\n"
        + "    minimize linf(x, r)\n}\n",
    }
    paths = {}
    for task, text in specs.items():
        paths[task] = folder / f"{task.replace(' ', '_')}.ver"
        paths[task].write_text(text)
    return paths


def ours_end_to_end(path: Path, cached: bool) -> tuple[float, float, object]:
    """``(load CPU, run CPU, result)`` of one spec; the model cache emptied unless ``cached``."""
    if not cached:
        model_load._kept.clear()
    t_load, spec = cpu(lambda: veritas_dsl.load(path))
    t_run, runs = cpu(spec.run)
    (run,) = runs
    return t_load, t_run, run.result


def ours_engine(path: Path) -> tuple[float, float]:
    """``(build CPU, solve CPU)`` of the A* engine on the spec's query and a freshly loaded
    model: its per-model build (:meth:`AStarEngine.prepare`), then its ``solve``."""
    model_load._kept.clear()
    (lowered,) = veritas_dsl.load(path).lowered()
    engine = AStarEngine()
    t_build, _ = cpu(lambda: engine.prepare(lowered.query))
    t, result = cpu(lambda: engine.solve(lowered.query, Limits(timeout_s=TIMEOUT_S)))
    assert result.termination is Termination.OPTIMAL, result.termination
    return t_build, t


def theirs(veritas, model_file: Path, task: str, row: np.ndarray) -> tuple[float, float, tuple]:
    """``(load + search CPU, search CPU, (lower, upper))`` of dtai-veritas."""
    import xgboost

    def load():
        with contextlib.redirect_stdout(io.StringIO()):
            return veritas.get_addtree(xgboost.Booster(model_file=str(model_file)))

    t_load, at = cpu(load)

    def search():
        with contextlib.redirect_stdout(io.StringIO()):
            if task == "global max":
                config = veritas.Config(veritas.HeuristicType.MAX_OUTPUT)
                config.focal_eps = 1.0
                s = config.get_search(at)
                while s.step_for(TIMEOUT_S, 100) != veritas.StopReason.OPTIMAL:
                    pass
                return s.get_solution(0).output, s.current_bounds().best
            positive = float(at.eval(row.astype(np.float64).reshape(1, -1))[0][0]) > 0.0
            s = veritas.VeritasRobustnessSearch(
                row.astype(np.float64), 10.0, at if positive else None,
                None if positive else at, max_time=TIMEOUT_S, silent=True,
            )  # fmt: skip
            _, lower, upper = s.search()
            return lower, upper

    t_search, bounds = cpu(search)
    return t_load + t_search, t_search, bounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="breast,digits,credit")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    import veritas

    print(f"CPU ms, median of {args.repeats} (time.process_time), one process; ratios ours/theirs")
    header = (
        f"{'model':<7} {'task':<13} {'parse+load':>10} {'run':>7} {'end2end':>8} "
        f"{'again':>7} {'build':>6} {'engine':>7} | {'theirs l+s':>10} {'search':>7} | "
        f"{'e2e/l+s':>7} {'eng/srch':>8}"
    )
    ratios: dict[str, list[float]] = {"e2e": [], "again": [], "engine": []}
    with tempfile.TemporaryDirectory(prefix="spec-overhead-") as tmp:
        chosen = args.models.split(",")
        for i, suite in enumerate(s for s in SUITE if s.name in chosen):
            X, y = dataset(suite.name)
            clf = train(X, y, suite.n_trees, suite.depth)
            folder = Path(tmp) / suite.name
            folder.mkdir()
            model_file = folder / "model.json"
            clf.get_booster().save_model(str(model_file))
            row = X[-1].astype(np.float32)
            specs = write_specs(folder, X.shape[1], row)
            if i == 0:  # warm-up: kernels loaded, libraries imported, on both sides
                for task, path in specs.items():
                    ours_end_to_end(path, cached=False)
                    theirs(veritas, model_file, task, row)
                print(header)
            for task, path in specs.items():
                e2e = [ours_end_to_end(path, cached=False) for _ in range(args.repeats)]
                again = [sum(ours_end_to_end(path, cached=True)[:2]) for _ in range(args.repeats)]
                engine = [ours_engine(path) for _ in range(args.repeats)]
                their = [theirs(veritas, model_file, task, row) for _ in range(args.repeats)]
                t_load = statistics.median(r[0] for r in e2e)
                t_run = statistics.median(r[1] for r in e2e)
                t_e2e = statistics.median(r[0] + r[1] for r in e2e)
                t_again = statistics.median(again)
                t_build = statistics.median(r[0] for r in engine)
                t_engine = statistics.median(r[1] for r in engine)
                t_theirs = statistics.median(r[0] for r in their)
                t_search = statistics.median(r[1] for r in their)
                ratios["e2e"].append(t_e2e / t_theirs)
                ratios["again"].append(t_again / t_theirs)
                ratios["engine"].append(t_engine / t_search)
                result, (lower, upper) = e2e[-1][2], their[-1][2]
                print(
                    f"{suite.name:<7} {task:<13} {1e3 * t_load:10.2f} {1e3 * t_run:7.2f} "
                    f"{1e3 * t_e2e:8.2f} {1e3 * t_again:7.2f} {1e3 * t_build:6.2f} "
                    f"{1e3 * t_engine:7.2f} | "
                    f"{1e3 * t_theirs:10.2f} {1e3 * t_search:7.2f} | "
                    f"{t_e2e / t_theirs:7.2f} {t_engine / t_search:8.2f}"
                    f"   ours {result.termination.value} {result.upper:.6g}, theirs "
                    f"[{lower:.6g}, {upper:.6g}]"
                )
    for name, values in ratios.items():
        print(
            f"ratio {name:<6}: median {statistics.median(values):.2f}, "
            f"max {max(values):.2f} over {len(values)} model x task"
        )


if __name__ == "__main__":
    main()
