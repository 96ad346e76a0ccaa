"""Numbers at the edges of the doubles: each result is checked where it is computed, and the
lowering turns huge but finite bounds into the float32 boxes they mean, never an OverflowError."""

from __future__ import annotations

import math

import numpy as np
import pytest

from veritas_dsl import SpecError, parse
from veritas_dsl.ir import AnyOf, AtMostKChanged, Interval, Row
from veritas_dsl.lang import arith
from veritas_dsl.lang.typed import Lin

MAX32 = float(np.finfo(np.float32).max)


@pytest.fixture
def header(tmp_path, two_trees):
    two_trees.save(tmp_path / "m.json")
    (tmp_path / "rows.csv").write_text("x0,x1\n0,0\n3e38,-3e38\n")
    return (
        f'model m = ensemble "{tmp_path / "m.json"}"\ndata rows = csv "{tmp_path / "rows.csv"}"\n'
    )


def constraints(header: str, where: str):
    text = header + f"query q {{ input x  where {where}  find }}"
    (lowered,) = parse(text).lowered()
    return lowered.query.constraints


def test_bounds_beyond_every_float32_are_exact_boxes(header):
    # -1e300 / 1e-300 is 1e600, beyond the doubles: the box is still exact
    assert constraints(header, "x.x0 * 1e-300 <= 1e300") == (Interval("x", 0, -math.inf, MAX32),)
    assert constraints(header, "x.x0 * 1e-300 < 1e300") == (Interval("x", 0, -math.inf, MAX32),)
    assert constraints(header, "x.x0 * 1e-300 >= 1e300") == (AnyOf(()),)
    assert constraints(header, "x.x0 * 1e-300 > -1e300") == (Interval("x", 0, -MAX32, math.inf),)
    assert constraints(header, "-1e-300 * x.x0 >= 1e300") == (AnyOf(()),)


def test_a_huge_count_of_changes_is_every_feature(header):
    (changed,) = constraints(header, "changed(x, rows[0]) <= 1e300")
    assert changed == AtMostKChanged("x", Row((0.0, 0.0)), 2, ((0,), (1,)))


def test_subnormal_coefficients_keep_their_meaning(header):
    # 5e-324 * x0 <= 1e-323 is x0 <= 2, exactly: no double arithmetic may round it
    assert constraints(header, "5e-324 * x.x0 <= 1e-323") == (Interval("x", 0, -math.inf, 2.0),)


def test_row_values_that_overflow_are_located(header):
    text = header + "query q for r in rows[0:2] { input x  where x.x0 <= r.x0 * 1e300  find }"
    with pytest.raises(SpecError) as caught:
        list(parse(text, "numbers.ver").lowered())
    (diagnostic,) = caught.value.diagnostics
    assert diagnostic.code == "V329" and "(on row rows[1])" in diagnostic.message
    assert (diagnostic.span.line, diagnostic.span.column) == (3, 45)


@pytest.mark.parametrize(
    ("text", "value"),
    [("1e308", 1e308), ("5e-324", 5e-324), ("0.0", 0.0), ("0e-999", 0.0), ("000.000e5", 0.0)],
)
def test_literals_in_range_are_accepted(text, value):
    arith.literal(text, value)


@pytest.mark.parametrize("text", ["1e309", "1e-400", "0.1e-330"])
def test_literals_out_of_range_are_refused(text):
    with pytest.raises(arith.NumberError):
        arith.literal(text, float(text))


def test_infinities_that_were_written_pass_through_sums():
    inf = Lin.constant(math.inf)
    assert arith.plus(inf, Lin.constant(1e308)).constant_value() == math.inf
    assert arith.times(inf, -2.0).constant_value() == -math.inf
    assert arith.divide(inf, 1e-300).constant_value() == math.inf
    with pytest.raises(arith.NumberError):
        arith.plus(inf, inf, -1.0)
    with pytest.raises(arith.NumberError):
        arith.times(inf, 0.0)
    with pytest.raises(arith.NumberError):
        arith.times(Lin.constant(0.0), math.inf)
