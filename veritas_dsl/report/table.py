"""A counterexample or witness as a readable table: one row per feature, one column per instance."""

from __future__ import annotations

import math

import numpy as np

from veritas_dsl.ir.query import Query
from veritas_dsl.result import Result, Termination, Witness

#: Above this many features, only the rows that matter are shown.
_ALL_ROWS = 24


def float32_text(value: float) -> str:
    """The shortest decimal that reads back as the same float32 as ``value``: what a user copies
    from a witness must reproduce it, also one float32 step below a threshold (``7`` for 7.0,
    ``-0`` for -0.0, ``1e-45`` for the least subnormal, ``inf``)."""
    value = np.float32(value)
    if not np.isfinite(value):
        return str(value)
    if value == 0 or 1e-4 <= abs(value) < 1e16:
        return np.format_float_positional(value, unique=True, trim="-")
    return np.format_float_scientific(value, unique=True, trim="-")


def _number(value: float) -> str:
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.7g}"


def times_text(results: list[Result]) -> str:
    """``0.12 s``, or each engine's time when several answered (``astar 0.01 s, milp 0.12 s``)."""
    if len(results) == 1:
        return f"{results[0].time_s:.2f} s"
    return ", ".join(f"{r.engine} {r.time_s:.2f} s" for r in results)


def witness_table(query: Query, witness: Witness, reference: dict[str, float] | None = None) -> str:
    """The witness's inputs, feature by feature; with two instances, differing rows get a ``*``.

    ``reference`` (a data row by feature name) adds a column and marks the features that moved.
    """
    names = [f.name for f in query.features]
    instances = list(witness.inputs)
    columns = [[float32_text(v) for v in witness.inputs[i]] for i in instances]
    header = ["feature", *instances]
    if reference is not None:
        columns.insert(0, [float32_text(reference[n]) for n in names])
        header.insert(1, "row")
    rows = []
    for f, name in enumerate(names):
        values = [column[f] for column in columns]
        rows.append([name, *values, "*" if len(set(values)) > 1 else ""])
    if len(rows) > _ALL_ROWS and any(r[-1] for r in rows):
        rows = [r for r in rows if r[-1]]
    widths = [max(len(str(x)) for x in column) for column in zip([*header, ""], *rows, strict=True)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=False)).rstrip()]
    lines += [
        "  ".join(str(x).ljust(w) for x, w in zip(r, widths, strict=True)).rstrip() for r in rows
    ]
    return "\n".join(lines)


def failure_text(result: Result) -> str | None:
    """Why the engine did not answer (it failed, or refused the query), or None when it ran."""
    if result.termination is Termination.UNSUPPORTED:
        return f"unsupported: {result.message}"
    if result.termination is Termination.ERROR:
        return f"engine {result.engine} failed: {result.message or 'no reason given'}"
    return None


def bounds_text(result: Result) -> str:
    """``value 0.42``, ``in [0.1, 0.5]`` or the status, for one line of a report."""
    if result.lower is None or failure_text(result):  # an engine that failed promises no bound
        return result.termination.value
    if result.lower == result.upper:
        return f"value {_number(result.lower)}"
    return f"in [{_number(result.lower)}, {_number(result.upper)}]"
