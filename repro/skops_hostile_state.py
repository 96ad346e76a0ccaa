"""Estimators with allowed types but hostile state, saved with skops and run through
`ver inspect`: each should be exit 2 with a located message, never 'internal error' or a crash.
Run: python repro/skops_hostile_state.py  (writes under /tmp)"""
import subprocess
import sys

import numpy as np
import skops.io as sio
from sklearn import ensemble, tree

X = np.random.default_rng(0).normal(size=(80, 2))
yb = X[:, 0] > 0
few = dict(n_estimators=2, max_depth=2, random_state=0)


def dt():
    return tree.DecisionTreeClassifier(max_depth=2).fit(X, yb)


def rf():
    return ensemble.RandomForestClassifier(**few).fit(X, yb)


def gb():
    return ensemble.GradientBoostingClassifier(**few).fit(X, yb)


def hgb():
    return ensemble.HistGradientBoostingRegressor(max_iter=2, max_depth=2).fit(X, X[:, 0])


def setattrs(make, **attrs):
    model = make()
    for k, v in attrs.items():
        setattr(model, k, v)
    return model


def names(values):
    return np.array(values, dtype=object)


def member_features(make, n):
    model = make()
    model.estimators_[0].n_features_in_ = n
    return model


CASES = {
    "names shorter than n_features_in_": lambda: setattrs(dt, feature_names_in_=names(["a"])),
    "names longer (unused)": lambda: setattrs(dt, feature_names_in_=names(["a", "b", "c"])),
    "forest member n_features_in_ 3": lambda: member_features(rf, 3),
    "classes_ int": lambda: setattrs(dt, classes_=5),
    "n_classes_ 7": lambda: setattrs(dt, n_classes_=7),
    "gb learning_rate str": lambda: setattrs(gb, learning_rate="x"),
    "gb n_trees_per_iteration_ 3": lambda: setattrs(gb, n_trees_per_iteration_=3),
    "hgb n_trees_per_iteration_ 2": lambda: setattrs(hgb, n_trees_per_iteration_=2),
    "hgb baseline 2": lambda: setattrs(hgb, _baseline_prediction=np.zeros((1, 2))),
    "forest empty": lambda: setattrs(rf, estimators_=[]),
    "gb empty": lambda: setattrs(gb, estimators_=np.empty((0, 1), dtype=object)),
    "n_outputs_ 2": lambda: setattrs(dt, n_outputs_=2),
}

for name, make in CASES.items():
    path = f"/tmp/hostile_{abs(hash(name))}.skops"
    try:
        sio.dump(make(), path)
    except Exception as error:
        print(f"{name}: cannot save ({error!r})")
        continue
    code = f"from veritas_dsl.cli import main; raise SystemExit(main(['inspect', {path!r}]))"
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    last = (child.stderr.strip().splitlines() or [""])[-1]
    print(f"{name}: exit {child.returncode}: {last[:200]}")
