"""`ver compare`: a table per query and engine, a PNG of the bounds, errors for unknown engines."""

from __future__ import annotations

import math
import sys
from dataclasses import replace

import pytest

from veritas_dsl.cli import ExitCode, main
from veritas_dsl.solvers import registry
from veritas_dsl.solvers.oracle.engine import OracleEngine

SPEC = """model m = ensemble "m.json"
query top {
    input x
    maximize m(x)
}
query low {
    input x
    minimize m(x)
}
query any {
    input x
    where m(x) > 100
}
"""


@pytest.fixture
def spec(tmp_path, two_trees):
    two_trees.save(tmp_path / "m.json")
    path = tmp_path / "spec.ver"
    path.write_text(SPEC)
    return path


def test_table_and_plot(spec, tmp_path, capsys):
    png = tmp_path / "bounds.png"
    assert main(["compare", str(spec), "--solvers", "oracle", "--plot", str(png)]) == ExitCode.OK
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == [
        "query",
        "engine",
        "status",
        "lower",
        "upper",
        "first",
        "exact",
        "time",
    ]
    assert out[1].split()[:5] == ["top", "oracle", "optimal", "7", "7"]
    assert out[2].split()[:5] == ["low", "oracle", "optimal", "-3", "-3"]
    assert out[3].split()[:3] == ["any", "oracle", "infeasible"]
    assert out[-1] == f"plot: 2 panels written to {png}"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_without_matplotlib_is_a_user_error(spec, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    png = tmp_path / "bounds.png"
    assert main(["compare", str(spec), "--solvers", "oracle", "--plot", str(png)]) == 2
    assert "error: plotting needs matplotlib" in capsys.readouterr().err
    assert not png.exists()


def test_unknown_engine(spec, capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["compare", str(spec), "--solvers", "oracle,nope"])
    assert stopped.value.code == ExitCode.ERROR
    err = capsys.readouterr().err
    assert "usage: ver compare" in err
    assert "error: argument --solvers: unknown engine 'nope' (choose from astar, " in err


class _OffByOne(OracleEngine):
    """An exact engine that is wrong: the oracle's bounds, one higher."""

    name = "liar"

    def solve_reduced(self, query, limits, *, progress=None):
        result = replace(super().solve_reduced(query, limits), engine=self.name)
        if result.lower is None:
            return result
        return replace(result, lower=result.lower + 1, upper=result.upper + 1)


@pytest.fixture
def liar(monkeypatch):
    monkeypatch.setitem(registry.ENGINES, "liar", _OffByOne())


def test_a_disagreement_is_an_error(spec, liar, capsys):
    assert main(["compare", str(spec), "--solvers", "oracle,liar"]) == ExitCode.FAILED
    err = capsys.readouterr().err
    assert "error: query top: engines disagree: oracle says optimal [7.0, 7.0], liar says" in err
    assert "query any" not in err  # both say infeasible


def test_solve_with_two_engines_cross_checks(spec, liar, capsys):
    spec.write_text(SPEC.replace("maximize m(x)", "maximize m(x)\n    solve with oracle, liar"))
    assert main(["run", str(spec)]) == ExitCode.ERROR
    err = capsys.readouterr().err
    assert "soundness check failed" in err
    assert "query top: engines disagree" in err


def test_the_plot_axis_is_not_squashed_by_an_early_loose_bound(tmp_path):
    from veritas_dsl.compare import Comparison
    from veritas_dsl.report.compare import y_limits
    from veritas_dsl.result import Result, Termination, TracePoint

    milp = Result("q", "milp", Termination.OPTIMAL, 7.0, 7.0, time_s=0.1)
    milp.trace = [TracePoint(0.01, -math.inf, 1e6), TracePoint(0.02, 5.0, 50.0)]
    astar = Result("q", "astar", Termination.TIME_LIMIT, 6.5, 7.5, time_s=1.0)
    astar.trace = [TracePoint(0.001, 6.0, 9.0)]
    comparison = Comparison(lowered=None, results={"milp": milp, "astar": astar})
    bottom, top = y_limits(comparison)
    # Final bounds span [6.5, 7.5]: the axis reaches 10 gaps beyond, not MILP's first 1e6.
    assert bottom < 5.0 < 7.5 < 17.5 < top < 20.0
    milp.trace = [TracePoint(0.02, 5.0, 9.0)]
    bottom, top = y_limits(comparison)  # every point is close: all of them shown
    assert 4.5 < bottom < 5.0 and 9.0 < top < 9.5
    # Every engine closed its gap: 10 % of the answer stands for the gap.
    astar.lower = astar.upper = 7.0
    astar.trace = [TracePoint(0.001, 6.9, 1e9)]
    bottom, top = y_limits(comparison)
    assert bottom < 5.0 and 14.0 < top < 15.0
    assert y_limits(Comparison(lowered=None)) is None


def test_bounds_equal_but_for_float_noise_get_a_readable_axis():
    from veritas_dsl.compare import Comparison
    from veritas_dsl.report.compare import y_limits
    from veritas_dsl.result import Result, Termination

    answer = 0.160160548
    results = {
        "astar": Result("q", "astar", Termination.OPTIMAL, answer, answer, time_s=0.1),
        "milp": Result("q", "milp", Termination.OPTIMAL, answer, answer + 1e-16, time_s=0.2),
    }
    bottom, top = y_limits(Comparison(lowered=None, results=results))
    # at least 1 % of the answer's size, the answer in the middle
    assert top - bottom >= 0.01 * answer
    assert bottom < answer < top and abs((bottom + top) / 2 - answer) < 1e-9
