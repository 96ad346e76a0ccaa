"""Models derived from a ``dare`` forest: ``delete(base, rows = ...)`` and
``retrain(base, without = ...)``, their row ids checked and located (in the spec or in a rows file),
and the certified bounds ``worst_case(base, deletions = k)`` and ``best_case(...)`` of every forest
``delete`` of at most k rows gives (not of a ``retrain``: unlearning/checking/coverage.py).

The base forest is never changed: each derived model is made on a copy, once per check.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from veritas_dsl.data import DataError, read_row_ids
from veritas_dsl.diagnostics import Span, suggest
from veritas_dsl.inputs import excerpt
from veritas_dsl.lang import ast
from veritas_dsl.lang.context import Context, Failed, Scope
from veritas_dsl.model.ensemble import Ensemble, ModelError
from veritas_dsl.unlearning.dare.derive import deleted, id_problems, retrained

if TYPE_CHECKING:
    from veritas_dsl.unlearning.dare import DareForest

#: Each derivation and its one argument: the rows to leave out, or how many may be deleted.
DERIVATIONS = {
    "delete": "rows",
    "retrain": "without",
    "worst_case": "deletions",
    "best_case": "deletions",
}
#: The certified bounds: which of ``worst_case``'s pair each one is.
BOUNDS = {"worst_case": 0, "best_case": 1}
_EXAMPLES = {
    "delete": "model after = delete(before, rows = [3, 17])",
    "retrain": "model again = retrain(before, without = [3, 17])",
    "worst_case": "model w = worst_case(before, deletions = 2)",
    "best_case": "model b = best_case(before, deletions = 2)",
}


T = TypeVar("T")


@dataclass(frozen=True)
class _Id:
    value: int
    span: Span


class DerivedModels:
    """Checks ``model NAME = delete(...)``, ``= retrain(...)``, ``= worst_case(...)`` and
    ``= best_case(...)`` against the models before it; the numbers in its arguments are typed by
    ``expressions`` (an :class:`~veritas_dsl.lang.expressions.Expressions`)."""

    def __init__(self, ctx: Context, expressions) -> None:
        self.ctx = ctx
        self.expressions = expressions

    def derived_decl(self, decl: ast.DerivedDecl, later: dict[str, Span]) -> None:
        """``later``: names of models declared after this declaration, and where."""
        if not self.ctx.declare(decl.name, decl.span, "model"):
            return
        try:
            if decl.func in BOUNDS:
                self.ctx.models[decl.name], self.ctx.certified_rows[decl.name] = self.bound(
                    decl, later
                )
                self.ctx.model_formats[decl.name] = decl.func
                self.ctx.lineage[decl.name] = (decl.func, decl.base.id)
                return
            forest = self.derive(decl, later)
        except Failed:
            self.ctx.broken.add(decl.name)
            return
        self.ctx.forests[decl.name] = forest
        self.ctx.models[decl.name] = forest.to_ensemble()
        self.ctx.derivations[decl.name] = self.ctx.lineage[decl.name] = (decl.func, decl.base.id)

    def derive(self, decl: ast.DerivedDecl, later: dict[str, Span]) -> DareForest:
        if decl.func not in DERIVATIONS:
            raise self.ctx.error(
                "V411",
                f"unknown model derivation `{decl.func}`",
                decl.func_span,
                "not `delete`, `retrain`, `worst_case` or `best_case`",
                help=suggest(decl.func, DERIVATIONS) or _EXAMPLES["delete"],
            )
        base = self.base_forest(decl, later)
        arg = self.rows_arg(decl)
        ids = self.row_ids(arg, decl, base)
        values = [i.value for i in ids]
        if len(set(values)) >= len(base.remaining()):
            raise self.ctx.error(
                "V413",
                f"this leaves `{decl.base.id}` no training row",
                arg.span,
                f"all {len(base.remaining())} remaining rows",
                help="a forest needs rows to learn from",
            )
        try:
            return deleted(base, values) if decl.func == "delete" else retrained(base, values)
        except ModelError as error:
            raise self.ctx.error(
                "V413", f"cannot {decl.func} `{decl.base.id}`: {error}", decl.span
            ) from None

    def bound(self, decl: ast.DerivedDecl, later: dict[str, Span]) -> tuple[Ensemble, int]:
        """``(bound, k)``: ``worst_case(base, deletions = k)`` (the lower bound) or
        ``best_case`` (the upper) of every forest ``DareForest.delete`` of at most k rows of
        ``base`` gives; refused (V421, naming the splits) when a deletion may change a split.
        A refit is not covered (unlearning/checking/coverage.py)."""
        # Imported here: the certificate's kernels (Numba) load only for a spec that bounds one.
        from veritas_dsl.unlearning.dare.certificate import UnstableError, worst_case

        base = self.base_forest(decl, later)
        arg = self.rows_arg(decl)
        if isinstance(arg.value, ast.RowList | ast.Text):
            raise self.ctx.error(
                "V420",
                "`deletions` is a number of rows",
                arg.value.span,
                help=_EXAMPLES[decl.func],
            )
        self.early(arg.value)
        k = self.expressions.constant(arg.value, Scope())
        if not k.is_integer() or k < 0:
            raise self.ctx.error(
                "V420",
                f"`{k:g}` is not a number of rows",
                arg.value.span,
                help="a whole number, 0 or more: the most rows any deletion removes",
            )
        try:
            return worst_case(base, int(k))[BOUNDS[decl.func]], int(k)
        except UnstableError as error:
            shown = [str(node) for node in error.nodes[: UnstableError.SHOWN]]
            more = len(error.nodes) - len(shown)
            raise self.ctx.error(
                "V421",
                f"`{decl.func}` of `{decl.base.id}` is not certified: {len(error.nodes)} "
                f"split(s) can change when {int(k)} row(s) are deleted",
                decl.span,
                "some deletion changes a split",
                help="a smaller `deletions`, or a forest whose splits hold more rows "
                "(see docs/unlearning-certificates.md)",
                notes=shown + ([f"and {more} more"] if more > 0 else []),
            ) from None

    def base_forest(self, decl: ast.DerivedDecl, later: dict[str, Span]) -> DareForest:
        base = decl.base
        if base.id in self.ctx.broken:
            raise Failed  # its own error says it all
        if base.id not in self.ctx.declared:
            if base.id in later:
                raise self.ctx.error(
                    "V217",
                    f"model `{base.id}` is declared later",
                    base.span,
                    "used before its declaration",
                    help=f"move `{decl.name}` below the declaration of `{base.id}`",
                    notes=[f"`{base.id}` is declared at {later[base.id]}"],
                )
            raise self.ctx.error(
                "V217",
                f"unknown model `{base.id}`",
                base.span,
                "not a model declared above",
                help=suggest(base.id, self.ctx.models)
                or 'declare it: model m = dare "forest.dare"',
            )
        if base.id not in self.ctx.forests:
            raise self.ctx.error(
                "V410",
                f"`{base.id}` is not a `dare` forest: its format is "
                f"`{self.ctx.model_formats.get(base.id, '?')}`",
                base.span,
                f"`{decl.func}` needs a DareForest",
                help='declare a forest saved by DareForest.save: model m = dare "forest.dare"',
            )
        return self.ctx.forests[base.id]

    def rows_arg(self, decl: ast.DerivedDecl) -> ast.DeriveArg:
        wanted = DERIVATIONS[decl.func]
        found = None
        for arg in decl.args:
            if arg.name != wanted:
                raise self.ctx.error(
                    "V403",
                    f"unknown argument `{arg.name}` of `{decl.func}`",
                    arg.span,
                    help=suggest(arg.name, [wanted]) or f"`{decl.func}` takes `{wanted}`",
                )
            if found is not None:
                raise self.ctx.error("V403", f"`{wanted}` is given twice", arg.span)
            found = arg
        if found is None and decl.func in BOUNDS:
            raise self.ctx.error(
                "V403",
                f"`{decl.func}` needs `{wanted}`: the most rows a deletion may remove",
                decl.span,
                help=_EXAMPLES[decl.func],
            )
        if found is None:
            raise self.ctx.error(
                "V403",
                f"`{decl.func}` needs `{wanted}`: the training rows to leave out",
                decl.span,
                help=f'{_EXAMPLES[decl.func]}, or {wanted} = "ids.txt" (one id a line)',
            )
        return found

    def row_ids(self, arg: ast.DeriveArg, decl: ast.DerivedDecl, base: DareForest) -> list[_Id]:
        """The ids of ``arg``, each checked against ``base``; every bad one is reported."""
        if not isinstance(arg.value, ast.RowList | ast.Text):
            raise self.ctx.error(
                "V412",
                f"`{arg.name}` is a list of row ids or the name of a rows file",
                arg.value.span,
                help=_EXAMPLES[decl.func],
            )
        ids = self.file_ids(arg.value) if isinstance(arg.value, ast.Text) else self.list_ids(arg)
        if not ids and decl.func == "delete":
            raise self.ctx.error(
                "V412", "no rows to delete", arg.value.span, help=_EXAMPLES["delete"]
            )
        n, name = base.n_rows, decl.base.id
        problems = id_problems(base, [i.value for i in ids])
        for k, reason, first in problems:
            row = ids[k]
            if reason == "range":
                message = f"row {row.value} does not exist: `{name}` has rows 0 to {n - 1}"
                self.ctx.error("V412", message, row.span, "out of range")
            elif reason == "twice":
                notes = [f"first listed at {ids[first].span}"]
                self.ctx.error(
                    "V412", f"row {row.value} is listed twice", row.span, "again", notes=notes
                )
            else:
                message = f"row {row.value} is already deleted in `{name}`"
                self.ctx.error(
                    "V412", message, row.span, "the saved forest forgot it", help="leave it out"
                )
        if problems:
            raise Failed
        return ids

    def list_ids(self, arg: ast.DeriveArg) -> list[_Id]:
        ids = []
        for item in arg.value.items:
            self.early(item, "V412")
            value = self.expressions.constant(item, Scope())
            if not value.is_integer() or value < 0:
                raise self.ctx.error(
                    "V412",
                    f"`{value:g}` is not a row id",
                    item.span,
                    help="a row id is a whole number, 0 for the first training row",
                )
            ids.append(_Id(int(value), item.span))
        return ids

    def early(self, item: ast.Expr, code: str = "V420") -> None:
        """Models are read before data sets: ``item`` must not name a constant that reads one."""
        if isinstance(item, ast.Name) and item.id in self.ctx.late_constants:
            raise self.ctx.error(
                code,
                f"`{item.id}` is not known when models are read",
                item.span,
                "a constant that reads more than numbers",
                help="here a number, or a constant made of numbers and such constants",
                notes=[f"`{item.id}` is declared at {self.ctx.late_constants[item.id]}"],
            )

    def file_ids(self, text: ast.Text) -> list[_Id]:
        path, rows = self.read_rows_file(text, read_row_ids)
        return [
            _Id(r.value, Span(str(path), r.line, r.column, r.line, r.column + r.width))
            for r in rows
        ]

    def read_rows_file(self, text: ast.Text, reader: Callable[[Path], T]) -> tuple[Path, T]:
        """The rows file ``text`` names (relative to the spec) read by ``reader``; its errors
        located (V408 in the file, V406 at the name)."""
        path = self.ctx.path_of(text)
        try:
            return path, reader(path)
        except DataError as error:
            span = Span(
                error.path, error.line, error.column, error.line, error.column + error.width
            )
            raise self.ctx.error("V408", error.message, span, help=error.help) from None
        except OSError as error:
            raise self.ctx.error(
                "V406",
                f"cannot read the rows file `{excerpt(text.value)}`: {error.strerror or error}",
                text.span,
            ) from None
