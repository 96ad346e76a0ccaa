"""Vacuous answers: conditions that no input satisfies.

A property whose premise no input satisfies has no counterexample, and an expectation over a query
no input satisfies is met by the bounds of nothing; either would pass a regression test while
proving nothing. Two safeguards:

* before any engine runs, :func:`warnings` locates the conditions that the static box
  (:mod:`veritas_dsl.ir.empty`) shows empty, as ``warning[V6xx]`` diagnostics;
* after an engine answers, the run (``veritas_dsl.run``) asks whether the *premise* is
  satisfiable before a check may hold without an input in hand: the static box first, then a
  ``find`` of :func:`premise_query` on the engine.

The premise of a property is all its conditions (its ``where`` lines and the ``forall``
premise). The premise of a query is its input conditions, those that read no model: the output
conditions of a query's ``where`` are part of what it asks (``expect none`` of a query for an
input whose class flips is a robustness claim, not a vacuous one).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from veritas_dsl.diagnostics import Diagnostic, Severity, Span
from veritas_dsl.ir.empty import Conflict, Emptiness, emptiness
from veritas_dsl.ir.lowered import Lowered, Origin
from veritas_dsl.ir.query import Constraint, Find, OutputConstraint, Query, VoteMargin, walk

#: A conjunction of conditions no input satisfies.
EMPTY_CONDITIONS = "V601"
#: An alternative of an `or` that no input satisfies.
DEAD_ALTERNATIVE = "V602"

#: A row filter (``for r in data[a:b] where ...``) that keeps no row.
EMPTY_FILTER = "V603"

#: How many rows of a batch a warning names before it counts the rest.
_ROWS_NAMED = 5


def premise(lowered: Lowered) -> tuple[Constraint, ...]:
    """The constraints a check of ``lowered`` is about (see the module docstring)."""
    constraints = lowered.query.constraints
    if lowered.origin.is_property:
        return constraints
    return tuple(c for c in constraints if not _reads_models(c))


def _reads_models(c: Constraint) -> bool:
    return any(isinstance(inner, OutputConstraint | VoteMargin) for inner in walk((c,)))


def premise_query(lowered: Lowered) -> Query:
    """A ``find`` over the premise of ``lowered`` alone."""
    q = lowered.query
    return Query(f"{q.name} (premise)", q.features, q.instances, q.models, premise(lowered), Find())


def static_premise(lowered: Lowered) -> Emptiness:
    """What the static box says of the premise of ``lowered``."""
    q = lowered.query
    return emptiness(q.features, q.instances, premise(lowered))


def premise_words(lowered: Lowered) -> str:
    """``the premise`` of a property, ``the query's input conditions`` otherwise."""
    return "the premise" if lowered.origin.is_property else "the query's input conditions"


def warnings(lowered: Iterable[Lowered]) -> list[Diagnostic]:
    """A located warning per condition that the static box shows empty, in order; the rows of a
    batch share one warning that names them."""
    found: dict[tuple, tuple[Diagnostic, list[Lowered]]] = {}
    rows: dict[int, int] = {}  # rows lowered per query: those its row filter kept
    for item in lowered:
        rows[item.origin] = rows.get(item.origin, 0) + 1
        q = item.query
        for conflict in emptiness(q.features, q.instances, q.constraints).conflicts:
            diagnostic = _diagnostic(item, conflict)
            key = (item.origin, diagnostic.code, diagnostic.span)
            found.setdefault(key, (diagnostic, []))[1].append(item)
    return [
        _for_rows(diagnostic, items, rows[items[0].origin])
        for diagnostic, items in found.values()
    ]


def empty_filters(origins: Iterable[Origin], lowered: Iterable[Lowered]) -> list[Diagnostic]:
    """A warning per query (of those ``origins`` name) whose row filter kept none of its batch's
    rows (``lowered`` holds the queries' lowered rows): it runs nothing, and a property over no
    row proves nothing."""
    ran = {item.origin for item in lowered}
    found = []
    for query in origins:
        batch = query.batch
        if batch is None or batch.filter_span is None or query in ran:
            continue
        kind = "property" if query.is_property else "query"
        rows = f"{batch.data}[{batch.start}:{batch.stop}]"
        message = f"the row filter of {kind} `{query.name}` keeps none of the rows {rows}"
        notes = ("nothing runs for it" + (": it proves nothing" if query.is_property else ""),)
        found.append(
            Diagnostic(
                EMPTY_FILTER,
                message,
                batch.filter_span,
                "false on every row",
                notes,
                severity=Severity.WARNING,
            )
        )
    return found


def _diagnostic(item: Lowered, conflict: Conflict) -> Diagnostic:
    source = item.origin
    kind = "property" if source.is_property else "query"
    others = _spans(item, conflict.constraints)
    if conflict.disjunction is None:
        primary, others = _primary(others, source.span)
        if source.is_property:
            consequence = "a property whose premise is empty proves nothing: it is `vacuous`"
        elif item.expectations:
            consequence = "its expectations are about no input: they are `vacuous`"
        else:
            consequence = "every engine answers `infeasible`, whatever the models"
        what = "premise" if source.is_property else "conditions"
        message = f"no input satisfies the {what} of {kind} `{source.name}`"
        notes = [consequence]
        code = EMPTY_CONDITIONS
    else:
        alternative = conflict.disjunction.alternatives[conflict.alternative]
        own = (
            item.spans.get(alternative)
            or _spans(item, alternative)
            or item.spans.get(conflict.disjunction, ())
        )
        primary, _ = _primary(list(own), source.span)
        others = [s for s in others if s not in own]
        message = f"this alternative can never hold, in {kind} `{source.name}`"
        notes = ["the `or` holds through its other alternatives only"]
        code = DEAD_ALTERNATIVE
    notes += [f"together with the condition at {span}" for span in others]
    return Diagnostic(
        code, message, primary, conflict.reason, tuple(notes), severity=Severity.WARNING
    )


def _spans(item: Lowered, constraints: Iterable[Constraint]) -> list[Span]:
    spans: list[Span] = []
    for c in constraints:
        spans += [s for s in item.spans.get(c, ()) if s not in spans]
    return spans


def _primary(spans: list[Span], fallback: Span) -> tuple[Span, list[Span]]:
    """The span to show (both conditions at once when they share a line), and the others."""
    if not spans:
        return fallback, []
    spans = sorted(spans, key=lambda s: (s.line, s.column))
    last = spans[-1]
    same_line = [s for s in spans if s.line == s.end_line == last.line]
    if len(same_line) == len(spans):
        first = spans[0]
        end = max(s.end_column for s in spans)
        return Span(first.file, first.line, first.column, first.line, end), []
    return last, spans[:-1]


def _for_rows(diagnostic: Diagnostic, items: list[Lowered], kept: int) -> Diagnostic:
    """The warning of the rows ``items`` of a batch, which share its span; ``kept`` rows of the
    batch were lowered (all, unless a row filter dropped some)."""
    batch = items[0].origin.batch
    if batch is None:
        return diagnostic
    rows = [f"{batch.data}[{item.row}]" for item in items]
    if len(rows) == 1:
        return replace(diagnostic, message=f"{diagnostic.message}, for row {rows[0]}")
    total = batch.stop - batch.start
    if len(rows) == total:
        where = f"every row ({total})"
    elif len(rows) == kept:
        where = f"every row the filter kept ({kept} of {total})"
    else:
        named = ", ".join(rows[:_ROWS_NAMED])
        if len(rows) > _ROWS_NAMED:
            named += f" and {len(rows) - _ROWS_NAMED} more"
        of = f"the {kept} rows the filter kept" if kept < total else f"{total} rows"
        where = f"{len(rows)} of {of}: {named}"
    return replace(
        diagnostic,
        message=f"{diagnostic.message}, for {where}",
        notes=(f"the values shown are those of {rows[0]}", *diagnostic.notes),
    )
