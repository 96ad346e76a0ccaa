"""The expressions and conditions of a built spec (:mod:`veritas_dsl.builder`): each is its text
in the language and the precedence of its outermost construct, so that an operand is put in
parentheses exactly where the grammar (grammar/ver.lark) needs them to mean the tree built.

Python's ``and``/``or``/``not`` and chained comparisons cannot be overloaded: conditions combine
with ``&``, ``|`` and ``~``, and a chain is ``(0 <= x.age) & (x.age <= 60)``.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Mapping

from veritas_dsl import names
from veritas_dsl.editor.words import KEYWORDS, OPERATOR_WORDS, TYPES

#: Precedence of an expression's outermost construct, loosest first (grammar/ver.lark).
SUM, PRODUCT, UNARY, POSTFIX = range(4)
#: ... and of a condition's.
OR, AND, NOT, COMPARISON = range(4)
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_WORDS = frozenset((*KEYWORDS, *OPERATOR_WORDS, *TYPES))
_NO_TRUTH = (
    "a built condition has no truth value in Python: combine conditions with & | ~ (not and, "
    "or, not), and write a chain a <= b <= c as (a <= b) & (b <= c)"
)
_UNITS = (*names.DURATION_UNITS, *names.SIZE_UNITS, *names.SHARE_UNITS)
_UNIT = re.compile(r"(\d+(\.\d*)?|\.\d+)(" + "|".join(map(re.escape, _UNITS)) + ")")


def name(text: str) -> str:
    """A name as the language writes it: in backquotes unless it is a plain identifier that is
    not one of its words (``not.age`` reads as the operator ``not``)."""
    if not isinstance(text, str) or not text or "`" in text or "\n" in text:
        raise ValueError(f"not a name the language can write: {text!r}")
    return text if _PLAIN.fullmatch(text) and text not in _WORDS else f"`{text}`"


def string(text: str) -> str:
    """A string literal: quotes and backslashes escaped."""
    if "\n" in text:
        raise ValueError(f"a string of the language holds no line break: {text!r}")
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def number(value: float) -> Expr:
    """A Python or NumPy number as an expression: ``repr`` of a float reads back as the same
    double. Converted first, as NumPy's ``repr`` is ``np.float64(0.7)``; an integer stays one
    (one too large for a double is the checker's error, not an overflow here)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"not a number: {value!r}")
    value = int(value) if isinstance(value, numbers.Integral) else float(value)
    if isinstance(value, int):
        return -number(-value) if value < 0 else Expr(str(value), POSTFIX)
    if math.isnan(value):
        raise ValueError("the language has no NaN")
    if value < 0 or (value == 0 and math.copysign(1.0, value) < 0):
        return -number(-value)
    return Expr("inf" if math.isinf(value) else repr(value), POSTFIX)


def expr(value) -> Expr:
    """``value`` as an expression: an :class:`Expr` as it is, a Python number as a literal."""
    return value if isinstance(value, Expr) else number(value)


class Expr:
    """An expression of the language: its text and its outermost precedence. Arithmetic and
    comparisons build larger expressions and conditions."""

    __hash__ = None  # == builds a condition

    def __init__(self, text: str, precedence: int) -> None:
        self.text = text
        self.precedence = precedence

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"Expr({self.text!r})"

    def __bool__(self):
        raise TypeError(_NO_TRUTH)

    def _at(self, precedence: int, right: bool = False) -> str:
        """Own text as an operand at ``precedence``, in parentheses where it binds looser (on
        the right of ``-`` and ``/``, also at the same level: chains combine left to right)."""
        tighter = self.precedence > precedence or (self.precedence == precedence and not right)
        return self.text if tighter else f"({self.text})"

    def _binary(self, op: str, other, precedence: int, swap: bool = False) -> Expr:
        left, right = (expr(other), self) if swap else (self, expr(other))
        return Expr(f"{left._at(precedence)} {op} {right._at(precedence, True)}", precedence)

    def __add__(self, other):
        return self._binary("+", other, SUM)

    def __radd__(self, other):
        return self._binary("+", other, SUM, swap=True)

    def __sub__(self, other):
        return self._binary("-", other, SUM)

    def __rsub__(self, other):
        return self._binary("-", other, SUM, swap=True)

    def __mul__(self, other):
        return self._binary("*", other, PRODUCT)

    def __rmul__(self, other):
        return self._binary("*", other, PRODUCT, swap=True)

    def __truediv__(self, other):
        return self._binary("/", other, PRODUCT)

    def __rtruediv__(self, other):
        return self._binary("/", other, PRODUCT, swap=True)

    def __neg__(self):
        return Expr(f"-{self._at(UNARY, True)}", UNARY)

    def __pos__(self):
        return self

    def _compare(self, op: str, other) -> Cond:
        return Cond(f"{self._at(SUM)} {op} {expr(other)._at(SUM)}", COMPARISON, op)

    def __lt__(self, other):
        return self._compare("<", other)

    def __le__(self, other):
        return self._compare("<=", other)

    def __gt__(self, other):
        return self._compare(">", other)

    def __ge__(self, other):
        return self._compare(">=", other)

    def __eq__(self, other):
        return self._compare("==", other)

    def __ne__(self, other):
        return self._compare("!=", other)


class Instance(Expr):
    """An instance (``input x``) or a data row (``test[3]``, a batch's ``r``): ``x.age`` is its
    feature, ``x["mean radius"]`` one whose name is not an identifier."""

    def __init__(self, text: str) -> None:
        super().__init__(text, POSTFIX)

    def __getattr__(self, feature: str) -> Expr:
        if feature.startswith("__"):
            raise AttributeError(feature)
        return self[feature]

    def __getitem__(self, feature: str) -> Expr:
        return Expr(f"{self.text}.{name(feature)}", POSTFIX)


class Output(Expr):
    """``clf(x)``; ``clf(x)[k]`` is output ``k`` of a model with several."""

    def __getitem__(self, k: int) -> Expr:
        return Expr(f"{self.text}[{number(k)}]", POSTFIX)


class Model:
    """A declared model: ``clf(x)`` is its output on an instance or a row."""

    def __init__(self, declared: str) -> None:
        self.name = declared

    def __str__(self) -> str:
        return name(self.name)

    def __call__(self, subject: Expr) -> Output:
        return Output(f"{self}({subject})", POSTFIX)


class Data:
    """A declared data set: ``test[3]`` is a row, ``test[0:20]`` the rows a batch runs on."""

    def __init__(self, declared: str) -> None:
        self.name = declared

    def __str__(self) -> str:
        return name(self.name)

    def __getitem__(self, key):
        if isinstance(key, slice):
            if key.step is not None:
                raise ValueError("a batch takes every row of its slice")
            start, stop = (str(number(k)) if k is not None else "" for k in (key.start, key.stop))
            return Rows(f"{self}[{start}:{stop}]")
        return Instance(f"{self}[{number(key)}]")


class Rows(str):
    """``test[0:20]``, the rows a batch runs on (text, but only as :class:`Data` writes it)."""


class Domain(str):
    """A feature's domain, as :func:`real`, :func:`integer`, :func:`boolean` and :func:`onehot`
    write it."""


def built(value, kind: type, what: str):
    """``value`` if it is a ``kind`` the builder made: a Python string there would be written
    into the spec as it is, whatever it says."""
    if not isinstance(value, kind):
        raise TypeError(f"{what}, not {value!r}")
    return value


class Cond:
    """A condition: a comparison, or conditions joined by ``&`` (and), ``|`` (or), ``~`` (not)."""

    __hash__ = None

    def __init__(self, text: str, precedence: int, op: str | None = None) -> None:
        self.text = text
        self.precedence = precedence
        self.op = op  # of a comparison, which `except_` may follow

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"Cond({self.text!r})"

    def __bool__(self):
        raise TypeError(_NO_TRUTH)

    def _at(self, precedence: int) -> str:
        return self.text if self.precedence > precedence else f"({self.text})"

    def __and__(self, other: Cond) -> Cond:
        return Cond(f"{self._at(OR)} and {other._at(AND)}", AND)

    def __or__(self, other: Cond) -> Cond:
        return Cond(f"{self._at(OR - 1)} or {other._at(OR)}", OR)

    def __invert__(self) -> Cond:
        return Cond(f"not {self._at(NOT - 1)}", NOT)

    def except_(self, *features: str) -> Cond:
        """``x == r except income, debt``: a tie (or ``>=``) of whole instances, but for some."""
        if self.precedence != COMPARISON or self.op not in ("==", ">=", "<=", ">", "<"):
            raise ValueError("`except` follows one comparison of two instances")
        return Cond(f"{self.text} except {', '.join(map(name, features))}", COMPARISON)

    def for_each(self, member: str, family: str) -> Cond:
        """``class(m, x) == 1 for m in V``: the condition for every model of a family."""
        return Cond(f"{self._at(OR)} for {name(member)} in {name(family)}", OR - 1)


# -- the language's functions ---------------------------------------------------------------------


def _call(func: str, *args, **keywords) -> Expr:
    parts = [str(expr(a)) if not isinstance(a, Model) else str(a) for a in args]
    parts += [f"{name(k)} = {_scale(v)}" for k, v in keywords.items() if v is not None]
    return Expr(f"{func}({', '.join(parts)})", POSTFIX)


def _scale(value) -> str:
    """A distance's ``scale``: a number, ``{feature: number}``, or ``mad(data)``/``std(data)``."""
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{name(k)}: {expr(v)}" for k, v in value.items()) + "}"
    return str(expr(value))


def linf(a: Expr, b: Expr, scale=None) -> Expr:
    """``linf(a, b)``, ``linf(a, b, scale = ...)``: the L-infinity distance."""
    return _call("linf", a, b, scale=scale)


def l1(a: Expr, b: Expr, scale=None) -> Expr:
    """``l1(a, b)``: the L1 distance."""
    return _call("l1", a, b, scale=scale)


def changed(a: Expr, b: Expr) -> Expr:
    """``changed(a, b)``: how many features differ."""
    return _call("changed", a, b)


def class_(model: Model, subject: Expr) -> Expr:
    """``class(m, x)``: the predicted class."""
    return _call("class", model, subject)


def vote(model: Model, subject: Expr) -> Expr:
    """``vote(m, x)``: the class most trees vote for."""
    return _call("vote", model, subject)


def proba(model: Model, subject: Expr) -> Expr:
    """``proba(m, x)``: a binary model's probability of class 1, where it is exact."""
    return _call("proba", model, subject)


def mad(data: Data) -> Expr:
    """``mad(train)``, a distance's scale: each feature's median absolute deviation."""
    return Expr(f"mad({data})", POSTFIX)


def std(data: Data) -> Expr:
    """``std(train)``, a distance's scale: each feature's standard deviation."""
    return Expr(f"std({data})", POSTFIX)


def least(*terms) -> Expr:
    """``min(a, b)``, an objective: the least of several terms."""
    return _call("min", *terms)


def most(*terms) -> Expr:
    """``max(a, b)``, an objective: the largest of several terms."""
    return _call("max", *terms)


def each(func: str, term: Expr, member: Model, family: str) -> Expr:
    """``min(m(x) for m in V)`` (``func`` ``min`` or ``max``): a family's worst term."""
    if func not in ("min", "max"):
        raise ValueError(f"each takes min or max, not {func!r}")
    return Expr(f"{func}({term} for {member} in {name(family)})", POSTFIX)


def real(low=None, high=None) -> str:
    """A feature's domain: ``real``, ``real in [low, high]``."""
    return Domain("real" + _range(low, high))


def integer(low=None, high=None) -> str:
    """``int``, ``int in [low, high]``."""
    return Domain("int" + _range(low, high))


def boolean() -> str:
    """``bool``."""
    return Domain("bool")


def onehot(*members: str) -> str:
    """``onehot(a, b, c)``: a one-hot group of features."""
    return Domain(f"onehot({', '.join(map(name, members))})")


def _range(low, high) -> str:
    if (low is None) != (high is None):
        raise ValueError("a range has both ends")
    return "" if low is None else f" in [{expr(low)}, {expr(high)}]"


def _value(value) -> str:
    """An option's value: a number, a duration, size or share (``"10s"``, ``"2GB"``, ``"1%"``),
    a list of numbers (``rows = [3, 17]``), or a string."""
    if isinstance(value, str):
        return value if _UNIT.fullmatch(value) else string(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(str(expr(v)) for v in value) + "]"
    return str(expr(value))


def _options(options: Mapping[str, object]) -> str:
    return ", ".join(f"{name(k)} = {_value(v)}" for k, v in options.items())
