"""The JSON document of ``ver run --json`` (one document, nothing else on stdout).

Shape: ``{"results": [{"query", "row", "kind", "solver", "status", "lower", "upper",
"witness": {instance: {feature: value}}, "time_s", "trace": [[time_s, lower, upper], ...],
"stats", "message", "checks": [{"check", "holds", "detail", "line"}], "engines": [...]}]}``, where
"engines" (present when several engines answered) repeats the per-engine fields, and
``"interrupted": true`` is added when Ctrl-C stopped the run (the results are those finished, the
interrupted one last). Infinite bounds are written as the strings "inf" and "-inf" so that the
document stays standard JSON.
"""

from __future__ import annotations

import json
import math

from veritas_dsl.result import Result
from veritas_dsl.run import QueryRun


def _number(value: float | None):
    if value is None:
        return None
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


def witness_table(run: QueryRun, result: Result) -> dict | None:
    if not result.witnesses:
        return None
    names = [f.name for f in run.lowered.query.features]
    return {
        instance: {name: float(v) for name, v in zip(names, values, strict=True)}
        for instance, values in result.witnesses[0].inputs.items()
    }


def result_entry(run: QueryRun, result: Result) -> dict:
    return {
        "solver": result.engine,
        "status": result.termination.value,
        "lower": _number(result.lower),
        "upper": _number(result.upper),
        "witness": witness_table(run, result),
        "time_s": result.time_s,
        "trace": [[p.time_s, _number(p.lower), _number(p.upper)] for p in result.trace],
        "stats": result.stats,
        "message": result.message,
    }


def document(runs: list[QueryRun], interrupted: bool = False) -> dict:
    results = []
    for run in runs:
        entry = {"query": run.lowered.source.name, "row": run.lowered.row, "kind": run.kind}
        entry.update(result_entry(run, run.result))
        entry["checks"] = [
            {"check": c.text, "holds": c.holds, "detail": c.detail, "line": c.span.line}
            for c in run.checks
        ]
        if len(run.results) > 1:
            entry["engines"] = [result_entry(run, r) for r in run.results]
        results.append(entry)
    return {"results": results, "interrupted": True} if interrupted else {"results": results}


def dumps(runs: list[QueryRun], interrupted: bool = False) -> str:
    return json.dumps(document(runs, interrupted), indent=2)
