"""Lark parse tree to AST: one explicit transformer, one method per grammar rule."""

from __future__ import annotations

from lark import Token, Transformer_NonRecursive, v_args

from veritas_dsl.diagnostics import Span
from veritas_dsl.lang import ast


class Build(Transformer_NonRecursive):
    """Turns the tree of ``grammar/ver.lark`` into :mod:`veritas_dsl.lang.ast` nodes.

    Non-recursive, as the parser that feeds it: a tree's depth is bounded by ``parser.MAX_DEPTH``,
    checked before this runs, but no walk should spend the Python stack on the user's nesting.
    """

    def __init__(self, file: str) -> None:
        super().__init__()
        self.file = file

    def span(self, meta) -> Span:
        return Span(self.file, meta.line, meta.column, meta.end_line, meta.end_column)

    def token_span(self, token: Token) -> Span:
        return Span(self.file, token.line, token.column, token.end_line, token.end_column)

    # -- top level --------------------------------------------------------------------------

    def start(self, items):
        return tuple(items)

    @v_args(meta=True)
    def model_decl(self, meta, children):
        return self.file_decl(ast.ModelDecl, meta, children)

    @v_args(meta=True)
    def derived_decl(self, meta, children):
        return self.made_from(ast.DerivedDecl, meta, children)

    @v_args(meta=True)
    def family_decl(self, meta, children):
        return self.made_from(ast.FamilyDecl, meta, children)

    def made_from(self, cls, meta, children):
        """``NAME = FUNC(BASE, ARGS)``: a model or family made from another model."""
        name, func, base, *args = children
        return cls(
            str(name),
            str(func),
            self.token_span(func),
            ast.Name(str(base), self.token_span(base)),
            tuple(args),
            self.span(meta),
        )

    @v_args(meta=True)
    def derive_arg(self, meta, children):
        name, value = children
        if isinstance(value, Token):
            value = self.text(value)
        return ast.DeriveArg(str(name), value, self.span(meta))

    @v_args(meta=True)
    def row_list(self, meta, children):
        return ast.RowList(tuple(c for c in children if c is not None), self.span(meta))

    @v_args(meta=True)
    def data_decl(self, meta, children):
        return self.file_decl(ast.DataDecl, meta, children)

    def file_decl(self, node, meta, children):
        """``NAME = KIND "path" (options)``, the shape of model and data declarations (a model's
        path may be left out: the model is given from Python)."""
        name, kind, *rest = children
        path = self.text(rest.pop(0)) if rest else None
        span = self.token_span(kind)
        return node(str(name), str(kind), span, path, _opts(rest), self.span(meta))

    def options(self, children):
        return tuple(c for c in children if c is not None)

    @v_args(meta=True)
    def option(self, meta, children):
        name, value = children
        if isinstance(value, Token):
            value = self.text(value) if value.type == "STRING" else self.quantity(value)
        return ast.Option(str(name), value, self.span(meta))

    @v_args(meta=True)
    def features_block(self, meta, children):
        source = children.pop(0) if children and isinstance(children[0], ast.Name) else None
        return ast.FeaturesBlock(tuple(children), self.span(meta), source)

    def features_source(self, children):
        (name,) = children
        return ast.Name(str(name), self.token_span(name))

    @v_args(meta=True)
    def feature_decl(self, meta, children):
        name, (kind, lo, hi, members) = children
        return ast.FeatureDecl(str(name), kind, lo, hi, members, self.span(meta))

    def real_domain(self, children):
        lo, hi = children[0] if children else (None, None)
        return ("real", lo, hi, ())

    def int_domain(self, children):
        lo, hi = children[0] if children else (None, None)
        return ("int", lo, hi, ())

    def bool_domain(self, children):
        return ("bool", None, None, ())

    def onehot_domain(self, children):
        return ("onehot", None, None, tuple(ast.Name(str(t), self.token_span(t)) for t in children))

    def range(self, children):
        return tuple(children)

    @v_args(meta=True)
    def const_decl(self, meta, children):
        name, value = children
        return ast.ConstDecl(str(name), value, self.span(meta))

    @v_args(meta=True)
    def query_decl(self, meta, children):
        return self.query(meta, children, is_property=False)

    @v_args(meta=True)
    def property_decl(self, meta, children):
        return self.query(meta, children, is_property=True)

    def query(self, meta, children, is_property):
        name, *rest = children
        batch = rest.pop(0) if rest and isinstance(rest[0], ast.Batch) else None
        return ast.QueryDecl(str(name), is_property, batch, tuple(rest), self.span(meta))

    @v_args(meta=True)
    def batch(self, meta, children):
        name, data, rows, row_filter = children
        start, stop = rows or (None, None)  # `for r in test`: every row
        data_name = ast.Name(str(data), self.token_span(data))
        return ast.Batch(str(name), data_name, start, stop, self.span(meta), row_filter)

    def slice(self, children):
        start, stop = children  # absent ends are None
        return start, stop

    # -- statements -------------------------------------------------------------------------

    @v_args(meta=True)
    def input_stmt(self, meta, children):
        return ast.Input(
            tuple(ast.Name(str(t), self.token_span(t)) for t in children), self.span(meta)
        )

    @v_args(meta=True)
    def where_stmt(self, meta, children):
        return ast.Where(children[0], self.span(meta))

    @v_args(meta=True)
    def maximize_stmt(self, meta, children):
        return ast.Objective("maximize", children[0], self.span(meta))

    @v_args(meta=True)
    def minimize_stmt(self, meta, children):
        return ast.Objective("minimize", children[0], self.span(meta))

    @v_args(meta=True)
    def find_stmt(self, meta, children):
        return ast.FindStmt(self.span(meta))

    @v_args(meta=True)
    def forall_stmt(self, meta, children):
        names = tuple(
            ast.Name(str(t), self.token_span(t)) for t in children if isinstance(t, Token)
        )
        conds = [c for c in children if not isinstance(c, Token)]
        premise, conclusion = (conds[0], conds[1]) if len(conds) == 2 else (None, conds[0])
        return ast.Forall(names, premise, conclusion, self.span(meta))

    @v_args(meta=True)
    def expect_stmt(self, meta, children):
        subject = children[0]
        op, value = (str(children[1]), children[2]) if len(children) == 3 else (None, None)
        return ast.Expect(str(subject), self.token_span(subject), op, value, self.span(meta))

    @v_args(meta=True)
    def solve_stmt(self, meta, children):
        return ast.SolveWith(tuple(children), self.span(meta))

    @v_args(meta=True)
    def engine(self, meta, children):
        name, *options = children
        return ast.EngineSpec(str(name), _opts(options), self.span(meta))

    # -- conditions -------------------------------------------------------------------------

    @v_args(meta=True)
    def or_cond(self, meta, children):
        return ast.Or(tuple(children), self.span(meta))

    @v_args(meta=True)
    def and_cond(self, meta, children):
        return ast.And(tuple(children), self.span(meta))

    @v_args(meta=True)
    def not_cond(self, meta, children):
        return ast.Not(children[0], self.span(meta))

    @v_args(meta=True)
    def family_cond(self, meta, children):
        part, var, family = children
        return ast.ForEach(
            part,
            ast.Name(str(var), self.token_span(var)),
            ast.Name(str(family), self.token_span(family)),
            self.span(meta),
        )

    @v_args(meta=True)
    def comparison(self, meta, children):
        excepted: tuple[ast.Name, ...] = ()
        if children and isinstance(children[-1], tuple):
            excepted = children.pop()
        operands = tuple(children[0::2])
        ops = tuple(str(op) for op in children[1::2])
        op_spans = tuple(self.token_span(op) for op in children[1::2])
        return ast.Compare(operands, ops, op_spans, excepted, self.span(meta))

    def comp_op(self, children):
        return children[0]

    def except_clause(self, children):
        return tuple(ast.Name(str(t), self.token_span(t)) for t in children)

    # -- expressions ------------------------------------------------------------------------

    @v_args(meta=True)
    def sum(self, meta, children):
        return self.arith(meta, children)

    @v_args(meta=True)
    def product(self, meta, children):
        return self.arith(meta, children)

    def arith(self, meta, children):
        return ast.Arith(
            tuple(children[0::2]), tuple(str(op) for op in children[1::2]), self.span(meta)
        )

    def add_op(self, children):
        return children[0]

    def mul_op(self, children):
        return children[0]

    @v_args(meta=True)
    def neg(self, meta, children):
        return ast.Neg(children[0], self.span(meta))

    @v_args(meta=True)
    def attr(self, meta, children):
        obj, name = children
        return ast.Attr(obj, str(name), self.token_span(name), self.span(meta))

    @v_args(meta=True)
    def index(self, meta, children):
        return ast.Index(children[0], children[1], self.span(meta))

    def number(self, children):
        token = children[0]
        return ast.Number(float(token), str(token), self.token_span(token))

    def name(self, children):
        token = children[0]
        return ast.Name(str(token), self.token_span(token))

    @v_args(meta=True)
    def call(self, meta, children):
        func, *args = children
        keywords = tuple(a for a in args if isinstance(a, ast.KeywordArg))
        args = tuple(a for a in args if a is not None and not isinstance(a, ast.KeywordArg))
        return ast.Call(str(func), self.token_span(func), args, self.span(meta), keywords)

    @v_args(meta=True)
    def each_of(self, meta, children):
        func, part, var, family = children
        return ast.EachOf(
            str(func),
            self.token_span(func),
            part,
            ast.Name(str(var), self.token_span(var)),
            ast.Name(str(family), self.token_span(family)),
            self.span(meta),
        )

    @v_args(meta=True)
    def keyword_arg(self, meta, children):
        name, value = children
        return ast.KeywordArg(str(name), self.token_span(name), value, self.span(meta))

    @v_args(meta=True)
    def per_feature(self, meta, children):
        return ast.PerFeature(tuple(c for c in children if c is not None), self.span(meta))

    @v_args(meta=True)
    def feature_value(self, meta, children):
        name, value = children
        return ast.FeatureValue(str(name), self.token_span(name), value, self.span(meta))

    # -- tokens -----------------------------------------------------------------------------

    def NAME(self, token: Token) -> Token:
        """Called by Lark for every NAME token: `mean radius` names "mean radius" (the span keeps
        the quotes, which the user wrote)."""
        return token.update(value=token[1:-1]) if token.startswith("`") else token

    def text(self, token: Token) -> ast.Text:
        # Strings are double-quoted with backslash escapes for \" and \\ only.
        raw = str(token)[1:-1]
        value = raw.replace('\\"', '"').replace("\\\\", "\\")
        return ast.Text(value, self.token_span(token))

    def quantity(self, token: Token) -> ast.Quantity:
        text = str(token)
        number = text.rstrip("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ%")
        return ast.Quantity(float(number), text[len(number) :], self.token_span(token))


def _opts(options: list) -> tuple[ast.Option, ...]:
    return options[0] if options else ()
