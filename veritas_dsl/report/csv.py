"""``ver run --csv FILE``: one line per query and row, for spreadsheets and batch statistics."""

from __future__ import annotations

import csv
import io

from veritas_dsl.run import QueryRun, Verdict

#: A run's verdict is that of its worst check, in this order.
_WORST_FIRST = (Verdict.FAILED, Verdict.VACUOUS, Verdict.UNDECIDED, Verdict.HOLDS)

COLUMNS = ["query", "row", "kind", "engine", "status", "lower", "upper", "verdict", "time_s"]


def dumps(runs: list[QueryRun]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for run in runs:
        result = run.result
        verdicts = {c.verdict for c in run.checks}
        verdict = next((v.value for v in _WORST_FIRST if v in verdicts), "")
        writer.writerow(
            [
                run.lowered.source.name,
                "" if run.lowered.row is None else run.lowered.row,
                run.kind,
                result.engine,
                result.termination.value,
                "" if result.lower is None else repr(result.lower),
                "" if result.upper is None else repr(result.upper),
                verdict,
                f"{result.time_s:.6f}",
            ]
        )
    return out.getvalue()
