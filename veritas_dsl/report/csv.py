"""``ver run --csv FILE``: one line per query and row, for spreadsheets and batch statistics;
``ver run --witnesses FILE``: one line per witness and instance, a column per feature."""

from __future__ import annotations

import csv
import io

from veritas_dsl.outcome import QueryRun, Verdict
from veritas_dsl.report.table import float32_text

#: A run's verdict is that of its worst check, in this order.
_WORST_FIRST = (Verdict.FAILED, Verdict.VACUOUS, Verdict.UNDECIDED, Verdict.HOLDS)

COLUMNS = [
    "query",
    "row",
    "kind",
    "engine",
    "status",
    "solution",
    "lower",
    "upper",
    "verdict",
    "time_s",
]


def dumps(runs: list[QueryRun]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for run in runs:
        writer.writerow(_fields(run))
    return out.getvalue()


def header() -> str:
    """The first line of ``--csv`` output."""
    return ",".join(COLUMNS) + "\n"


def line(run: QueryRun) -> str:
    """The line of one run, as :func:`dumps` writes it (for a file written as runs finish)."""
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(_fields(run))
    return out.getvalue()


def _fields(run: QueryRun) -> list:
    result = run.result
    verdicts = {c.verdict for c in run.checks}
    verdict = next((v.value for v in _WORST_FIRST if v in verdicts), "")
    return [
        run.lowered.origin.name,
        "" if run.lowered.row is None else run.lowered.row,
        run.kind,
        result.engine,
        result.termination.value,
        result.solution.value,
        "" if result.lower is None else repr(result.lower),
        "" if result.upper is None else repr(result.upper),
        verdict,
        f"{result.time_s:.6f}",
    ]


def witnesses(runs: list[QueryRun]) -> str:
    """Columns ``query, row, instance`` and then the feature names; a line per instance of each
    run's reported witness. Values are the shortest decimals that read back as the same float32,
    so that a line fed to the model reproduces the witness."""
    names: dict[str, None] = {}
    for run in runs:
        names.update(dict.fromkeys(run.feature_names))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["query", "row", "instance", *names])
    for run in runs:
        if not run.result.witnesses:
            continue
        row = "" if run.lowered.row is None else run.lowered.row
        for instance, values in run.result.witnesses[0].inputs.items():
            by_name = dict(zip(run.feature_names, map(float32_text, values), strict=True))
            line = [by_name.get(name, "") for name in names]
            writer.writerow([run.lowered.origin.name, row, instance, *line])
    return out.getvalue()
