"""A closest-example query on an imported model file, run by every default engine.

Used by the importer tests: the engines must agree on the distance, and each witness (already
re-evaluated on the library model by the engines' validation) must flip the class the original
library itself predicts.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np

from veritas_dsl import parse

ENGINES = ("astar", "milp", "sat", "oracle")


def assert_closest_agrees(
    folder: Path,
    declaration: str,
    feature_names: tuple[str, ...],
    rows: np.ndarray,
    library_class: Callable[[np.ndarray], np.ndarray],
    engines: tuple[str, ...] = ENGINES,
) -> None:
    """Run ``query q for r in d { ... minimize linf(x, r) }`` over ``rows`` on each engine, with
    ``declaration`` (``model m = <format> "<file>"``) as the model."""
    rows = np.asarray(rows, dtype=np.float32)
    data = folder / "rows.csv"
    lines = [",".join(feature_names)] + [",".join(repr(float(v)) for v in row) for row in rows]
    data.write_text("\n".join(lines) + "\n")
    text = (
        f"{declaration}\n"
        f'data d = csv "{data.name}"\n'
        f"query q for r in d[0:{len(rows)}] {{\n"
        "    input x\n"
        "    where class(m, x) != class(m, r)\n"
        "    minimize linf(x, r)\n"
        "}\n"
    )
    spec = parse(text, folder / "closest.ver")
    distances: dict[str, list[float]] = {}
    for engine in engines:
        runs = spec.run(solver=engine, timeout_s=60)
        assert len(runs) == len(rows)
        distances[engine] = []
        for row, run in zip(rows, runs, strict=True):
            result = run.result
            assert result.exact, f"{engine} on {run.name}: {result.termination} {result.message}"
            if not result.witnesses:
                distances[engine].append(math.inf)
                continue
            witness = np.asarray(result.witnesses[0].inputs["x"], dtype=np.float32)
            theirs = library_class(np.stack([row, witness]))
            assert theirs[0] != theirs[1], f"{engine} on {run.name}: the class does not flip"
            distances[engine].append(float(result.witnesses[0].value))
    first = distances[engines[0]]
    assert any(math.isfinite(d) for d in first), "no row has a closest example"
    for engine, found in distances.items():
        assert np.allclose(found, first, rtol=1e-6, atol=0), (engine, found, first)
