"""A skops tree fitted on 1 feature whose feature_names_in_ lists K names, with its split on
feature K-1. The Ensemble accepts feature K-1 (it counts features by feature_names), but the
parity check calls scikit-learn's predict with n_features_in_ = 1 columns, and scikit-learn's
tree walks X[i, K-1] unchecked: an out-of-bounds read (garbage parity, or SIGSEGV for large K).
Run: python repro/skops_feature_names_oob.py [K] [kind]   (kind: tree | gb | forest)"""
import subprocess
import sys

import numpy as np
import skops.io as sio
from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor
from sklearn.tree import DecisionTreeRegressor

K = int(sys.argv[1]) if len(sys.argv) > 1 else 900_000
kind = sys.argv[2] if len(sys.argv) > 2 else "tree"
X = np.array([[0.0], [1.0], [2.0], [3.0]])
y = np.array([0.0, 0.0, 1.0, 1.0])
few = dict(n_estimators=1, max_depth=1, random_state=0)
model = {"tree": DecisionTreeRegressor(max_depth=1),
         "gb": GradientBoostingRegressor(**few),
         "forest": RandomForestRegressor(**few)}[kind].fit(X, y)
trees = [m.tree_ for m in np.ravel(getattr(model, "estimators_", [model]))]
for tree in trees:
    state = tree.__getstate__()
    state["nodes"] = state["nodes"].copy()
    state["nodes"]["feature"][0] = K - 1
    tree.__setstate__(state)
model.feature_names_in_ = np.array([f"f{i}" for i in range(K)], dtype=object)
path = "/tmp/feature_names_oob.skops"
sio.dump(model, path)
code = f"from veritas_dsl.cli import main; raise SystemExit(main(['inspect', {path!r}]))"
child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
print("exit", child.returncode)
print(child.stdout[-800:], child.stderr[-800:])
