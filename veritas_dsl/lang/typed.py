"""The checked spec: names resolved, models and data loaded, every expression typed.

Affine expressions are :class:`Lin` forms over symbols: input features and model outputs (the
unknowns), and the features and outputs of the batch row of a ``for`` query (constants that take a
value per row, bound when the query is lowered). A comparison of two affine expressions is kept
as ``lin op 0``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from veritas_dsl.data import Dataset
from veritas_dsl.diagnostics import Diagnostic, Span
from veritas_dsl.ir.lowered import EngineChoice
from veritas_dsl.ir.query import Feature, Row
from veritas_dsl.model.ensemble import Ensemble

if TYPE_CHECKING:  # only a spec that reads a forest imports its kernels (Numba)
    from veritas_dsl.unlearning.dare import DareForest

# Symbols of affine forms:
#   ("1",)                          the constant 1
#   ("feat", instance, feature)     an input feature of an instance
#   ("out", model, instance, k)     output k of a model on an instance
#   ("rowcol", column)              a column of the batch row (a feature, a label, ...)
#   ("rowout", model, k)            output k of a model on the batch row
Symbol = tuple
ONE: Symbol = ("1",)


@dataclass(frozen=True)
class Lin:
    """``sum(coef * symbol)``; ``kind`` says which unknowns it involves."""

    coefs: tuple[tuple[Symbol, float], ...]

    @staticmethod
    def of(mapping: Mapping[Symbol, float]) -> Lin:
        return Lin(tuple((s, c) for s, c in mapping.items() if c != 0.0))

    @staticmethod
    def constant(value: float) -> Lin:
        return Lin.of({ONE: value})

    def as_dict(self) -> dict[Symbol, float]:
        return dict(self.coefs)

    def plus(self, other: Lin, scale: float = 1.0) -> Lin:
        total = self.as_dict()
        for symbol, coef in other.coefs:
            total[symbol] = total.get(symbol, 0.0) + scale * coef
        return Lin.of(total)

    def times(self, factor: float) -> Lin:
        return Lin.of({s: c * factor for s, c in self.coefs})

    @property
    def kind(self) -> str:
        """``constant``, ``features``, ``outputs`` or ``mixed`` (features and outputs)."""
        heads = {symbol[0] for symbol, _ in self.coefs}
        unknown = heads & {"feat", "out"}
        if not unknown:
            return "constant"
        if unknown == {"feat"}:
            return "features"
        if unknown == {"out"}:
            return "outputs"
        return "mixed"

    @property
    def row_dependent(self) -> bool:
        return any(symbol[0] in ("rowcol", "rowout") for symbol, _ in self.coefs)

    def constant_value(self) -> float:
        """The value of a form with no unknowns and no batch-row symbols."""
        return float(sum(c for s, c in self.coefs if s == ONE))


# -- typed values other than affine forms ---------------------------------------------------------


@dataclass(frozen=True)
class Instance:
    name: str


@dataclass(frozen=True)
class RowValue:
    """A data row: ``data[index]``, or the batch row of a ``for`` query (``index is None``)."""

    data: str
    index: int | None
    label: str


@dataclass(frozen=True)
class ModelRef:
    name: str


@dataclass(frozen=True)
class GroupRef:
    """``x.housing`` for a one-hot group ``housing``."""

    instance: str
    group: str


@dataclass(frozen=True)
class Member:
    """A member of a one-hot group, named in ``x.housing == housing_rent``."""

    group: str
    feature: int


@dataclass(frozen=True)
class ZeroScale:
    """``statistic(data)`` of a scale is 0 on ``features`` (indices), which keep scale 1; the
    query warns of those it lets the distance see (:mod:`veritas_dsl.lang.scales`)."""

    statistic: str
    data: str
    features: tuple[int, ...]
    span: Span


@dataclass(frozen=True)
class Distance:
    norm: str  # a name of names.NORMS
    instance: str
    other: Instance | RowValue
    weights: tuple[float, ...] | None = None  # 1 / scale per feature (None: unscaled)
    zero: ZeroScale | None = None


@dataclass(frozen=True)
class Changed:
    instance: str
    other: Instance | RowValue


@dataclass(frozen=True)
class ClassOf:
    """``class(model, subject)``, or with ``vote`` the class most trees vote for,
    ``vote(model, subject)``."""

    model: str
    subject: Instance | RowValue
    vote: bool = False


@dataclass(frozen=True)
class Proba:
    """``proba(model, subject)`` of a model whose probability is the logistic function of its
    ``margin`` (a form of outputs): exact only compared with a number (lang/probability.py)."""

    model: str
    margin: Lin


Value = (
    Lin | Instance | RowValue | ModelRef | GroupRef | Member | Distance | Changed | ClassOf | Proba
)

# -- typed conditions -------------------------------------------------------------------------


@dataclass(frozen=True)
class LinCompare:
    """``lin op 0`` where ``lin`` involves only features, or only outputs."""

    lin: Lin
    op: str
    span: Span


@dataclass(frozen=True)
class DistanceAtMost:
    """``distance <= bound`` (``bound`` a constant form)."""

    distance: Distance
    bound: Lin
    span: Span


@dataclass(frozen=True)
class ChangedAtMost:
    """``changed(...) <= bound``, with ``strict`` for ``<``."""

    changed: Changed
    bound: Lin
    strict: bool
    span: Span


@dataclass(frozen=True)
class MeasureOnRows:
    """``measure op bound`` where the distance or count of changed features relates bound rows
    only (a row filter's row, data rows): decided on the rows' values, so any ``op`` goes."""

    measure: Distance | Changed
    op: str
    bound: Lin
    span: Span


@dataclass(frozen=True)
class ClassCompare:
    """``class(m, a) == class(m2, b)`` or ``class(m, a) == k``, or with ``!=``."""

    left: ClassOf
    right: ClassOf | Lin
    equal: bool
    span: Span


@dataclass(frozen=True)
class TieAll:
    """``a == b except ...``: the two instances share every feature but ``excepted``."""

    first: str
    second: str
    excepted: frozenset[int]
    span: Span


@dataclass(frozen=True)
class SameAsRow:
    """``x == row except ...``: the instance takes the row's value on every feature but
    ``excepted``."""

    instance: str
    row: RowValue
    excepted: frozenset[int]
    span: Span


@dataclass(frozen=True)
class GroupIs:
    """``x.group == member`` (``equal``) or ``!=``."""

    instance: str
    feature: int
    equal: bool
    span: Span


@dataclass(frozen=True)
class AllOf:
    parts: tuple[Condition, ...]


@dataclass(frozen=True)
class EitherOf:
    parts: tuple[Condition, ...]


Condition = (
    LinCompare
    | DistanceAtMost
    | ChangedAtMost
    | MeasureOnRows
    | ClassCompare
    | TieAll
    | SameAsRow
    | GroupIs
    | AllOf
    | EitherOf
)

# -- goals, expectations, engines -------------------------------------------------------------


@dataclass(frozen=True)
class OptimizeOutputs:
    sense: str  # "maximize" or "minimize"
    lin: Lin
    span: Span
    probability: bool = False  # written as proba(m, x): the margin, shown as a probability too


@dataclass(frozen=True)
class OptimizeWorst:
    """``maximize min(...)`` (the least of ``lins``) or ``minimize max(...)`` (the largest)."""

    sense: str  # "maximize" or "minimize"
    lins: tuple[Lin, ...]
    span: Span


@dataclass(frozen=True)
class ClosestDistance:
    distance: Distance
    span: Span


@dataclass(frozen=True)
class FindAny:
    span: Span | None


@dataclass(frozen=True)
class ProveThat:
    conclusion: Condition
    span: Span


Goal = OptimizeOutputs | OptimizeWorst | ClosestDistance | FindAny | ProveThat


@dataclass(frozen=True)
class Expectation:
    """``expect upper <= 2.5`` (subject ``upper``/``lower`` with ``op`` and ``value``), or
    ``expect found`` / ``expect none``."""

    subject: str
    op: str | None
    value: Lin | None
    text: str
    span: Span
    probability: float | None = None  # as written, of a proba objective; ``value`` its margin


@dataclass(frozen=True)
class Batch:
    """The rows ``data[start:stop]`` a ``for`` query runs on, bound to ``name``; with a
    ``filter``, only the rows where it holds. The filter is typed with ``name`` as an instance
    (``("feat", name, f)``, ``("out", model, name, k)``), so that lowering decides it exactly
    as an engine would at the row's float32 point; data columns that are not features are
    ``("rowcol", column)``."""

    name: str
    data: str
    start: int
    stop: int
    filter: Condition | None = None
    filter_span: Span | None = None


@dataclass(frozen=True)
class CheckedQuery:
    name: str
    is_property: bool
    instances: tuple[str, ...]
    batch: Batch | None
    constraints: tuple[Condition, ...]
    goal: Goal
    expectations: tuple[Expectation, ...]
    engines: tuple[EngineChoice, ...]
    span: Span


@dataclass(frozen=True)
class CheckedSpec:
    """Everything a spec declares, resolved, plus its checked queries."""

    path: str
    models: dict[str, Ensemble]
    datasets: dict[str, Dataset]
    features: tuple[Feature, ...]
    groups: dict[str, tuple[int, ...]]
    constants: dict[str, float]
    queries: tuple[CheckedQuery, ...]
    model_paths: dict[str, str] = field(default_factory=dict)
    #: Models given as Python objects: the SHA-256 of what was read of each (for the digest).
    model_digests: dict[str, bytes] = field(default_factory=dict)
    #: `dare` models and those derived from them, as forests (``models`` holds their exports).
    forests: dict[str, DareForest] = field(default_factory=dict)
    #: Each derived model's function (``delete`` or ``retrain``) and base model, in order.
    derivations: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: Located warnings found while checking (a statistic of 0 in a scale), once each.
    warnings: tuple[Diagnostic, ...] = ()

    def row(self, data: str, index: int) -> Row:
        """Row ``index`` of a data set, in the feature space's order."""
        dataset = self.datasets[data]
        columns = [dataset.columns.index(f.name) for f in self.features]
        return Row(tuple(float(v) for v in dataset.values[index, columns]), f"{data}[{index}]")
