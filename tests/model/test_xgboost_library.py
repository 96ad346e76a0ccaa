"""XGBoost's library called directly (:mod:`veritas_dsl.model.xgboost_library`) gives what its
Python package gives, and a spec on an XGBoost model file never imports the package."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
import xgboost as xgb

from veritas_dsl.model.xgboost_library import Booster, XGBoostLibraryError

RNG = np.random.default_rng(3)
X = RNG.normal(size=(400, 4)).astype(np.float32)
X[RNG.random(X.shape) < 0.05] = np.nan  # missing values go their trees' default way


def trained(objective: str, **params) -> xgb.Booster:
    labels = {"binary:logistic": (X[:, 0] > 0), "multi:softprob": np.nan_to_num(X[:, 1]) > 0}
    y = labels.get(objective, np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 2]) > 0.5)
    y = y.astype(int) + (objective == "multi:softprob") * (np.nan_to_num(X[:, 2]) > 1)
    params = {"objective": objective, "max_depth": 3, "nthread": 1, **params}
    return xgb.train(params, xgb.DMatrix(X, y), 7)


@pytest.mark.parametrize(
    "objective, params",
    [("binary:logistic", {}), ("reg:squarederror", {}), ("multi:softprob", {"num_class": 3})],
)
@pytest.mark.parametrize("rounds", [0, 3])
@pytest.mark.parametrize("nthread", [1, 0])
def test_margins_are_the_packages_predictions(objective, params, rounds, nthread):
    booster = trained(objective, **params)
    ours = Booster(bytes(booster.save_raw("json")))
    ours.set_param("nthread", nthread)
    theirs = booster.predict(xgb.DMatrix(X), output_margin=True, iteration_range=(0, rounds))
    margins = ours.margins(X, rounds, nthread)
    assert margins.dtype == np.float32
    assert np.array_equal(margins, theirs)  # bit for bit: the same code adds the same floats


def test_the_ubjson_written_back_is_the_packages():
    booster = trained("binary:logistic")
    assert Booster(bytes(booster.save_raw("json"))).save_ubj() == bytes(booster.save_raw("ubj"))


def test_a_copy_predicts_the_same():
    booster = trained("binary:logistic")
    ours = Booster(bytes(booster.save_raw("ubj")))
    assert np.array_equal(ours.copy().margins(X), ours.margins(X))


def test_a_model_xgboost_refuses_raises_its_message():
    with pytest.raises(XGBoostLibraryError) as error:
        Booster(b'{"learner": 1}')
    assert str(error.value)  # XGBoost's own reason, not empty


def test_a_spec_on_an_xgboost_file_validates_without_the_python_package(tmp_path):
    trained("binary:logistic").save_model(tmp_path / "m.json")
    (tmp_path / "s.ver").write_text(
        'model m = xgboost "m.json"\nquery top {\n    input x\n    maximize m(x)\n}\n'
    )
    script = textwrap.dedent(
        """
        import sys
        from veritas_dsl.cli import main
        sys.argv = ["ver", "run", "--json", "s.ver"]
        try:
            main()
        except SystemExit as stop:
            assert stop.code in (0, None), stop.code
        print("xgboost" in sys.modules, "sklearn" in sys.modules, file=sys.stderr)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    assert '"optimal"' in done.stdout  # solved, and its witness validated by XGBoost's library
    assert done.stderr.strip().splitlines()[-1] == "False False"
