"""scikit-learn warns "X does not have valid feature names" each time an estimator fitted on a
DataFrame is given an array, as ours are when the model loads and when each witness is checked.
A HistGradientBoosting model fitted on a DataFrame and saved with skops, run through a spec by
`ver run` (a query and a batch, one process and two), warns nothing: with every warning shown
("always"), none is about feature names (issue 42 item 7: it was printed on every run)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from veritas_dsl.cli import ExitCode, main

SPEC = """model clf = sklearn "hgb.skops"
model reg = sklearn "reg.skops"
data rows = csv "rows.csv"
query top {
    input x
    maximize clf(x)
}
query near for r in rows[0:3] {
    input x
    where linf(x, r) <= 0.1 and class(clf, x) == 1
    minimize reg(x)
}
"""


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_skops_model_fitted_on_a_dataframe_runs_without_the_feature_name_warning(
    tmp_path, jobs, capsys
):
    import skops.io
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.random((200, 3)), columns=["age", "income", "debt"])
    fitted = HistGradientBoostingClassifier(max_iter=4).fit(X, X.age + X.income > 1)
    skops.io.dump(fitted, tmp_path / "hgb.skops")
    skops.io.dump(HistGradientBoostingRegressor(max_iter=4).fit(X, X.debt), tmp_path / "reg.skops")
    X.to_csv(tmp_path / "rows.csv", index=False)
    (tmp_path / "spec.ver").write_text(SPEC)
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        code = main(["run", str(tmp_path / "spec.ver"), "--jobs", jobs])
    assert code == ExitCode.OK, capsys.readouterr()
    assert [str(w.message) for w in shown if "feature names" in str(w.message)] == []
    assert "feature names" not in capsys.readouterr().err
