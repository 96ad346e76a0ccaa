"""The models of a spec, loaded and derived before anything is typed: each ``model`` declaration's
file read (through ``lang/files.py``), the models derived from a ``dare`` forest and the
families of them made (``unlearning/checking/``), then the feature space the models share.

Row lists and model options take constants: those made of numbers alone are evaluated first
(nothing they read is loaded yet); one that reads a data set is known only later, and naming it
here is an error (V420).
"""

from __future__ import annotations

from collections.abc import Collection

from veritas_dsl.diagnostics import Span, suggest
from veritas_dsl.inputs import excerpt
from veritas_dsl.ir.query import Feature
from veritas_dsl.lang import ast
from veritas_dsl.lang.context import Context, Failed, Scope
from veritas_dsl.lang.expressions import Expressions
from veritas_dsl.model.ensemble import ModelError
from veritas_dsl.model.in_memory import digest, imported
from veritas_dsl.model.load import FORMAT_OPTIONS, FORMATS, PickleRefused
from veritas_dsl.unlearning.checking.derived import DerivedModels
from veritas_dsl.unlearning.checking.families import Families

#: Upper ends of count options: a typo like `features = 1e30` is an error, not an allocation.
COUNT_LIMITS = {"features": 1_000_000, "classes": 100_000, "first_index": 1}
#: Declarations that make models: a model, a derived model, a family.
MAKERS = ast.ModelDecl | ast.DerivedDecl | ast.FamilyDecl


class Models:
    """Loads and derives the models of a spec into ``ctx``; numbers are typed by
    ``expressions``."""

    def __init__(self, ctx: Context, expressions: Expressions) -> None:
        self.ctx = ctx
        self.expressions = expressions
        self.derived = DerivedModels(ctx, expressions)
        self.families = Families(ctx, expressions, self.derived)

    def load(self, items: tuple[ast.Item, ...]) -> None:
        """Every declaration that makes a model, in order, then the feature space."""
        makers = [i for i in items if isinstance(i, MAKERS)]
        early = numeric_constants(items, {d.name for d in makers})
        for item in early:
            self.peek_constant(item)
        known = {c.name for c in early}
        self.ctx.late_constants = {
            i.name: i.span for i in items if isinstance(i, ast.ConstDecl) and i.name not in known
        }
        self.undeclared(makers)
        for k, item in enumerate(makers):
            later = {d.name: d.span for d in reversed(makers[k + 1 :])}
            if isinstance(item, ast.ModelDecl):
                self.model_decl(item)
            elif isinstance(item, ast.DerivedDecl):
                self.derived.derived_decl(item, later)
            else:
                self.families.family_decl(item, later)
        self.feature_space([i for i in makers if not isinstance(i, ast.FamilyDecl)])

    def model_decl(self, decl: ast.ModelDecl) -> None:
        if not self.ctx.declare(decl.name, decl.span, "model"):
            return
        if decl.kind not in FORMATS:
            self.ctx.broken.add(decl.name)
            self.ctx.error(
                "V402",
                f"unknown model format `{decl.kind}`",
                decl.kind_span,
                "not a model format",
                help=suggest(decl.kind, FORMATS) or f"formats are {', '.join(FORMATS)}",
            )
            return
        if decl.name in self.ctx.provided:
            self.given(decl)
            return
        if decl.path is None:
            self.ctx.broken.add(decl.name)
            self.ctx.error(
                "V415",
                f"model `{decl.name}` has no file, and none was given from Python",
                decl.span,
                "declared without a file",
                help=f"give it from Python: veritas_dsl.load(path, models={{'{decl.name}': "
                f'model}}), or name its file: model {decl.name} = {decl.kind} "PATH"',
            )
            return
        try:
            path = self.ctx.path_of(decl.path)
            options = option_values(
                self.ctx, self.expressions, decl.options, FORMAT_OPTIONS.get(decl.kind, {})
            )
        except Failed:
            self.ctx.broken.add(decl.name)
            return
        self.ctx.model_formats[decl.name] = decl.kind
        try:
            if decl.kind == "dare":  # kept whole: models may be derived from it
                self.ctx.forests[decl.name] = self.ctx.files.forest(path)
                self.ctx.models[decl.name] = self.ctx.forests[decl.name].to_ensemble()
            else:
                self.ctx.models[decl.name] = self.ctx.files.model(
                    path, decl.kind, self.ctx.trust_pickle, options
                )
            self.ctx.model_paths[decl.name] = str(path)
        except PickleRefused as error:
            self.ctx.broken.add(decl.name)
            message = f"cannot load model `{decl.name}`: {error.reason}"
            self.ctx.error("V401", message, decl.path.span, help=error.help)
        except ModelError as error:
            self.ctx.broken.add(decl.name)
            message = str(error).replace(f"{path}: ", "")
            self.ctx.error("V401", f"cannot load model `{decl.name}`: {message}", decl.path.span)

    def given(self, decl: ast.ModelDecl) -> None:
        """The model given from Python for ``decl``, imported as a file of its format would be
        (its file, if it names one, is not read); a ModelError is V401 at the format."""
        self.ctx.model_formats[decl.name] = decl.kind
        try:
            model = imported(self.ctx.provided[decl.name], decl.kind)
        except ModelError as error:
            self.ctx.broken.add(decl.name)
            self.ctx.error(
                "V401",
                f"cannot use the model given for `{decl.name}`: {error}",
                decl.kind_span,
                "the model given from Python",
            )
            return
        if decl.kind == "dare":
            self.ctx.forests[decl.name] = model
            self.ctx.models[decl.name] = model.to_ensemble()
        else:
            self.ctx.models[decl.name] = model
        self.ctx.model_digests[decl.name] = digest(model)

    def undeclared(self, makers: list[ast.Item]) -> None:
        """Models given from Python under a name that no ``model NAME = FORMAT`` declares:
        V416, at the declaration that takes the name otherwise (say, a derived model)."""
        declared = {d.name: d for d in makers}
        for name in self.ctx.provided:
            decl = declared.get(name)
            if isinstance(decl, ast.ModelDecl):
                continue
            plain = [d.name for d in makers if isinstance(d, ast.ModelDecl)]
            if decl is not None:
                self.ctx.error(
                    "V416",
                    f"a model is given for `{name}`, which is made here, not read",
                    decl.span,
                    "only `model NAME = FORMAT` declarations take a model given from Python",
                )
                continue
            self.ctx.error(
                "V416",
                f"a model is given for `{excerpt(str(name))}`, which this spec does not declare",
                Span(self.ctx.spec.path, 1, 1, 1, 2),
                help=suggest(str(name), plain)
                or f"declare it: model {excerpt(str(name))} = xgboost",
            )

    def feature_space(self, decls: list[ast.ModelDecl | ast.DerivedDecl]) -> None:
        """``decls``: the model declarations (families follow their base)."""
        loaded = [d for d in decls if d.name in self.ctx.models]
        if not decls:
            self.ctx.error(
                "V203",
                "a spec needs at least one model",
                Span(self.ctx.spec.path, 1, 1, 1, 2),  # where a declaration would go
                "this file declares no model",
                help='declare one: model clf = xgboost "models/model.json"',
            )
            return
        if not loaded:
            self.ctx.features_unknown = True
            return
        first = loaded[0]
        names = self.ctx.models[first.name].feature_names
        for decl in loaded[1:]:
            other = self.ctx.models[decl.name].feature_names
            if set(other) != set(names):
                missing = sorted(set(names) - set(other))
                extra = sorted(set(other) - set(names))
                notes = []
                if missing:
                    notes.append(f"`{decl.name}` lacks {listed(missing)}")
                if extra:
                    notes.append(f"`{decl.name}` has {listed(extra)} that `{first.name}` lacks")
                self.ctx.error(
                    "V404",
                    f"models `{first.name}` and `{decl.name}` have different features",
                    decl.span,
                    notes=notes,
                )
        self.ctx.features = tuple(Feature(n) for n in names)
        self.ctx.feature_index = {n: i for i, n in enumerate(names)}
        # Every model is re-expressed over the first model's feature order (a family's models
        # have their base's features).
        variants = [m for family in self.ctx.families.values() for m in family[1:]]
        for name in [d.name for d in loaded[1:]] + variants:
            if set(self.ctx.models[name].feature_names) == set(names):
                self.ctx.models[name] = self.ctx.models[name].reindex(names)

    def peek_constant(self, decl: ast.ConstDecl) -> None:
        """Evaluate a constant of numbers before its turn, for the declarations checked before
        it (row lists, model options); its errors are reported at its turn, in order."""
        mark = len(self.ctx.diagnostics)
        try:
            self.ctx.constants[decl.name] = self.expressions.constant(decl.value, Scope())
        except Failed:
            self.ctx.broken.add(decl.name)  # its uses say nothing more
        del self.ctx.diagnostics[mark:]


def option_values(
    ctx: Context,
    expressions: Expressions,
    given: tuple[ast.Option, ...],
    allowed: dict[str, str],
) -> dict[str, float]:
    """Numeric options of a declaration, checked against ``allowed`` (name -> description)."""
    values = {}
    for option in given:
        if option.name not in allowed:
            hint = suggest(option.name, allowed) or (
                f"options are {', '.join(allowed)}" if allowed else "it takes no options"
            )
            raise ctx.error("V403", f"unknown option `{option.name}`", option.span, help=hint)
        if isinstance(option.value, ast.Text | ast.Quantity):
            raise ctx.error("V403", f"`{option.name}` is {allowed[option.name]}", option.span)
        value = expressions.constant(option.value, Scope())
        if "whole" in allowed[option.name] and (not value.is_integer() or value < 0):
            raise ctx.error("V403", f"`{option.name}` is {allowed[option.name]}", option.span)
        limit = COUNT_LIMITS.get(option.name)
        if limit is not None and value > limit:
            raise ctx.error(
                "V403", f"`{option.name}` is at most {limit:,}, not {value:g}", option.span
            )
        values[option.name] = value
    return values


def listed(names: list[str], most: int = 8) -> str:
    """Feature names read from model files, as a message lists them: a few, each short."""
    shown = ", ".join(excerpt(name) for name in names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def numeric_constants(items, taken: Collection[str]) -> list[ast.ConstDecl]:
    """The constant declarations, in order, whose value is made of numbers and of such constants
    declared before them (so evaluating them early finds what it would at their turn), their name
    taken by no model and no other constant (so it names one number, and a clash is reported as
    before, at its turn)."""
    known, seen, early = {"inf"}, set(taken), []
    for item in items:
        if not isinstance(item, ast.ConstDecl):
            continue
        if item.name not in seen and _numeric(item.value, known):
            early.append(item)
            known.add(item.name)
        seen.add(item.name)
    return early


def _numeric(expr: ast.Expr, known: set[str]) -> bool:
    if isinstance(expr, ast.Number):
        return True
    if isinstance(expr, ast.Name):
        return expr.id in known
    if isinstance(expr, ast.Neg):
        return _numeric(expr.operand, known)
    if isinstance(expr, ast.Arith):
        return all(_numeric(operand, known) for operand in expr.operands)
    return False
