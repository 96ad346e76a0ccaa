"""Build a spec in Python as the language writes it, rather than in f-strings::

    s = Spec.build()
    clf = s.model("clf", "xgboost", "models/credit.json")
    test = s.data("test", "csv", "data/credit_test.csv")
    q = s.query("robust")
    x = q.input("x")
    q.where((x == test[0]).except_("income") & (linf(x, test[0]) <= 100))
    q.maximize(clf(x))

Each call is one of the language's declarations or statements, and expressions are Python
expressions over what the calls return (:mod:`veritas_dsl.builder.expressions`). What is built is
``.ver`` text and nothing else: ``str(s)`` is that text in ``ver fmt``'s layout, which
``veritas_dsl.parse(str(s), models=...)`` checks as it would a file, so a mistake is its located
error in that text (the builder never makes the typed spec itself).
"""

from __future__ import annotations

from collections.abc import Mapping

from veritas_dsl.builder.expressions import (
    Cond,
    Data,
    Domain,
    Expr,
    Instance,
    Model,
    Rows,
    boolean,
    built,
    changed,
    class_,
    each,
    expr,
    integer,
    l1,
    least,
    linf,
    mad,
    most,
    name,
    onehot,
    proba,
    real,
    std,
    string,
    vote,
)
from veritas_dsl.builder.expressions import _options as options_text
from veritas_dsl.builder.expressions import _value as value_text
from veritas_dsl.editor.format import format_text

__all__ = [
    "Cond", "Data", "Expr", "Instance", "Model", "Query", "SpecBuilder", "boolean", "changed",
    "class_", "each", "integer", "l1", "least", "linf", "mad", "most", "onehot", "proba", "real",
    "std", "vote",
]  # fmt: skip


class SpecBuilder:
    """A spec under construction: declarations and queries, in the order they are made."""

    def __init__(self) -> None:
        self._items: list[str | Query] = []

    def model(self, declared: str, format: str, path: str | None = None, **options) -> Model:
        """``model clf = xgboost "m.json"``; without ``path`` the model is given from Python
        (``spec(models={"clf": booster})``)."""
        text = f"model {name(declared)} = {name(format)}"
        if path is not None:
            text += f" {string(str(path))}"
            text += f" ({options_text(options)})" if options else ""
        elif options:
            raise ValueError("options follow a model's file")
        self._items.append(text)
        return Model(declared)

    def derived(self, declared: str, func: str, base: Model, **arguments) -> Model:
        """``model after = delete(before, rows = [3, 17])``: a model derived from a DaRE forest."""
        given = "".join(f", {name(k)} = {value_text(v)}" for k, v in arguments.items())
        self._items.append(f"model {name(declared)} = {name(func)}({base}{given})")
        return Model(declared)

    def family(self, declared: str, func: str, base: Model, **options) -> str:
        """``models V = deletions(before, fraction = 0.01)``: a family of forests (its name, for
        ``Cond.for_each`` and ``each``)."""
        given = "".join(f", {name(k)} = {value_text(v)}" for k, v in options.items())
        self._items.append(f"models {name(declared)} = {name(func)}({base}{given})")
        return declared

    def data(self, declared: str, format: str, path: str, **options) -> Data:
        """``data test = csv "test.csv"``."""
        text = f"data {name(declared)} = {name(format)} {string(str(path))}"
        self._items.append(text + (f" ({options_text(options)})" if options else ""))
        return Data(declared)

    def features(self, source: Data | None = None, **domains: str) -> None:
        """``features [from train] { age : int in [18, 90] ... }``; a domain is
        :func:`real`, :func:`integer`, :func:`boolean` or :func:`onehot`. A feature whose name
        is not a Python identifier goes in a dict: ``features(**{"mean radius": real()})``."""
        head = "features" + (f" from {source}" if source is not None else "")
        if source is not None and not domains:
            self._items.append(head)
            return
        lines = [
            f"    {name(feature)} : {built(domain, Domain, 'a domain is real(), integer(), ...')}"
            for feature, domain in domains.items()
        ]
        self._items.append("\n".join([head + " {", *lines, "}"]))

    def const(self, declared: str, value) -> Expr:
        """``const eps = 100``; the constant's name, as an expression."""
        self._items.append(f"const {name(declared)} = {expr(value)}")
        return Expr(name(declared), 3)

    def query(self, declared: str, rows: tuple[str, str] | None = None, where=None) -> Query:
        """``query name { ... }``; ``rows=("r", test[0:20])`` makes it a batch, ``for r in
        test[0:20]``, with ``where`` its row filter (``q.row`` is the row)."""
        return self._add(Query("query", declared, rows, where))

    def property(self, declared: str, rows: tuple[str, str] | None = None, where=None) -> Query:
        """``property name { ... }``: its ``forall`` must hold."""
        return self._add(Query("property", declared, rows, where))

    def _add(self, query: Query) -> Query:
        self._items.append(query)
        return query

    def text(self) -> str:
        """The spec as built, one declaration or statement a line."""
        return "\n\n".join(str(item) for item in self._items) + "\n"

    def __str__(self) -> str:
        """The spec in ``ver fmt``'s layout."""
        return format_text(self.text(), "<built spec>")


class Query:
    """A query or property under construction: its statements, in order."""

    def __init__(self, keyword: str, declared: str, rows, where) -> None:
        self.keyword = keyword
        self.name = declared
        self.statements: list[str] = []
        self.row: Instance | None = None
        self.instances: tuple[Instance, ...] = ()
        self.header = f"{keyword} {name(declared)}"
        if rows is not None:
            variable, selected = rows
            built(selected, Rows | Data, "a batch's rows are a data set or its slice, test[0:20]")
            self.row = Instance(name(variable))
            self.header += f" for {name(variable)} in {selected}"
            self.header += f" where {_cond(where)}" if where is not None else ""
        elif where is not None:
            raise ValueError("a row filter (where) needs rows")

    def __str__(self) -> str:
        body = [f"    {line}" for line in self.statements]
        return "\n".join([self.header + " {", *body, "}"])

    def input(self, *declared: str) -> Instance | tuple[Instance, ...]:
        """``input x`` (one instance) or ``input x1, x2`` (a tuple of them). A property has no
        ``input`` line (its ``forall`` declares its instances): there this only names them."""
        if self.keyword == "query":
            self.statements.append(f"input {', '.join(map(name, declared))}")
        self.instances = tuple(Instance(name(d)) for d in declared)
        return self.instances[0] if len(self.instances) == 1 else self.instances

    def where(self, cond: Cond) -> Query:
        self.statements.append(f"where {_cond(cond)}")
        return self

    def maximize(self, objective) -> Query:
        self.statements.append(f"maximize {expr(objective)}")
        return self

    def minimize(self, objective) -> Query:
        self.statements.append(f"minimize {expr(objective)}")
        return self

    def find(self) -> Query:
        self.statements.append("find")
        return self

    def forall(self, conclusion: Cond, given: Cond | None = None) -> Query:
        """``forall x: given => conclusion``, over the instances :meth:`input` named."""
        head = f"forall {', '.join(map(str, self.instances))}: "
        self.statements.append(
            head + (f"{_cond(given)} => " if given is not None else "") + _cond(conclusion)
        )
        return self

    def expect(self, subject: str, op: str | None = None, bound=None) -> Query:
        """``expect upper <= 2.5`` (``expect("upper", "<=", 2.5)``), ``expect found``."""
        text = f"expect {name(subject)}"
        if op is not None:
            if op not in ("<", "<=", ">", ">=", "==", "!="):
                raise ValueError(f"not a comparison: {op!r}")
            text += f" {op} {expr(bound)}"
        self.statements.append(text)
        return self

    def solve_with(self, *engines: str | tuple[str, Mapping[str, object]]) -> Query:
        """``solve with astar, milp(timeout = 10s)``: ``solve_with("astar", ("milp",
        {"timeout": "10s"}))``."""
        parts = []
        for engine in engines:
            if isinstance(engine, str):
                parts.append(name(engine))
            else:
                engine_name, options = engine
                parts.append(f"{name(engine_name)}({options_text(options)})")
        self.statements.append(f"solve with {', '.join(parts)}")
        return self


def _cond(cond: Cond) -> str:
    return str(built(cond, Cond, "a condition is built from comparisons, e.g. x.age >= 18"))
