"""A refused pickle names the option of the route its user took: ``--trust-pickle`` on the command
line, ``--ver-trust-pickle`` under pytest, the keyword ``trust_pickle=True`` in Python, and none in
an editor, which never loads one. The command line once told its users to pass
``trust_pickle=True``."""

from __future__ import annotations

import pickle

import pytest

from veritas_dsl import load
from veritas_dsl.cli import ExitCode, main
from veritas_dsl.diagnostics import SpecError
from veritas_dsl.editor.analysis import analyse
from veritas_dsl.editor.cache import CachedFiles
from veritas_dsl.model import load_model
from veritas_dsl.model.errors import ModelError

SPEC = 'model m = sklearn "m.pkl"\nproperty p {\n    forall x: m(x) <= 2\n}\n'
OPTIONS = ("trust_pickle=True", "--trust-pickle", "--ver-trust-pickle")


@pytest.fixture
def folder(tmp_path):
    from sklearn.tree import DecisionTreeRegressor

    fitted = DecisionTreeRegressor(max_depth=1).fit([[0.0], [1.0]], [0.0, 1.0])
    (tmp_path / "m.pkl").write_bytes(pickle.dumps(fitted))
    (tmp_path / "test_m.ver").write_text(SPEC)
    return tmp_path


def only(text: str, option: str | None) -> bool:
    """``text`` names ``option`` and no other route's (no option is part of another)."""
    return {o for o in OPTIONS if o in text} == ({option} if option else set())


def test_python_names_the_keyword(folder):
    with pytest.raises(ModelError) as caught:
        load_model(folder / "m.pkl")
    assert only(str(caught.value), "trust_pickle=True")
    with pytest.raises(SpecError) as caught:
        load(folder / "test_m.ver")
    (diagnostic,) = caught.value.diagnostics
    assert diagnostic.code == "V401" and "runs code" in diagnostic.message
    assert only(diagnostic.message + diagnostic.help, "trust_pickle=True")
    assert load(folder / "test_m.ver", trust_pickle=True).queries


@pytest.mark.parametrize("command", ["run", "check", "inspect"])
def test_the_command_line_names_its_flag(folder, capsys, command):
    target = folder / ("m.pkl" if command == "inspect" else "test_m.ver")
    assert main([command, str(target)]) == ExitCode.ERROR
    out = "".join(capsys.readouterr())
    assert "runs code" in out and only(out, "--trust-pickle")
    assert main([command, "--trust-pickle", str(target)]) == ExitCode.OK


def test_pytest_names_its_flag(folder, pytester):
    for name in ("m.pkl", "test_m.ver"):
        (pytester.path / name).write_bytes((folder / name).read_bytes())
    refused = pytester.runpytest("-p", "no:cacheprovider")
    refused.assert_outcomes(failed=1)
    assert only(refused.stdout.str(), "--ver-trust-pickle")
    pytester.runpytest("-p", "no:cacheprovider", "--ver-trust-pickle").assert_outcomes(passed=1)


def test_an_editor_names_no_flag(folder):
    (diagnostic,) = analyse(SPEC, str(folder / "test_m.ver"), CachedFiles()).diagnostics
    assert diagnostic.code == "V401" and "runs code" in diagnostic.message
    assert "never loaded" in diagnostic.help and only(diagnostic.message + diagnostic.help, None)
