"""`maximize min(part for m in V)` and `minimize max(...)`, over a family or a list of terms, lower
to the IR's MaximizeMin / MinimizeMax with one term per model, in the family's order."""

from __future__ import annotations

import numpy as np

from veritas_dsl import parse
from veritas_dsl.ir import MaximizeMin, MinimizeMax, OutputAtom, OutputTerm
from veritas_dsl.unlearning import DareForest

HEAD = (
    'model before = dare "forest.dare"\n'
    "model after = delete(before, rows = [1, 2])\n"
    "models V = deletions(before, fraction = 0.05, count = 4, seed = 2)\n"
)


def spec(tmp_path, body: str):
    rng = np.random.default_rng(0)
    X = rng.integers(0, 5, (60, 3)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] + rng.integers(0, 2, 60) > 4).astype(int)
    DareForest(n_trees=3, max_depth=3, random_state=1).fit(X, y).save(tmp_path / "forest.dare")
    path = tmp_path / "spec.ver"
    path.write_text(HEAD + body)
    (lowered,) = parse(path.read_text(), str(path)).lowered()
    return lowered.query


def atom(model: str, coef: float = 1.0) -> OutputAtom:
    return OutputAtom(coef, model, "x")


def test_maximize_min_over_a_family_has_a_term_per_model(tmp_path):
    query = spec(tmp_path, "query q {\n input x\n maximize min(m(x) for m in V)\n}\n")
    names = ["before"] + [f"V[{k}]" for k in range(4)]  # the model as it is comes first
    assert query.goal == MaximizeMin(tuple(OutputTerm((atom(name),)) for name in names))


def test_minimize_max_of_an_expression_of_each_model(tmp_path):
    query = spec(
        tmp_path, "query q {\n input x\n minimize max(m(x) - before(x) + 1 for m in V)\n}\n"
    )
    assert isinstance(query.goal, MinimizeMax)
    base, *variants = query.goal.terms
    assert (base.atoms, base.constant) == ((), 1.0)  # before(x) - before(x) + 1
    assert len(variants) == 4
    for k, term in enumerate(variants):
        assert set(term.atoms) == {atom(f"V[{k}]"), atom("before", -1.0)}
        assert term.constant == 1.0


def test_min_of_a_list_of_terms(tmp_path):
    query = spec(tmp_path, "query q {\n input x\n maximize min(before(x), 2 * after(x))\n}\n")
    assert query.goal == MaximizeMin(
        (OutputTerm((atom("before"),)), OutputTerm((atom("after", 2.0),)))
    )
