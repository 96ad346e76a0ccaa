"""As skops_feature_names_oob.py, but X is wide enough (n_features_in_ = 200) that numpy maps it
with mmap, so scikit-learn's unchecked X[i, K-1] runs off the mapping: SIGSEGV in `ver inspect`.
Run: python repro/skops_feature_names_segv.py [K]   (writes /tmp/feature_names_segv.skops)"""
import subprocess
import sys

import numpy as np
import skops.io as sio
from sklearn.tree import DecisionTreeRegressor

K = int(sys.argv[1]) if len(sys.argv) > 1 else 300_000
W = 200
X = np.random.default_rng(0).normal(size=(40, W))
model = DecisionTreeRegressor(max_depth=1).fit(X, X[:, 0])
state = model.tree_.__getstate__()
state["nodes"] = state["nodes"].copy()
state["nodes"]["feature"][0] = K - 1
model.tree_.__setstate__(state)
model.feature_names_in_ = np.array([f"f{i}" for i in range(K)], dtype=object)
path = "/tmp/feature_names_segv.skops"
sio.dump(model, path)
code = f"from veritas_dsl.cli import main; raise SystemExit(main(['inspect', {path!r}]))"
child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
print("exit", child.returncode, "(-11 is SIGSEGV)")
print(child.stdout[-600:], child.stderr[-600:])
