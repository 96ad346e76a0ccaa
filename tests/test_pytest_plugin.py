"""The pytest plugin: .ver files as test items, readable failures."""

from __future__ import annotations

import pytest

HEADER = 'model m = ensemble "m.json"\ndata rows = csv "rows.csv"\n'


@pytest.fixture
def folder(pytester, two_trees):
    two_trees.save(pytester.path / "m.json")
    (pytester.path / "rows.csv").write_text("x0,x1\n0,0\n0.25,0.5\n")
    return pytester


def test_items_pass_and_fail(folder):
    folder.makefile(
        ".ver",
        specs=HEADER
        + """
query top {
    input x
    maximize m(x)
    expect upper <= 7
}
property steady for r in rows[0:2] {
    forall x: linf(x, r) <= 1 => m(x) <= 1.5
}
query plain {
    input x
    maximize m(x)
}
""",
    )
    result = folder.runpytest("-v")  # the pytest11 entry point loads the plugin
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*specs.ver::top PASSED*",
            "*specs.ver::steady FAILED*",
            "*2 of 2 rows fail*",
            "*steady[[]0]: property steady failed (counterexample found)*",
            "*counterexample:*",
            "*feature  row  x*",
        ]
    )
    assert "plain" not in result.stdout.str()


def test_two_instance_witness_table(folder):
    folder.makefile(
        ".ver",
        fair=HEADER
        + "query gap {\n input x1, x2\n where x1 == x2 except x0\n maximize m(x2) - m(x1)\n expect upper <= 5\n}\n",
    )
    result = folder.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*expect upper <= 5 failed (upper = 5.5)*", "*feature  x1*x2*", "*x0 *"]
    )


def test_spec_errors_are_one_failing_item(folder):
    folder.makefile(".ver", broken=HEADER + "query q {\n  input x\n  where x.nope > 0\n}\n")
    result = folder.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*error[[]V204]: unknown feature `nope`*", "*broken.ver:5:11*"])


def test_a_vacuous_property_fails_and_its_warning_shows(folder):
    folder.makefile(
        ".ver",
        vac=HEADER
        + "property impossible {\n    forall x: x.x1 >= 30 and x.x1 <= 10 => m(x) <= 100\n}\n"
        + "property calm {\n    forall x: linf(x, rows[0]) <= 0.25 => m(x) <= 2\n}\n",
    )
    result = folder.runpytest("-v")
    result.assert_outcomes(passed=1, failed=1, warnings=1)
    result.stdout.fnmatch_lines(
        [
            "*vac.ver::impossible FAILED*",
            "*vac.ver::calm PASSED*",
            "*vac.ver:3:1: impossible: property impossible vacuous "
            "(no input satisfies the premise)*",
            "*warnings summary*",
            "*VerWarning: warning[[]V601]: no input satisfies the premise of property `impossible`",
            "*--> *vac.ver:4:15",
        ]
    )


def test_an_unknown_solver_is_a_usage_error(folder):
    folder.makefile(
        ".ver", specs=HEADER + "query top {\n input x\n maximize m(x)\n expect upper <= 7\n}\n"
    )
    result = folder.runpytest("--ver-solver", "nope")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--ver-solver: unknown engine 'nope' (choose from astar, *"])


TWO = """
query broken {
    input x
    maximize m(x)
    expect upper <= 7
    solve with ENGINE
}
query fine {
    input x
    minimize m(x)
    expect lower >= -3
}
"""


def test_an_engine_failure_shows_its_message(folder, monkeypatch):
    from cli.odd_engines import FAILURE, register

    register(monkeypatch)
    folder.makefile(".ver", specs=HEADER + TWO.replace("ENGINE", "failing"))
    result = folder.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*engine failing: error", f"*failing: {FAILURE}*"])


def test_ctrl_c_stops_the_session(folder, monkeypatch):
    from cli.odd_engines import register

    register(monkeypatch)
    folder.makefile(".ver", specs=HEADER + TWO.replace("ENGINE", "stopped"))
    recorded = folder.inline_run(no_reraise_ctrlc=True)
    assert recorded.ret == pytest.ExitCode.INTERRUPTED
    ran = [report.nodeid for report in recorded.getreports("pytest_runtest_logreport")]
    assert any("broken" in nodeid for nodeid in ran)
    assert not any("fine" in nodeid for nodeid in ran)  # the next item never ran


def test_a_row_filter_that_keeps_no_row_warns(folder):
    folder.makefile(
        ".ver",
        none=HEADER
        + "property steady for r in rows[0:2] where m(r) > 100 {\n"
        + "    forall x: linf(x, r) <= 1 => m(x) <= 1.5\n}\n",
    )
    result = folder.runpytest("-v")
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(
        [
            "*VerWarning: warning[[]V603]: the row filter of property `steady` keeps none of "
            "the rows rows[[]0:2]",
            "*--> *none.ver:3:42",
        ]
    )


MODELS_CONFTEST = """
import numpy as np
import pytest
import xgboost


@pytest.fixture(scope="session")
def ver_models():
    rng = np.random.default_rng(0)
    X = rng.random((200, 2))
    y = (X[:, 0] > 0.5).astype(int)
    model = xgboost.XGBClassifier(n_estimators=3, max_depth=2).fit(X, y)
    return {"clf": model, "unused": model}
"""
GIVEN = """
query top {
    input x
    maximize clf(x)
    expect upper <= 100
}
property calm {
    forall x: x.f0 >= 0.9 => class(clf, x) == 0
}
"""


def test_a_fixture_gives_a_spec_its_model(pytester):
    import numpy as np
    import xgboost

    pytester.makeconftest(MODELS_CONFTEST)
    pytester.makefile(".ver", given="model clf = xgboost\n" + GIVEN)
    # The model of this file satisfies `calm`; the fixture's, which replaces it, does not.
    X = np.random.default_rng(0).random((200, 2))
    other = xgboost.XGBClassifier(n_estimators=3, max_depth=2).fit(X, X[:, 0] < 0.5)
    other.save_model(pytester.path / "other.json")
    pytester.makefile(".ver", replaced='model clf = xgboost "other.json"\n' + GIVEN)
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*given.ver::top PASSED*",
            "*given.ver::calm FAILED*",
            "*replaced.ver::calm FAILED*",
            "*property calm failed (counterexample found)*",
            "*feature  x*",
        ]
    )


def test_a_model_declared_without_a_file_and_no_fixture(pytester):
    pytester.makefile(".ver", given="model clf = xgboost\n" + GIVEN)
    result = pytester.runpytest("-v")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        ["*error[[]V415]: model `clf` has no file, and none was given from Python*"]
    )
