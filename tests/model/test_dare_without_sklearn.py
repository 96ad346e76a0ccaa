"""DareForest without the [sklearn] extra: the stand-in base classes give what scikit-learn's
would (parameters, score, a NotFitted that is a ModelError). Run in a fresh interpreter in which
``import sklearn`` fails, as it does on a plain ``pip install .``."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import sys
    sys.modules["sklearn"] = None  # import sklearn raises ImportError
    import numpy as np
    from veritas_dsl.model.errors import ModelError
    from veritas_dsl.unlearning import DareForest

    forest = DareForest(n_trees=3, max_depth=2, random_state=0)
    assert forest.get_params()["n_trees"] == 3
    assert forest.set_params(n_trees=4) is forest and forest.n_trees == 4
    try:
        forest.set_params(trees=4)
    except ValueError:
        pass
    else:
        raise AssertionError("an unknown parameter was accepted")
    try:
        forest.predict(np.zeros((1, 2)))
    except ModelError:
        pass
    else:
        raise AssertionError("predict before fit did not raise")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = np.where(X[:, 0] > 0, "yes", "no")
    forest.fit(X, y)
    assert list(forest.classes_) == ["no", "yes"]
    assert forest.score(X, y) == np.mean(forest.predict(X) == y) > 0.8
    assert "sklearn" not in {name.split(".")[0] for name, m in sys.modules.items() if m}
    print("ok")
    """
)


def test_the_forest_works_without_scikit_learn():
    ran = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.strip() == "ok"
