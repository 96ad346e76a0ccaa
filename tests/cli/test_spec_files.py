"""Spec files that cannot be read as text, or hold nothing, are located errors (exit 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from veritas_dsl.cli import ExitCode, main


def test_a_byte_that_is_not_utf8_is_located(tmp_path, capsys):
    path = tmp_path / "latin1.ver"
    path.write_bytes(b'model m = xgboost "m.json"\r\n# caf\xe9 au lait\nquery q { input x }\n')
    assert main(["run", str(path)]) == ExitCode.ERROR
    err = capsys.readouterr().err
    assert "error[V001]: cannot read" in err and "not UTF-8 text" in err
    assert f"--> {path}:2:6" in err
    assert "2 | # caf\N{REPLACEMENT CHARACTER} au lait" in err
    assert "  |      ^ byte 0xe9 is not UTF-8" in err
    assert "Traceback" not in err and "codec" not in err


def test_a_byte_order_mark_is_skipped(tmp_path, capsys):
    path = tmp_path / "bom.ver"
    path.write_text("\ufeffquery q { input x  where x.a > 1 }\n", encoding="utf-8")
    assert main(["run", str(path)]) == ExitCode.ERROR
    err = capsys.readouterr().err
    assert "V203" in err and "unexpected" not in err  # the mark is no stray character


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n"])
def test_a_file_without_declarations_is_located(tmp_path, capsys, text):
    path = tmp_path / "empty.ver"
    path.write_text(text)
    assert main(["run", str(path)]) == ExitCode.ERROR
    err = capsys.readouterr().err
    assert "error[V203]: a spec needs at least one model" in err
    assert f"--> {path}:1:1" in err


def test_a_pickle_model_names_the_flag_that_allows_it(tmp_path, capsys):
    import pickle

    from sklearn.tree import DecisionTreeRegressor

    fitted = DecisionTreeRegressor(max_depth=1).fit([[0.0], [1.0]], [0.0, 1.0])
    (tmp_path / "m.pkl").write_bytes(pickle.dumps(fitted))
    path = tmp_path / "spec.ver"
    path.write_text('model m = sklearn "m.pkl"\nquery q { input x  maximize m(x) }\n')
    assert main(["run", str(path)]) == ExitCode.ERROR
    err = capsys.readouterr().err
    assert "error[V401]" in err and "--trust-pickle" in err
    assert main(["run", "--trust-pickle", str(path)]) == ExitCode.OK


@pytest.mark.parametrize(
    ("where", "code"),
    [("not " * 20_000 + "x.x0 > 1", "V103"), ("x.x0 / 1e-320 >= 1", "V329")],
    ids=["nesting", "overflow"],
)
def test_nesting_and_overflow_exit_2_with_a_located_error(tmp_path, capsys, two_trees, where, code):
    two_trees.save(tmp_path / "m.json")
    path = tmp_path / "spec.ver"
    path.write_text(f'model m = ensemble "m.json"\nquery q {{ input x  where {where} }}\n')
    assert main(["check", str(path)]) == ExitCode.ERROR
    captured = capsys.readouterr()
    printed = captured.out + captured.err  # `ver check` reports spec errors with its checks
    assert f"error[{code}]" in printed and f"--> {path}:2:" in printed
    assert "Traceback" not in printed and "internal error" not in printed


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize(
    ("line", "code", "what"),
    [
        ('model c = xgboost "models/\0credit.json"', "V401", "cannot load model `c`"),
        ('data d = csv "data/credit_test.csv\0"', "V406", "cannot read data `d`"),
        ('model a = delete(m, rows = "\0rows.txt")', "V406", "cannot read the rows file `\\x00rows.txt`"),
    ],
    ids=["model", "data", "rows"],
)
def test_a_nul_character_in_a_file_name_is_located(tmp_path, capsys, line, code, what):
    """Found by tests/cli/test_fuzz_specs.py: `internal error: ValueError('embedded null
    byte')`; no file system opens such a name."""
    text = f'model m = dare "{EXAMPLES / "models" / "unlearning.dare"}"\n{line}\n'
    text += "query q { input x  maximize m(x) }\n"
    path = tmp_path / "spec.ver"
    path.write_text(text)
    assert main(["run", str(path)]) == ExitCode.ERROR
    err = capsys.readouterr().err
    assert f"error[{code}]: {what}: the path contains a NUL byte" in err
    assert f"--> {path}:2:" in err
    assert "internal error" not in err and "Traceback" not in err
