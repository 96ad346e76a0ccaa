"""Long DaRE work reports its steps to a listener (``ver run`` shows them on its progress line):
a fit per tree, a deletion per row (or per tree when many rows go at once), a family per model
with its deletion's steps inside; without a listener nothing is reported and nothing printed."""

from __future__ import annotations

import numpy as np

from veritas_dsl import parse
from veritas_dsl.steps import listening
from veritas_dsl.unlearning import DareForest
from veritas_dsl.unlearning.dare.forest import ONE_BY_ONE


def data(n: int = 80):
    rng = np.random.default_rng(0)
    X = rng.integers(0, 5, (n, 3)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] + rng.integers(0, 2, n) > 4).astype(int)
    return X, y


def test_a_fit_and_deletions_report_their_steps():
    seen: list[str] = []
    X, y = data(ONE_BY_ONE + 50)
    with listening(seen.append):
        forest = DareForest(n_trees=3, max_depth=3, random_state=1).fit(X, y)
        forest.delete([4, 9])
        forest.delete(list(range(10, 10 + ONE_BY_ONE + 1)))
    many = ONE_BY_ONE + 1
    assert seen == [
        "DaRE fit: tree 1 of 3",
        "DaRE fit: tree 2 of 3",
        "DaRE fit: tree 3 of 3",
        "DaRE deletion: row 1 of 2",
        "DaRE deletion: row 2 of 2",
        *(f"DaRE deletion of {many} rows: tree {t} of 3" for t in (1, 2, 3)),
    ]


def test_no_listener_no_report(capsys):
    X, y = data()
    DareForest(n_trees=2, max_depth=3, random_state=1).fit(X, y).delete([1])
    assert capsys.readouterr() == ("", "")


def test_a_family_reports_each_model_with_its_deletion_inside(tmp_path):
    X, y = data()
    DareForest(n_trees=2, max_depth=3, random_state=1).fit(X, y).save(tmp_path / "forest.dare")
    text = (
        'model before = dare "forest.dare"\n'
        "models V = deletions(before, fraction = 0.025, count = 3, seed = 0)\n"
        "query q {\n input x\n where class(m, x) == 1 for m in V\n find\n}\n"
    )
    seen: list[str] = []
    with listening(seen.append):
        parse(text, str(tmp_path / "spec.ver"))
    family = [s for s in seen if s.startswith("family V")]
    assert family == [
        line
        for k in (1, 2, 3)
        for line in (
            f"family V: model {k} of 3",
            f"family V: model {k} of 3; DaRE deletion: row 1 of 2",
            f"family V: model {k} of 3; DaRE deletion: row 2 of 2",
        )
    ]
