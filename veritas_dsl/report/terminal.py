"""The terminal report of ``ver run``: a line per query, its checks, witnesses, a summary last."""

from __future__ import annotations

import math
import re

from veritas_dsl.ir.probability import sigmoid
from veritas_dsl.outcome import Check, QueryRun, Verdict
from veritas_dsl.report.table import failure_text, float32_text, times_text
from veritas_dsl.result import Result, Solution, Termination

_MARK = {
    Verdict.HOLDS: "ok",
    Verdict.FAILED: "FAILED",
    Verdict.VACUOUS: "VACUOUS",
    Verdict.UNDECIDED: "UNKNOWN",
}
_FAILURE = {
    Verdict.FAILED: "failed",
    Verdict.VACUOUS: "is vacuous",
    Verdict.UNDECIDED: "could not be decided",
}


def _bound(value: float | None) -> str:
    if value is None:
        return "-"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.6g}"


def _answer(run: QueryRun, result: Result) -> str:
    if result.termination in (Termination.UNSUPPORTED, Termination.ERROR):
        return result.termination.value  # an engine that failed promises no bound
    if run.kind in ("find", "prove"):
        words = _FOUND[run.kind].get(result.solution)
        if words is None:
            return result.termination.value
        if result.termination in (Termination.OPTIMAL, Termination.INFEASIBLE):
            return words
        return f"{words} ({result.termination.value})"  # found, and then a limit stopped it
    if result.termination.value == "infeasible":
        return "infeasible: no input satisfies the constraints"
    if result.lower == result.upper:
        value = _bound(result.lower)
        return f"{result.termination.value}, value {value}{_probability(run, result)}"
    return (
        f"{result.termination.value}, in [{_bound(result.lower)}, {_bound(result.upper)}]"
        + _probability(run, result)
    )


def _probability(run: QueryRun, result: Result) -> str:
    """The bounds of a ``proba(m, x)`` objective, margins, as probabilities too."""
    if not run.lowered.origin.probability or result.lower is None or result.upper is None:
        return ""
    low, high = sigmoid(result.lower), sigmoid(result.upper)
    if low == high:
        return f" (probability {low:.6g})"
    return f" (probability in [{low:.6g}, {high:.6g}])"


#: What a find or prove found, in words.
_FOUND = {
    "find": {Solution.INFEASIBLE: "no input satisfies it", Solution.OPTIMAL: "found"},
    "prove": {Solution.INFEASIBLE: "no counterexample", Solution.OPTIMAL: "counterexample found"},
}


def _witness_lines(run: QueryRun, result: Result) -> list[str]:
    """The witness; with ``solutions = N``, each solution, best first, with its value."""
    if not result.witnesses:
        return []
    names = [f.name for f in run.lowered.query.features]
    label = "counterexample" if run.kind == "prove" else "witness"
    ranked = result.solutions_proven is not None
    lines = []
    for rank, witness in enumerate(result.witnesses if ranked else result.witnesses[:1], 1):
        if ranked:
            proven = "" if rank <= result.solutions_proven else ", not proven in order"
            lines.append(f"      solution {rank}: value {_bound(witness.value)}{proven}")
        for instance, values in witness.inputs.items():
            shown = ", ".join(f"{n}={float32_text(v)}" for n, v in zip(names, values, strict=True))
            lines.append(f"      {'  ' if ranked else ''}{label} {instance}: {shown}")
    return lines


def render(runs: list[QueryRun], path: str) -> tuple[str, str]:
    """The report as (stdout text, stderr text): results on stdout; failed checks, and engines
    that failed or refused a query, on stderr. Every witness is shown, batch rows' too."""
    out, err = [], []
    width = max((len(r.name) for r in runs), default=0)
    # A note is shown once a file: the rows of a batch repeat theirs (but for their names), and
    # some are about the machine, not the query (no Gurobi licence: solved with HiGHS).
    notes: set[tuple[str, str]] = set()
    for run in runs:
        result = run.result
        engines = ",".join(r.engine for r in run.results)
        out.append(
            f"{run.name:<{width}}  {engines:<6}  {_answer(run, result)}  "
            f"({times_text(run.results)})"
        )
        for r in run.results:
            failure = failure_text(r)
            note = (r.engine, re.sub(rf"(?<!\w){re.escape(run.name)}(?!\w)", "", r.message))
            if not (r.message or failure) or note in notes:
                continue
            notes.add(note)
            engine = f"{r.engine}: " if len(run.results) > 1 else ""
            if r.message:
                out.append(f"      {'error' if failure else 'note'}: {engine}{r.message}")
            if failure:
                err.append(f"{run.lowered.origin.span}: {run.name}: {failure}")
        for check in run.checks:
            out.append(f"      {_MARK[check.verdict]:<7} {check.text} ({check.detail})")
            if check.verdict is not Verdict.HOLDS:
                err.append(
                    f"{check.span}: {run.name}: {check.text} {_FAILURE[check.verdict]} "
                    f"({check.detail})"
                )
        out.extend(_witness_lines(run, result))
    out += batch_summaries(runs)
    checks = [c for r in runs for c in r.checks]
    summary = (
        f"{path}: {len(runs)} quer{'y' if len(runs) == 1 else 'ies'} run, {len(checks)} checks"
    )
    out.append(f"{summary}: {counts(checks)}")
    return "\n".join(out), "\n".join(err)


def counts(checks: list[Check]) -> str:
    """``3 hold, 1 failed, 0 undecided``, with the vacuous ones when there are any."""
    number = {v: sum(c.verdict is v for c in checks) for v in Verdict}
    text = f"{number[Verdict.HOLDS]} hold, {number[Verdict.FAILED]} failed"
    if number[Verdict.VACUOUS]:
        text += f", {number[Verdict.VACUOUS]} vacuous"
    return text + f", {number[Verdict.UNDECIDED]} undecided"


def batch_summaries(runs: list[QueryRun]) -> list[str]:
    """A line per batch query: rows that hold or fail, or the spread of the optimum; with a
    row filter, how many of the batch's rows it kept."""
    lines = []
    batches: dict[int, list[QueryRun]] = {}
    for run in runs:
        if run.lowered.row is not None:
            batches.setdefault(run.lowered.origin, []).append(run)
    for group in batches.values():
        name = group[0].lowered.origin.name
        text = f"{name}: {len(group)} rows"
        batch = group[0].lowered.origin.batch
        if batch.filter_span is not None:
            text = f"{name}: {len(group)} of {batch.stop - batch.start} rows (kept by the filter)"
        checks = [c for r in group for c in r.checks]
        if group[0].lowered.origin.is_property:
            text += f": {counts(checks)}"
        elif group[0].kind in ("maximize", "minimize", "minimize_distance"):
            values = sorted(
                r.result.lower for r in group if r.result.exact and math.isfinite(r.result.lower)
            )
            if values:
                middle = values[len(values) // 2]
                text += f": optimum min {values[0]:.6g}, median {middle:.6g}, max {values[-1]:.6g}"
                if group[0].lowered.origin.probability:
                    shown = ", ".join(f"{sigmoid(v):.6g}" for v in (values[0], middle, values[-1]))
                    text += f" (probability {shown})"
            text += f" ({len(values)} exact"
            infeasible = sum(r.result.termination.value == "infeasible" for r in group)
            text += f", {infeasible} infeasible)" if infeasible else ")"
        lines.append(text)
    return lines
