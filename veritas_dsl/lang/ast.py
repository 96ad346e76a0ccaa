"""The syntax of a `.ver` file as immutable nodes, each remembering where it came from.

These nodes say only what was written; names are resolved and types checked in ``check.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

from veritas_dsl.diagnostics import Span

# -- expressions ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Number:
    """A literal; ``text`` is as written (``1e400`` reads as an infinite ``value``)."""

    value: float
    text: str
    span: Span


@dataclass(frozen=True)
class Text:
    """A string literal (paths, option values)."""

    value: str
    span: Span


@dataclass(frozen=True)
class Quantity:
    """A number with a unit: ``10s``, ``500ms``, ``2GB``."""

    value: float
    unit: str
    span: Span


@dataclass(frozen=True)
class Name:
    id: str
    span: Span


@dataclass(frozen=True)
class Attr:
    """``obj.name``: a feature of an instance or of a data row."""

    obj: Expr
    name: str
    name_span: Span
    span: Span


@dataclass(frozen=True)
class Index:
    """``obj[index]``: a data row, or an output of a model."""

    obj: Expr
    index: Expr
    span: Span


@dataclass(frozen=True)
class FeatureValue:
    """``income: 1000`` in a per-feature block."""

    name: str
    name_span: Span
    value: Expr
    span: Span


@dataclass(frozen=True)
class PerFeature:
    """``{income: 1000, age: 5}``: a value for some features (a distance's ``scale``)."""

    entries: tuple[FeatureValue, ...]
    span: Span


@dataclass(frozen=True)
class KeywordArg:
    """``name = value`` among a call's arguments (``scale = mad(train)``)."""

    name: str
    name_span: Span
    value: Expr | PerFeature
    span: Span


@dataclass(frozen=True)
class Call:
    """``func(args, keywords)``: a model output, ``class``, a distance (``linf``, ``l1``, ``l2``)
    or ``changed`` (keywords: ``scale`` of a distance), or ``mad``/``std`` of a data set inside a
    scale."""

    func: str
    func_span: Span
    args: tuple[Expr, ...]
    span: Span
    keywords: tuple[KeywordArg, ...] = ()


@dataclass(frozen=True)
class Arith:
    """``a + b - c`` or ``a * b / c``: operands of one precedence level, combined left to right.

    ``ops[k]`` (``+ - * /``) stands between ``operands[k]`` and ``operands[k + 1]``. A chain is
    one node, however long, so that no walk of the tree goes deep on it.
    """

    operands: tuple[Expr, ...]
    ops: tuple[str, ...]
    span: Span


@dataclass(frozen=True)
class Neg:
    operand: Expr
    span: Span


@dataclass(frozen=True)
class EachOf:
    """``func(part for var in family)``: ``min`` or ``max`` of ``part`` over the models of a
    family, ``var`` naming each in turn (an objective: ``maximize min(m(x) for m in V)``)."""

    func: str
    func_span: Span
    part: Expr
    var: Name
    family: Name
    span: Span


Expr = Number | Name | Attr | Index | Call | Arith | Neg | EachOf

# -- conditions -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Compare:
    """``a op b [op c ...] [except f, g]``."""

    operands: tuple[Expr, ...]
    ops: tuple[str, ...]
    op_spans: tuple[Span, ...]
    excepted: tuple[Name, ...]
    span: Span


@dataclass(frozen=True)
class And:
    parts: tuple[Cond, ...]
    span: Span


@dataclass(frozen=True)
class Or:
    parts: tuple[Cond, ...]
    span: Span


@dataclass(frozen=True)
class Not:
    part: Cond
    span: Span


@dataclass(frozen=True)
class ForEach:
    """``part for var in family``: ``part`` holds for every model of ``family``, ``var`` naming
    each in turn."""

    part: Cond
    var: Name
    family: Name
    span: Span


Cond = Compare | And | Or | Not | ForEach

# -- declarations -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Option:
    name: str
    value: Expr | Text | Quantity
    span: Span


@dataclass(frozen=True)
class ModelDecl:
    """``model NAME = KIND "path" (options)``; ``model NAME = KIND`` (no ``path``: the model is
    given from Python)."""

    name: str
    kind: str
    kind_span: Span
    path: Text | None
    options: tuple[Option, ...]
    span: Span


@dataclass(frozen=True)
class RowList:
    """``[3, 17, 42]``: training-row ids, as written (checked in ``check.py``)."""

    items: tuple[Expr, ...]
    span: Span


@dataclass(frozen=True)
class DeriveArg:
    """``rows = [3, 17]``, ``without = "ids.txt"`` or ``deletions = 2`` in a derived model's
    declaration."""

    name: str
    value: RowList | Text | Expr
    span: Span


@dataclass(frozen=True)
class DerivedDecl:
    """``model NAME = FUNC(BASE, ARG = ..., ...)``: a model made from another one
    (``delete``, ``retrain``, ``worst_case`` and ``best_case`` of a ``dare`` forest)."""

    name: str
    func: str
    func_span: Span
    base: Name
    args: tuple[DeriveArg, ...]
    span: Span


@dataclass(frozen=True)
class FamilyDecl:
    """``models NAME = FUNC(BASE, OPTION = ..., ...)``: a family of models made from another
    one (``deletions`` of a ``dare`` forest)."""

    name: str
    func: str
    func_span: Span
    base: Name
    args: tuple[Option, ...]
    span: Span


@dataclass(frozen=True)
class DataDecl:
    """``data NAME = KIND "path" (options)``."""

    name: str
    kind: str
    kind_span: Span
    path: Text
    options: tuple[Option, ...]
    span: Span


@dataclass(frozen=True)
class FeatureDecl:
    """``NAME : real|int in [lo, hi]``, ``NAME : bool`` or ``NAME : onehot(a, b, c)``."""

    name: str
    kind: str  # "real", "int", "bool", "onehot"
    lo: Expr | None
    hi: Expr | None
    members: tuple[Name, ...]
    span: Span


@dataclass(frozen=True)
class FeaturesBlock:
    """``features { ... }``; with ``from DATA`` (``source``), ranges from a data set's columns."""

    decls: tuple[FeatureDecl, ...]
    span: Span
    source: Name | None = None


@dataclass(frozen=True)
class ConstDecl:
    name: str
    value: Expr
    span: Span


# -- statements inside a query or property ----------------------------------------------------


@dataclass(frozen=True)
class Input:
    names: tuple[Name, ...]
    span: Span


@dataclass(frozen=True)
class Where:
    cond: Cond
    span: Span


@dataclass(frozen=True)
class Objective:
    sense: str  # "maximize" or "minimize"
    expr: Expr
    span: Span


@dataclass(frozen=True)
class FindStmt:
    span: Span


@dataclass(frozen=True)
class Forall:
    """``forall x[, y]: premise => conclusion`` (the premise may be absent)."""

    names: tuple[Name, ...]
    premise: Cond | None
    conclusion: Cond
    span: Span


@dataclass(frozen=True)
class Expect:
    """``expect upper <= 2.5``, ``expect lower >= 0``, ``expect found``, ``expect none``."""

    subject: str
    subject_span: Span
    op: str | None
    value: Expr | None
    span: Span


@dataclass(frozen=True)
class EngineSpec:
    name: str
    options: tuple[Option, ...]
    span: Span


@dataclass(frozen=True)
class SolveWith:
    engines: tuple[EngineSpec, ...]
    span: Span


Statement = Input | Where | Objective | FindStmt | Forall | Expect | SolveWith


@dataclass(frozen=True)
class Batch:
    """``for NAME in DATA[start:stop]`` (``for NAME in DATA``: every row), with ``where FILTER`` to
    keep only some rows."""

    name: str
    data: Name
    start: Expr | None
    stop: Expr | None
    span: Span
    filter: Cond | None = None


@dataclass(frozen=True)
class QueryDecl:
    """A ``query`` or a ``property`` (``is_property``) block."""

    name: str
    is_property: bool
    batch: Batch | None
    body: tuple[Statement, ...]
    span: Span


Item = ModelDecl | DerivedDecl | FamilyDecl | DataDecl | FeaturesBlock | ConstDecl | QueryDecl


@dataclass(frozen=True)
class SpecFile:
    """A parsed `.ver` file; ``path`` anchors relative paths in declarations."""

    path: str
    items: tuple[Item, ...]
