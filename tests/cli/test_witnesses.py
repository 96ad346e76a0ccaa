"""Witnesses as users copy them: every printed value reads back as the same float32, batch rows
show theirs, and `ver run --witnesses FILE` writes them all to a CSV."""

from __future__ import annotations

import csv
import io
import json
import re

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from veritas_dsl.cli import ExitCode, main
from veritas_dsl.report.table import float32_text

from conftest import build

#: Thresholds of three one-split trees: an ordinary one, a subnormal, and a tiny negative one.
THRESHOLDS = (0.08947, 1e-40, -1e-30)
#: The closest input to the row (0.5, 1, 1) where every tree gives 1 sits one float32 step below
#: every threshold.
BELOW = [np.nextafter(np.float32(t), np.float32(-np.inf)) for t in THRESHOLDS]

SPEC = """model m = ensemble "m.json"
data rows = csv "rows.csv"
query near for r in rows[0:2] {
    input x
    where m(x) >= 3
    minimize l1(x, r)
}
query pair {
    input x1, x2
    where x1 == x2 except x0
    maximize m(x2) - m(x1)
}
"""


@pytest.fixture
def spec(tmp_path):
    trees = [(f, t, 1.0, -1.0) for f, t in enumerate(THRESHOLDS)]
    build(trees, 3).save(tmp_path / "m.json")
    (tmp_path / "rows.csv").write_text("x0,x1,x2\n0.5,1,1\n0.25,0.5,2\n")
    path = tmp_path / "spec.ver"
    path.write_text(SPEC)
    return path


def same_float32(text: str, expected) -> bool:
    return np.float32(float(text)).tobytes() == np.float32(expected).tobytes()


def test_run_text_reproduces_the_witness_bit_for_bit(spec, capsys):
    assert main(["run", str(spec)]) == ExitCode.OK
    out = capsys.readouterr().out
    rows = re.findall(r"near\[(\d)\].*?witness x: ([^\n]*)", out, flags=re.S)
    assert [row for row, _ in rows] == ["0", "1"]  # batch rows show their witnesses
    for _, line in rows:
        values = dict(item.split("=") for item in line.split(", "))
        assert list(values) == ["x0", "x1", "x2"]
        for text, expected in zip(values.values(), BELOW, strict=True):
            assert same_float32(text, expected), (text, expected)
    assert "x0=0.08946999," in out  # not 0.08947, which is the threshold itself


def test_check_table_reproduces_the_witness_bit_for_bit(spec, capsys):
    spec.write_text(SPEC.replace("minimize l1(x, r)", "minimize l1(x, r)\n    expect lower >= 3"))
    assert main(["check", str(spec)]) == ExitCode.FAILED
    out = capsys.readouterr().out
    table = out.split("near[0]")[1].split("witness:")[1].splitlines()[2:5]
    for line, name, expected in zip(table, ["x0", "x1", "x2"], BELOW, strict=True):
        feature, _, value, mark = line.split()
        assert (feature, mark) == (name, "*")
        assert same_float32(value, expected), (value, expected)


def test_witnesses_file(spec, tmp_path, capsys):
    target = tmp_path / "witnesses.csv"
    assert main(["run", "--witnesses", str(target), str(spec)]) == ExitCode.OK
    capsys.readouterr()
    lines = list(csv.reader(io.StringIO(target.read_text())))
    assert lines[0] == ["query", "row", "instance", "x0", "x1", "x2"]
    assert [line[:3] for line in lines[1:]] == [
        ["near", "0", "x"],
        ["near", "1", "x"],
        ["pair", "", "x1"],
        ["pair", "", "x2"],
    ]
    for line in lines[1:3]:
        for text, expected in zip(line[3:], BELOW, strict=True):
            assert same_float32(text, expected), (text, expected)
    # The same witnesses as the JSON document, where values are exact.
    main(["run", "--json", str(spec)])
    results = json.loads(capsys.readouterr().out)["results"]
    for line, result in zip(lines[1:], [*results, results[2]], strict=True):
        exact = result["witness"][line[2]]
        assert [same_float32(line[3 + i], exact[f"x{i}"]) for i in range(3)] == [True] * 3


def test_witnesses_file_is_not_written_when_the_spec_fails(spec, tmp_path, capsys):
    spec.write_text(SPEC.replace("m(x) >= 3", "m(x) >= nope"))
    target = tmp_path / "witnesses.csv"
    assert main(["run", "--witnesses", str(target), str(spec)]) == ExitCode.ERROR
    assert not target.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json", "rows.csv", "spec.ver"]


def test_an_output_that_cannot_be_written_is_a_clean_error(spec, tmp_path, capsys):
    with pytest.raises(SystemExit) as stopped:  # before anything runs
        main(["run", "--witnesses", str(tmp_path / "absent" / "w.csv"), str(spec)])
    assert stopped.value.code == ExitCode.ERROR
    assert "argument --witnesses: no folder" in capsys.readouterr().err
    (tmp_path / "taken").mkdir()  # a folder where the file should go: the rename fails
    assert main(["run", "--csv", str(tmp_path / "taken"), str(spec)]) == ExitCode.ERROR
    captured = capsys.readouterr()
    assert "near[0]" in captured.out  # the report is still shown
    assert f"error: cannot write {tmp_path / 'taken'}: " in captured.err
    assert "internal error" not in captured.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json", "rows.csv", "spec.ver", "taken"]


FLOAT32 = st.floats(width=32, allow_nan=False)


@given(FLOAT32)
@example(float(BELOW[0]))
@example(float(BELOW[1]))  # a subnormal
@example(1e-45)  # the least subnormal
@example(-0.0)
@example(3.4028234663852886e38)  # the largest float32
@example(16777217.0)  # rounds to 2**24 in float32
def test_float32_text_reads_back_as_the_same_float32(value):
    text = float32_text(value)
    assert np.float32(float(text)).tobytes() == np.float32(value).tobytes()
    assert float32_text(float(text)) == text


def test_float32_text_is_short():
    cases = {
        float(BELOW[0]): "0.08946999",
        float(BELOW[1]): "9.9998e-41",
        1e-45: "1e-45",
        -0.0: "-0",
        7.0: "7",
        52000.0: "52000",
        0.1: "0.1",
        1e-5: "1e-05",
        np.inf: "inf",
        -np.inf: "-inf",
    }
    assert {value: float32_text(value) for value in cases} == cases
