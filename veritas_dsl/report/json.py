"""The JSON document of ``ver run --json`` (one document, nothing else on stdout), and the
version every JSON document of ``ver`` carries.

Shape: ``{"schema": 1, "results": [{"query", "row", "kind", "solver", "status", "lower", "upper",
"witness": {instance: {feature: value}}, "time_s", "trace": [[time_s, lower, upper], ...],
"stats", "message", "checks": [{"check", "verdict", "holds", "detail", "line"}], "engines":
[...]}], "warnings": [{"code", "message", "file", "line", "column", "label", "notes"}]}``, where
"solutions" (present when ``solutions = N`` was asked) lists ``{"value", "witness"}`` best first
and "solutions_proven" says how many of them, from the first, are proven in order,
"probability" (present when the objective is ``proba(m, x)``) gives ``{"lower", "upper"}`` as
probabilities (rounded outward: bounds on the exact ones),
"engines" (present when several engines answered) repeats the per-engine fields, "verdict" is
``holds``, ``failed``, ``vacuous`` or ``undecided`` ("holds" is true, false, or null when
undecided), "warnings" are the spec's warnings (``warning[V6xx]``), "batches" (present when a
query has a row filter) gives each filtered batch's ``{"query", "data", "start", "stop",
"kept"}`` (rows ``start`` to ``stop - 1`` before the filter; ``kept`` of them ran), and
``"interrupted": true``
is added when Ctrl-C stopped the run (the results are those finished, the interrupted one last).
Infinite bounds are written as the strings "inf" and "-inf" so that the document stays standard
JSON. ``report/schema/run.schema.json`` is its JSON Schema.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

from veritas_dsl.diagnostics import Diagnostic
from veritas_dsl.ir.probability import probability_bounds
from veritas_dsl.outcome import QueryRun
from veritas_dsl.result import Result

#: The version of every JSON document and JSON Lines line that ``ver`` writes, its ``"schema"``
#: field; the JSON Schema files in report/schema/ describe this version. It goes up when a field
#: is removed or renamed or changes meaning, so that a consumer can refuse what it cannot read;
#: a new field keeps it.
SCHEMA = 1


def versioned(document: dict) -> dict:
    """``document`` with the schema version as its first field."""
    return {"schema": SCHEMA, **document}


def _number(value: float | None):
    if value is None:
        return None
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


def witness_table(run: QueryRun, result: Result, index: int = 0) -> dict | None:
    if len(result.witnesses) <= index:
        return None
    names = [f.name for f in run.lowered.query.features]
    return {
        instance: {name: float(v) for name, v in zip(names, values, strict=True)}
        for instance, values in result.witnesses[index].inputs.items()
    }


def result_entry(run: QueryRun, result: Result) -> dict:
    entry = {
        "solver": result.engine,
        "status": result.termination.value,
        "solution": result.solution.value,
        "lower": _number(result.lower),
        "upper": _number(result.upper),
        "witness": witness_table(run, result),
        "time_s": result.time_s,
        "trace": [[p.time_s, _number(p.lower), _number(p.upper)] for p in result.trace],
        "stats": result.stats,
        "message": result.message,
    }
    if result.solutions_proven is not None:  # solutions = N asked
        entry["solutions"] = [
            {"value": _number(w.value), "witness": witness_table(run, result, i)}
            for i, w in enumerate(result.witnesses)
        ]
        entry["solutions_proven"] = result.solutions_proven
    if run.lowered.origin.probability:
        entry["probability"] = {
            "lower": None if result.lower is None else probability_bounds(result.lower)[0],
            "upper": None if result.upper is None else probability_bounds(result.upper)[1],
        }
    return entry


def run_entry(run: QueryRun) -> dict:
    """One entry of the document's ``results``: a query (and row), its answer and checks."""
    entry = {"query": run.lowered.origin.name, "row": run.lowered.row, "kind": run.kind}
    entry.update(result_entry(run, run.result))
    entry["checks"] = [
        {
            "check": c.text,
            "verdict": c.verdict.value,
            "holds": c.holds,
            "detail": c.detail,
            "line": c.span.line,
        }
        for c in run.checks
    ]
    if len(run.results) > 1:
        entry["engines"] = [result_entry(run, r) for r in run.results]
    return entry


def diagnostic_entry(diagnostic: Diagnostic) -> dict:
    """A diagnostic as JSON: its code, message, location (null without one), label and notes."""
    span = diagnostic.span
    return {
        "code": diagnostic.code,
        "message": diagnostic.message,
        "file": span.file if span else None,
        "line": span.line if span else None,
        "column": span.column if span else None,
        "label": diagnostic.label,
        "notes": list(diagnostic.notes),
    }


def document(
    runs: list[QueryRun], warnings: Sequence[Diagnostic] = (), interrupted: bool = False
) -> dict:
    results = [run_entry(run) for run in runs]
    found = versioned({"results": results, "warnings": [diagnostic_entry(w) for w in warnings]})
    batches = _filtered_batches(runs)
    if batches:
        found["batches"] = batches
    if interrupted:
        found["interrupted"] = True
    return found


def _filtered_batches(runs: list[QueryRun]) -> list[dict]:
    kept: dict[object, dict] = {}
    for run in runs:
        source = run.lowered.origin
        if source.batch is None or source.batch.filter_span is None:
            continue
        batch = source.batch
        entry = kept.setdefault(
            source,
            {"query": source.name, "data": batch.data, "start": batch.start, "stop": batch.stop},
        )
        entry["kept"] = entry.get("kept", 0) + 1
    return list(kept.values())


def dumps(
    runs: list[QueryRun], warnings: Sequence[Diagnostic] = (), interrupted: bool = False
) -> str:
    return json.dumps(document(runs, warnings, interrupted), indent=2)
