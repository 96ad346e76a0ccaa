"""A lowered query: the IR :class:`~veritas_dsl.ir.query.Query` and a small record of where it
came from, which is all that the running layer and the reports know of the spec.

Plain, picklable data: ``--jobs`` workers and Dask tasks receive these, not the spec's text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from veritas_dsl.diagnostics import Span
from veritas_dsl.ir.query import Query


@dataclass(frozen=True)
class EngineChoice:
    """``solve with astar(timeout = 10, gap = 1%)``: an engine, its limits (None: the default),
    where it was named, the gap between its bounds it may stop at (``gap_abs`` from a
    number, ``gap_rel`` from a share; :class:`~veritas_dsl.ir.decided.StopRule`), and how many
    of the best distinct solutions to report (``solutions``; None: the best one)."""

    name: str
    timeout_s: float | None
    max_steps: int | None
    max_memory_bytes: int | None
    span: Span
    gap_abs: float | None = None
    gap_rel: float | None = None
    solutions: int | None = None


@dataclass(frozen=True)
class Expectation:
    """``expect upper <= 2.5`` (``subject`` ``upper`` or ``lower``, ``op``, and ``bound``, the
    number), or ``expect found`` / ``expect none`` (``op`` and ``bound`` None)."""

    subject: str
    op: str | None
    bound: float | None
    text: str
    span: Span
    probability: float | None = None  # as written, of a proba objective; ``bound`` its margin


@dataclass(frozen=True)
class Rows:
    """The rows ``data[start:stop]`` a ``for`` query runs on, bound to ``name``;
    ``filter_span`` is where its row filter is written, None without one."""

    name: str
    data: str
    start: int
    stop: int
    filter_span: Span | None = None


@dataclass(frozen=True)
class Origin:
    """Where a query came from: its name, where it is written, whether it is a property, the
    rows of its batch and the engines it names. Every row of a batch shares one.
    ``probability``: the objective was written as ``proba(m, x)``, whose bounds are the
    margin's (ir/probability.py), reported as probabilities too."""

    name: str
    is_property: bool
    span: Span
    batch: Rows | None
    engines: tuple[EngineChoice, ...]
    probability: bool = False


@dataclass(frozen=True)
class Lowered:
    """One IR query with its origin, the batch row, its expectations, and where each
    constraint came from (``spans``: a constraint, or an alternative of an
    :class:`~veritas_dsl.ir.query.AnyOf`, to the conditions it was written in, for located
    messages about it)."""

    query: Query
    origin: Origin
    row: int | None
    expectations: tuple[Expectation, ...]
    spans: Mapping[object, tuple[Span, ...]] = field(default_factory=dict, compare=False)
