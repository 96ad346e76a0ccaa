"""One batch of rows against the same rows as separate single-row specs, in one process.

    python bench/batch_reuse.py [--rows 1000] [--model credit] [--goal closest|robust]

The spec (closest L-inf example with a class change, ``--goal closest``; or the robustness
property ``linf(x, r) <= --eps => class(m, x) == class(m, r)``, ``--goal robust``) is written for
the last ``--rows`` rows of a ``bench/veritas_suite.py`` data set, next to the model trained on it.
The batch is one spec, ``for r in rows[0:N]``; the separate runs are N specs, ``rows[i:i+1]``
each, parsed, checked (the model and data loaded) and run one after the other, as N ``ver run``
calls in one process would be (the Numba kernels are loaded once either way). Both use the A*
engine; the answers (the optimum, or the verdict) are checked equal row by row, and the ratio of
the two wall times printed.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import veritas_dsl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from veritas_suite import SUITE, dataset, train

QUERIES = {
    "closest": """query q for r in rows[{a}:{b}] {{
    input x
    where class(m, x) != class(m, r)
    minimize linf(x, r)
}}""",
    "robust": """property q for r in rows[{a}:{b}] {{
    forall x: linf(x, r) <= {eps} => class(m, x) == class(m, r)
}}""",
}


def write(folder: Path, name: str, rows: int) -> list[str]:
    """The model and the last ``rows`` rows of data set ``name`` in ``folder``; feature names."""
    shape = next(s for s in SUITE if s.name == name)
    X, y = dataset(name)
    clf = train(X, y, shape.n_trees, shape.depth)
    clf.get_booster().save_model(folder / "model.json")
    names = [f"f{i}" for i in range(X.shape[1])]
    lines = [",".join(names)] + [",".join(f"{v:.9g}" for v in row) for row in X[-rows:]]
    (folder / "rows.csv").write_text("\n".join(lines) + "\n")
    return names


def spec_text(goal: str, a: int, b: int, eps: float) -> str:
    head = 'model m = xgboost "model.json"\ndata rows = csv "rows.csv"\n\n'
    return head + QUERIES[goal].format(a=a, b=b, eps=eps) + "\n"


def answers(runs) -> list:
    """Per run: the optimum (closest) or the verdicts (robust)."""
    out = []
    for run in runs:
        if run.checks:
            out.append(tuple(c.verdict.value for c in run.checks))
        else:
            out.append((run.result.termination.value, run.result.upper))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--model", default="credit", choices=[s.name for s in SUITE])
    parser.add_argument("--goal", default="closest", choices=sorted(QUERIES))
    parser.add_argument("--eps", type=float, default=0.05)
    args = parser.parse_args()
    n = args.rows
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write(folder, args.model, n)
        path = str(folder / "batch.ver")
        # load (or compile) the kernels, so that neither side pays for it
        veritas_dsl.parse(spec_text(args.goal, 0, 1, args.eps), path).run(solver="astar")

        start = time.perf_counter()
        batch = veritas_dsl.parse(spec_text(args.goal, 0, n, args.eps), path).run(solver="astar")
        t_batch = time.perf_counter() - start

        start = time.perf_counter()
        single = []
        for i in range(n):
            spec = veritas_dsl.parse(spec_text(args.goal, i, i + 1, args.eps), path)
            single += spec.run(solver="astar")
        t_single = time.perf_counter() - start

    same = answers(batch) == answers(single)
    kinds = sorted({a[0] for a in answers(batch)})
    print(
        f"{args.goal} on {args.model}, {n} rows, engine astar: one batch {t_batch:.2f} s "
        f"({1e3 * t_batch / n:.2f} ms a row), {n} single-row specs {t_single:.2f} s "
        f"({1e3 * t_single / n:.2f} ms a row); ratio {t_single / t_batch:.2f}x; answers "
        f"{'the same' if same else 'DIFFERENT'} ({', '.join(map(str, kinds))})"
    )
    if not same:
        pairs = enumerate(zip(answers(batch), answers(single), strict=True))
        diff = [i for i, (a, b) in pairs if a != b]
        print(f"  rows that differ: {diff[:20]}")
        sys.exit(1)


if __name__ == "__main__":
    main()
