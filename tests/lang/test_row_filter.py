"""Row filters on batches (``for r in data[a:b] where ...``): decided per row before any engine
runs, with the meaning an engine gives the same condition on an input equal to the row."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from veritas_dsl import parse
from veritas_dsl.ir import Interval
from veritas_dsl.ir.evaluate import holds
from veritas_dsl.ir.logic import MIRRORED, compare

from conftest import build

ROWS = [  # x0, x1, label
    (0.0, 0.0, 1),
    (1.5, 0.5, 0),
    (2.5, 3.0, 1),
    (0.1, 1.5, 0),
    (3.0, 0.25, 1),
    (1.0, 2.0, 0),
]


@pytest.fixture
def folder(tmp_path, two_trees):
    """The two-tree model ``m`` (x0, x1), a binary model ``b`` and six rows with a label."""
    two_trees.save(tmp_path / "m.json")
    binary = build([(0, 1.0, -1.0, (1, 2.0, 2.0, -0.5)), (1, 1.0, 0.25, -1.0)], 2, task="binary")
    binary.save(tmp_path / "binary.json")
    lines = ["x0,x1,label", *(",".join(map(str, row)) for row in ROWS)]
    (tmp_path / "rows.csv").write_text("\n".join(lines) + "\n")
    return tmp_path


def spec(folder, body: str):
    header = 'model m = ensemble "m.json"\nmodel b = ensemble "binary.json"\n'
    header += 'data rows = csv "rows.csv"\n'
    return parse(header + body, str(folder / "spec.ver"))


def kept(folder, condition: str, rows: str = "rows[0:6]") -> list[int]:
    body = f"query q for r in {rows} where {condition} {{ input x  find }}"
    return [item.row for item in spec(folder, body).lowered()]


def points(folder) -> np.ndarray:
    return np.asarray([row[:2] for row in ROWS], dtype=np.float32)


def test_the_filter_keeps_the_rows_where_model_outputs_and_columns_hold(folder):
    model = spec(folder, "").checked.models["m"]
    outputs = model.eval(points(folder)).reshape(-1)
    high = [i for i in range(len(ROWS)) if outputs[i] >= 2]
    want = [i for i in high if ROWS[i][2] == 1]
    assert high == [1, 4] and want == [4]  # the test means something: not every row, not none
    assert kept(folder, "m(r) >= 2") == high
    assert kept(folder, "m(r) >= 2 and r.label == 1") == want


def test_the_filter_of_a_class_uses_the_models_own_class(folder):
    model = spec(folder, "").checked.models["b"]
    classes = model.predict_class(points(folder))
    want = [i for i in range(len(ROWS)) if classes[i] == 0]
    assert 0 < len(want) < len(ROWS)
    assert kept(folder, "class(b, r) == 0") == want
    assert kept(folder, "class(b, r) != 0") == [i for i in range(len(ROWS)) if i not in want]


def test_or_not_and_distances_to_other_rows(folder):
    assert kept(folder, "not (r.x0 < 1) or r.label == 1") == [0, 1, 2, 4, 5]
    assert kept(folder, "linf(r, rows[0]) <= 1.5") == [0, 1, 3]
    assert kept(folder, "r == rows[2] except x0") == [2]


def _measure(norm: str, a: np.ndarray, b: np.ndarray) -> Fraction:
    gaps = [abs(Fraction(float(u)) - Fraction(float(v))) for u, v in zip(a, b, strict=True)]
    if norm == "changed":
        return Fraction(sum(gap != 0 for gap in gaps))
    if norm == "l2":  # compared by its square: the bounds below are >= 0
        return sum(gap * gap for gap in gaps)
    return max(gaps) if norm == "linf" else sum(gaps)


@pytest.mark.parametrize("norm", ["linf", "l1", "l2", "changed"])
@pytest.mark.parametrize("op", ["<=", "<", ">", ">=", "==", "!="])
def test_a_distance_between_rows_is_compared_with_any_operator(folder, norm, op):
    """Between the filter's row and a data row a distance is a number per row, not a region of
    inputs: > and not (... <= ...) are fine there (they were V314)."""
    bound = {"linf": 1.5, "l1": 3.25, "l2": 2.5, "changed": 2}[norm]
    p = points(folder)
    square = Fraction(bound) ** 2 if norm == "l2" else bound
    want = [i for i in range(len(ROWS)) if compare(_measure(norm, p[i], p[0]), op, square)]
    assert kept(folder, f"{norm}(r, rows[0]) {op} {bound}") == want
    assert kept(folder, f"not ({bound} {MIRRORED[op]} {norm}(rows[0], r))") == [
        i for i in range(len(ROWS)) if i not in want
    ]


def test_the_issues_negated_distance_filter_runs(folder):
    body = "query q for r in rows[0:6] where not (linf(r, rows[0]) <= 1.5) { input x  find }"
    runs = spec(folder, body).run(solver="oracle")
    assert [run.lowered.row for run in runs] == [2, 4, 5]
    assert all(run.result.witnesses for run in runs)


def test_kept_rows_keep_their_data_row_index_in_their_names(folder):
    names = [
        item.query.name
        for item in spec(
            folder, "query q for r in rows[1:6] where r.label == 0 { input x }"
        ).lowered()
    ]
    assert names == ["q[1]", "q[3]", "q[5]"]


def test_the_filter_reads_the_row_as_float32_as_an_engine_would(folder):
    """Row 3 has x0 = 0.1 in the file; the model reads float32(0.1) > 0.1. An engine given
    ``x.x0 > 0.1`` and an input equal to the row agrees, so the filter keeps that row."""
    assert float(np.float32(0.1)) > 0.1
    assert 3 in kept(folder, "r.x0 > 0.1")
    assert 3 not in kept(folder, "r.x0 <= 0.1")
    query = next(spec(folder, "query e { input x  where x.x0 > 0.1 }").lowered()).query
    (interval,) = [c for c in query.constraints if isinstance(c, Interval)]
    assert holds(interval, {"x": points(folder)[3]}, {})


def test_a_property_runs_on_the_kept_rows_only(folder):
    body = (
        "property p for r in rows[0:6] where class(b, r) == 1 {\n"
        "  forall x: linf(x, r) <= 0.01 => class(b, x) == 1\n}\n"
    )
    s = spec(folder, body)
    runs = s.run(solver="oracle")
    assert [run.lowered.row for run in runs] == kept(folder, "class(b, r) == 1")
    assert all(check.holds for run in runs for check in run.checks)


def test_a_filter_that_keeps_no_row_is_a_warning(folder):
    s = spec(folder, "query q for r in rows[0:6] where m(r) > 100 { input x }")
    assert list(s.lowered()) == []
    (warning,) = s.warnings()
    assert warning.code == "V603"
    assert "keeps none of the rows rows[0:6]" in warning.message
    assert (warning.span.line, warning.span.column) == (4, 34)


def test_a_class_of_the_batch_row_compared_with_a_number_in_the_body(folder):
    """``class(b, r) == 0`` inside a batch query's body is a constant per row (it crashed)."""
    body = "query q for r in rows[0:6] { input x  where class(b, r) == 0  find }"
    results = {run.lowered.row: run.result.solution.value for run in spec(folder, body).run()}
    zero = kept(folder, "class(b, r) == 0")
    assert {row for row, solution in results.items() if solution == "optimal"} == set(zero)


def test_a_warning_about_rows_counts_the_rows_the_filter_kept(folder):
    every = "where x.x1 >= 30 and x.x1 <= 10"
    some = "where x == r except x0 and x.x1 >= 1"
    messages = []
    for condition in (every, some):
        s = spec(
            folder, f"query q for r in rows[0:6] where r.label == 1 {{ input x  {condition} }}"
        )
        (warning,) = s.warnings()
        messages.append(warning.message)
    assert messages[0].endswith("for every row the filter kept (3 of 6)")
    assert messages[1].endswith("for 2 of the 3 rows the filter kept: rows[0], rows[4]")


@pytest.mark.parametrize(
    "condition",
    [
        "m(r) >= 2 and r.x0 > 0.1",
        "class(b, r) == 0 or r.x1 >= 2",
        "not (r.x0 < 1) and linf(r, rows[0]) <= 2.5",
        "b(r) - m(r) > -3",
    ],
)
def test_an_engine_agrees_on_an_input_pinned_to_the_row(folder, condition):
    """The oracle, asked for an input equal to the row that satisfies the condition (the row
    variable replaced by the input), finds one on exactly the rows the filter keeps."""
    on_input = condition.replace("(r)", "(x)").replace("r.", "x.").replace("(r,", "(x,")
    on_input = on_input.replace("(b, r)", "(b, x)")
    body = f"query e for r in rows[0:6] {{ input x  where x == r  where {on_input}  find }}"
    runs = spec(folder, body).run(solver="oracle")
    found = [run.lowered.row for run in runs if run.result.witnesses]
    assert found == kept(folder, condition)
    assert 0 < len(found) < len(ROWS)


def test_a_batch_over_a_whole_data_set_needs_no_slice(folder):
    whole = spec(folder, "query q for r in rows { input x  find }").lowered()
    assert [item.row for item in whole] == list(range(len(ROWS)))
    assert kept(folder, "r.label == 1", rows="rows") == kept(folder, "r.label == 1")
