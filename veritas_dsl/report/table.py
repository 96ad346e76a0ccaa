"""A counterexample or witness as a readable table: one row per feature, one column per instance."""

from __future__ import annotations

import math

from veritas_dsl.ir.query import Query
from veritas_dsl.result import Result, Witness

#: Above this many features, only the rows that matter are shown.
_ALL_ROWS = 24


def _number(value: float) -> str:
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.7g}"


def witness_table(query: Query, witness: Witness, reference: dict[str, float] | None = None) -> str:
    """The witness's inputs, feature by feature; with two instances, differing rows get a ``*``.

    ``reference`` (a data row by feature name) adds a column and marks the features that moved.
    """
    names = [f.name for f in query.features]
    instances = list(witness.inputs)
    columns = [[_number(float(v)) for v in witness.inputs[i]] for i in instances]
    header = ["feature", *instances]
    if reference is not None:
        columns.insert(0, [_number(reference[n]) for n in names])
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


def bounds_text(result: Result) -> str:
    """``value 0.42``, ``in [0.1, 0.5]`` or the status, for one line of a report."""
    if result.lower is None:
        return result.termination.value
    if result.lower == result.upper:
        return f"value {_number(result.lower)}"
    return f"in [{_number(result.lower)}, {_number(result.upper)}]"
