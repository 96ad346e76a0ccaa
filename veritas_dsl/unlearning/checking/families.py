"""Families of models: ``models V = deletions(base, fraction = 0.01, count = 20, seed = 0)`` (or
``rows = "sets.txt"``): the ``dare`` forest ``base`` as it is and K exact DaRE deletion variants
of it; and ``for m in V`` around a condition, which holds when it holds for every one.

A family's models are ``base`` itself (no deletion is one of the outcomes, so a condition over
the family also holds on the model as it is) and ``V[0]``, ``V[1]``, ... (names no declaration
can take unquoted), each the base after ``DareForest.delete`` of its own set of training rows
(``unlearning.dare.derive.deleted``, so the base is never changed); not a refit, which draws
random nodes afresh. Drawn sets are a function of the base's remaining rows, the fraction, the
count and the seed alone: the same spec gives the same variants.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from veritas_dsl.data import read_row_sets
from veritas_dsl.diagnostics import Span, suggest
from veritas_dsl.lang import ast
from veritas_dsl.lang.context import Context, Failed, Scope
from veritas_dsl.model.ensemble import ModelError
from veritas_dsl.steps import stage
from veritas_dsl.unlearning.checking.derived import DerivedModels
from veritas_dsl.unlearning.dare.derive import deleted, id_problems

if TYPE_CHECKING:
    from veritas_dsl.unlearning.dare import DareForest

#: The functions that make a family, and their arguments.
FAMILIES = {"deletions": ("fraction", "count", "seed", "rows")}
_EXAMPLE = "models V = deletions(before, fraction = 0.01, count = 20, seed = 0)"
#: The most models a family may hold: a typo like `count = 1e6` is an error, not an hour's wait.
MAX_COUNT = 1000


def draw_deletions(forest: DareForest, fraction: float, count: int, seed: int) -> list[list[int]]:
    """``count`` sets of ``round(fraction * n)`` distinct ids among ``forest``'s ``n`` remaining
    rows, drawn uniformly by a generator seeded with ``seed`` (each set sorted)."""
    alive = forest.remaining()
    size = round(fraction * len(alive))
    rng = np.random.default_rng(seed)
    return [sorted(rng.choice(alive, size, replace=False).tolist()) for _ in range(count)]


class Families:
    """Checks ``models NAME = deletions(...)``: ``ctx.families`` maps each family to its models'
    names, the base first. ``derived`` finds the base forest and reads rows files."""

    def __init__(self, ctx: Context, expressions, derived: DerivedModels) -> None:
        self.ctx = ctx
        self.expressions = expressions
        self.derived = derived

    def family_decl(self, decl: ast.FamilyDecl, later: dict[str, Span]) -> None:
        """``later``: names of models declared after this declaration, and where."""
        if not self.ctx.declare(decl.name, decl.span, "family of models"):
            return
        try:
            if decl.func not in FAMILIES:
                raise self.ctx.error(
                    "V411",
                    f"unknown family of models `{decl.func}`",
                    decl.func_span,
                    "not `deletions`",
                    help=suggest(decl.func, FAMILIES) or _EXAMPLE,
                )
            base = self.derived.base_forest(decl, later)
            sets = self.deletion_sets(decl, base)
            base.warm(sorted({r for ids in sets for r in ids}))  # shared by the variants
            # The model as it is comes first: deleting no row is one of the outcomes, and a
            # counterfactual the current model rejects is no recourse (issue 38).
            members = [decl.base.id]
            for k, ids in enumerate(sets):
                name = f"{decl.name}[{k}]"
                try:
                    with stage(f"family {decl.name}: model {k + 1} of {len(sets)}"):
                        forest = deleted(base, ids)
                except ModelError as error:
                    raise self.ctx.error(
                        "V413", f"cannot make `{name}` from `{decl.base.id}`: {error}", decl.span
                    ) from None
                self.ctx.models[name] = forest.to_ensemble()
                self.ctx.lineage[name] = ("delete", decl.base.id)
                members.append(name)
        except Failed:
            self.ctx.broken.add(decl.name)
            return
        self.ctx.families[decl.name] = tuple(members)

    def deletion_sets(self, decl: ast.FamilyDecl, base: DareForest) -> list[list[int]]:
        """The rows each model of the family forgets: drawn, or read from ``rows``."""
        args: dict[str, ast.Option] = {}
        for arg in decl.args:
            if arg.name not in FAMILIES[decl.func]:
                raise self.ctx.error(
                    "V403",
                    f"unknown argument `{arg.name}` of `{decl.func}`",
                    arg.span,
                    help=suggest(arg.name, FAMILIES[decl.func])
                    or "it takes fraction, count and seed, or rows",
                )
            if arg.name in args:
                raise self.ctx.error("V403", f"`{arg.name}` is given twice", arg.span)
            args[arg.name] = arg
        if "rows" in args:
            drawn = [args[a] for a in ("fraction", "count", "seed") if a in args]
            if drawn:
                raise self.ctx.error(
                    "V403",
                    f"`rows` lists the sets: `{drawn[0].name}` draws them",
                    drawn[0].span,
                    help="give `rows`, or `fraction` (with `count` and `seed`)",
                )
            return self.file_sets(args["rows"], decl, base)
        if "fraction" not in args:
            raise self.ctx.error(
                "V403",
                f"`{decl.func}` needs `fraction`: the share of training rows each model forgets",
                decl.span,
                help=f'{_EXAMPLE}, or rows = "sets.txt" (one set of ids a line)',
            )
        fraction = self.number_arg(args["fraction"])
        n = len(base.remaining())
        if not 0 < fraction < 1:
            raise self.ctx.error(
                "V420",
                f"`fraction` is a share of the rows, above 0 and below 1, not {fraction:g}",
                args["fraction"].value.span,
                help="e.g. fraction = 0.01 for 1 %",
            )
        size = round(fraction * n)
        if not 1 <= size < n:
            raise self.ctx.error(
                "V420",
                f"`fraction = {fraction:g}` of `{decl.base.id}`'s {n} rows deletes {size} rows",
                args["fraction"].value.span,
                help=f"a model forgets at least one row and keeps one: {1 / n:.3g} to "
                f"{(n - 1) / n:.3g}",
            )
        count = self.whole_arg(args.get("count"), 20, 1, MAX_COUNT)
        seed = self.whole_arg(args.get("seed"), 0, 0, 2**32 - 1)
        return draw_deletions(base, fraction, count, seed)

    def number_arg(self, arg: ast.Option) -> float:
        if isinstance(arg.value, ast.Text | ast.Quantity):
            raise self.ctx.error("V420", f"`{arg.name}` is a number", arg.value.span)
        if isinstance(arg.value, ast.Name) and arg.value.id in self.ctx.late_constants:
            raise self.ctx.error(
                "V420",
                f"`{arg.value.id}` is not known when models are read",
                arg.value.span,
                "a constant that reads more than numbers",
                notes=[f"`{arg.value.id}` is declared at {self.ctx.late_constants[arg.value.id]}"],
            )
        return self.expressions.constant(arg.value, Scope())

    def whole_arg(self, arg: ast.Option | None, default: int, lo: int, hi: int) -> int:
        if arg is None:
            return default
        value = self.number_arg(arg)
        if not (value.is_integer() and lo <= value <= hi):
            raise self.ctx.error(
                "V420",
                f"`{arg.name}` is a whole number from {lo} to {hi:,}, not {value:g}",
                arg.value.span,
            )
        return int(value)

    def file_sets(self, arg: ast.Option, decl: ast.FamilyDecl, base: DareForest) -> list[list[int]]:
        if not isinstance(arg.value, ast.Text):
            raise self.ctx.error(
                "V403", "`rows` is a file of sets, one a line", arg.span, help='rows = "sets.txt"'
            )
        text = arg.value
        path, sets = self.derived.read_rows_file(text, read_row_sets)
        if not sets:
            raise self.ctx.error("V412", "the rows file lists no set", text.span, help="3, 17, 42")
        if len(sets) > MAX_COUNT:
            raise self.ctx.error("V420", f"a family holds at most {MAX_COUNT} models", text.span)
        failed = False
        for ids in sets:
            where = [Span(str(path), r.line, r.column, r.line, r.column + r.width) for r in ids]
            for k, reason, first in id_problems(base, [r.value for r in ids]):
                failed = True
                value = ids[k].value
                if reason == "range":
                    message = f"row {value} does not exist: `{decl.base.id}` has rows 0 to "
                    self.ctx.error("V412", f"{message}{base.n_rows - 1}", where[k], "out of range")
                elif reason == "twice":
                    notes = [f"first listed at {where[first]}"]
                    self.ctx.error("V412", f"row {value} is listed twice", where[k], notes=notes)
                else:
                    message = f"row {value} is already deleted in `{decl.base.id}`"
                    self.ctx.error("V412", message, where[k], "the saved forest forgot it")
            if not failed and len(ids) >= len(base.remaining()):
                raise self.ctx.error(
                    "V413", f"this leaves `{decl.base.id}` no training row", where[0]
                )
        if failed:
            raise Failed
        return [[r.value for r in ids] for ids in sets]
