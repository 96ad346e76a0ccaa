"""Reports of ``ver check``: a line per check, counterexample tables, JSON and JUnit XML."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from veritas_dsl.diagnostics import render
from veritas_dsl.outcome import Check, FileOutcome, QueryRun, Verdict
from veritas_dsl.report.json import diagnostic_entry, versioned
from veritas_dsl.report.table import bounds_text, failure_text, times_text, witness_table
from veritas_dsl.report.terminal import counts


def _items(outcome: FileOutcome):
    for index, run in enumerate(outcome.runs):
        for check in run.checks:
            yield index, run, check


def _table(outcome: FileOutcome, index: int, run: QueryRun) -> str:
    result = run.result
    if not result.witnesses:
        return ""
    return witness_table(run.lowered.query, result.witnesses[0], outcome.reference_rows.get(index))


def _line(run: QueryRun, check: Check) -> str:
    facts = [check.detail]
    if run.kind not in ("find", "prove"):
        facts.append(bounds_text(run.result))
    facts.append(times_text(run.results))
    return f"{check.span}: {run.name}: {check.text}: {check.verdict.value} ({'; '.join(facts)})"


def _engine_errors(run: QueryRun) -> list[str]:
    """Why engines failed or refused the query: the run did not do what was asked."""
    return [text for text in map(failure_text, run.results) if text]


def render_text(outcomes: list[FileOutcome]) -> str:
    lines = []
    for outcome in outcomes:
        for diagnostic in outcome.errors:
            lines.append(render(diagnostic))
        for index, run, check in _items(outcome):
            lines.append(_line(run, check))
            lines += ["  " + message for message in _engine_errors(run)]
            if check.verdict is Verdict.FAILED and run.result.witnesses:
                label = "counterexample" if run.kind == "prove" else "witness"
                lines.append(f"  {label}:")
                lines += ["    " + row for row in _table(outcome, index, run).splitlines()]
    lines.append(summary(outcomes))
    return "\n".join(lines)


def summary(outcomes: list[FileOutcome]) -> str:
    checks = [c for o in outcomes for _, _, c in _items(o)]
    errors = sum(len(o.errors) for o in outcomes)
    broken = sum(r.errored for o in outcomes for r in o.runs)
    text = f"{len(checks)} checks in {len(outcomes)} file{'s' if len(outcomes) != 1 else ''}: "
    text += counts(checks)
    text += f", {broken} not run by their engine" if broken else ""
    return text + (f", {errors} spec error{'s' if errors != 1 else ''}" if errors else "")


def render_json(outcomes: list[FileOutcome]) -> str:
    entries = []
    for outcome in outcomes:
        for diagnostic in outcome.errors:
            span = diagnostic.span
            entries.append(
                {
                    "file": outcome.path,
                    "line": span.line if span else None,
                    "verdict": "error",
                    "check": None,
                    "detail": f"{diagnostic.code}: {diagnostic.message}",
                }
            )
        for _, run, check in _items(outcome):
            witness = None
            if run.result.witnesses:
                names = [f.name for f in run.lowered.query.features]
                witness = {
                    instance: dict(zip(names, map(float, values), strict=True))
                    for instance, values in run.result.witnesses[0].inputs.items()
                }
            entries.append(
                {
                    "file": outcome.path,
                    "line": check.span.line,
                    "query": run.lowered.origin.name,
                    "row": run.lowered.row,
                    "check": check.text,
                    "verdict": check.verdict.value,
                    "detail": check.detail,
                    "status": run.result.termination.value,
                    "solution": run.result.solution.value,
                    "message": "; ".join(r.message for r in run.results if r.message),
                    "time_s": run.result.time_s,
                    "witness": witness,
                }
            )
    warnings = [diagnostic_entry(w) for o in outcomes for w in o.warnings]
    document = versioned({"checks": entries, "warnings": warnings})
    if any(o.interrupted for o in outcomes):
        document["interrupted"] = True
    return json.dumps(document, indent=2)


def render_junit(outcomes: list[FileOutcome]) -> str:
    """JUnit XML: a test suite per file, a test case per check; spec errors are errors."""
    root = ET.Element("testsuites", name="ver check")
    for outcome in outcomes:
        suite = ET.SubElement(root, "testsuite", name=outcome.path)
        tests = failures = errors = 0
        total = 0.0
        for diagnostic in outcome.errors:
            case = ET.SubElement(suite, "testcase", classname=outcome.path, name="spec")
            element = ET.SubElement(
                case, "error", message=f"{diagnostic.code}: {diagnostic.message}"
            )
            element.text = render(diagnostic)
            tests, errors = tests + 1, errors + 1
        for index, run, check in _items(outcome):
            name = f"{run.name}: {check.text}"
            case = ET.SubElement(
                suite,
                "testcase",
                classname=outcome.path,
                name=name,
                time=f"{run.result.time_s:.3f}",
                line=str(check.span.line),
            )
            total += run.result.time_s
            tests += 1
            if run.errored:
                errors += 1
                messages = _engine_errors(run)
                element = ET.SubElement(case, "error", message=messages[0])
                element.text = "\n".join([_line(run, check), *messages])
            elif check.verdict is not Verdict.HOLDS:
                failures += 1
                element = ET.SubElement(
                    case, "failure", message=f"{check.verdict.value}: {check.detail}"
                )
                element.text = _line(run, check) + "\n" + _table(outcome, index, run)
        suite.set("tests", str(tests))
        suite.set("failures", str(failures))
        suite.set("errors", str(errors))
        suite.set("time", f"{total:.3f}")
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True)
