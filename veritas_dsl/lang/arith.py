"""The language's arithmetic on affine forms, in doubles, never silently infinite or zero.

Each operation checks its own result, where it is computed: a finite computation that overflows
to an infinity, or a nonzero product that underflows to 0, would not mean what the user wrote, and
``inf - inf`` has no value at all. Infinities the user wrote (``inf``) pass through sums, and may
scale a nonzero number; the coefficient of an unknown (a feature, an output) or of a batch-row
value is always finite. Problems are :class:`NumberError`, which the caller locates.
"""

from __future__ import annotations

import math

from veritas_dsl.lang.typed import Lin

#: Diagnostic codes: a number out of the doubles' range, and arithmetic with no value.
OVERFLOW = "V329"
NO_VALUE = "V322"


class NumberError(ValueError):
    """An arithmetic result that is not the number the user wrote; ``code`` is its diagnostic's."""

    def __init__(self, code: str, message: str, help: str = "") -> None:
        super().__init__(message)
        self.code, self.message, self.help = code, message, help


def literal(text: str, value: float) -> None:
    """Refuse a numeric literal that reads as an infinity or as 0 when written as neither."""
    if math.isinf(value):
        raise NumberError(
            OVERFLOW,
            f"`{text}` is beyond the largest number, about 1.8e308",
            help="write inf for no bound",
        )
    mantissa = text.lower().partition("e")[0]
    if value == 0 and mantissa.strip("0.") != "":
        raise NumberError(
            OVERFLOW,
            f"`{text}` is below the smallest positive number, about 5e-324, and would read as 0",
            help="write 0",
        )


def plus(left: Lin, right: Lin, sign: float = 1.0) -> Lin:
    """``left + sign * right`` (``sign`` is 1 or -1)."""
    result = left.plus(right, sign)
    written = {s for s, c in (*left.coefs, *right.coefs) if math.isinf(c)}
    for symbol, coef in result.coefs:
        if math.isnan(coef):
            raise NumberError(NO_VALUE, "this arithmetic has no value: it is inf - inf")
        if math.isinf(coef) and symbol not in written:
            raise _overflow()
    return result


def times(lin: Lin, factor: float) -> Lin:
    """``factor * lin``."""
    if math.isinf(factor):
        if lin.kind != "constant" or lin.row_dependent or lin.constant_value() == 0:
            raise NumberError(
                NO_VALUE,
                "inf can only multiply a nonzero number",
                help="a feature or an output times inf has no value",
            )
        return Lin.constant(factor * lin.constant_value())
    if factor == 0 and any(math.isinf(c) for _, c in lin.coefs):
        raise NumberError(NO_VALUE, "this arithmetic has no value: it is 0 * inf")
    return _scaled(lin, factor, lambda c: c * factor)


def divide(lin: Lin, divisor: float) -> Lin:
    """``lin / divisor``; the divisor is a finite nonzero number."""
    if divisor == 0:
        raise NumberError(NO_VALUE, "division is by a non-zero number")
    if math.isinf(divisor):
        raise NumberError(NO_VALUE, "division is by a finite number")
    return _scaled(lin, divisor, lambda c: c / divisor)


def _scaled(lin: Lin, factor: float, scale) -> Lin:
    coefs = []
    for symbol, coef in lin.coefs:
        value = scale(coef)
        if math.isinf(value) and not math.isinf(coef):
            raise _overflow()
        if value == 0 and factor != 0:
            raise NumberError(
                OVERFLOW,
                "this arithmetic underflows: a nonzero number becomes 0",
                help="numbers below about 5e-324 are 0; use larger numbers",
            )
        coefs.append((symbol, value))
    return Lin.of(dict(coefs))


def _overflow() -> NumberError:
    return NumberError(
        OVERFLOW,
        "this arithmetic overflows: the result is beyond the largest number, about 1.8e308",
        help="use smaller numbers, or inf for no bound",
    )


def is_number(lin: Lin) -> bool:
    """A form that is one number now (no unknowns, no batch-row values)."""
    return lin.kind == "constant" and not lin.row_dependent
