"""A HistGradientBoostingRegressor whose predictor `nodes` array names its `left` and `right`
fields the other way round (same types, same offsets: only the names swap). scikit-learn's
compiled predictor reads the fields by position; the importer reads them by name. If the two
disagree, `ver run` verifies a mirrored model, not the one in the file.
Run: python repro/skops_hist_field_names.py   (writes /tmp/hist_names.skops)"""
import subprocess
import sys

import numpy as np
import skops.io as sio
from sklearn.ensemble import HistGradientBoostingRegressor

X = np.random.default_rng(0).normal(size=(200, 2))
model = HistGradientBoostingRegressor(max_iter=3, max_depth=3, random_state=0).fit(X, X[:, 0])
for iteration in model._predictors:
    for predictor in iteration:
        nodes = predictor.nodes
        names = list(nodes.dtype.names)
        i, j = names.index("left"), names.index("right")
        names[i], names[j] = names[j], names[i]
        swapped = nodes.dtype.descr
        fields = {n: nodes.dtype.fields[n] for n in nodes.dtype.names}
        dtype = np.dtype({"names": names, "formats": [fields[n][0] for n in nodes.dtype.names],
                          "offsets": [fields[n][1] for n in nodes.dtype.names],
                          "itemsize": nodes.dtype.itemsize})
        predictor.nodes = nodes.view(dtype)
print("scikit-learn still predicts:", model.predict(X[:3]))
path = "/tmp/hist_names.skops"
sio.dump(model, path)
code = f"from veritas_dsl.cli import main; raise SystemExit(main(['inspect', {path!r}]))"
child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
print("exit", child.returncode)
print(child.stdout[-500:], child.stderr[-500:])
