"""An XGBoost JSON model whose tree 0 holds a field twice: `"KEY": BAD` and then
`"KE\\u0059": GOOD` (the same key, its last letter escaped). Python's json decodes the escape, so
our checks read GOOD (the last of two equal keys); XGBoost's parser keeps `\\u` escapes as they
are, so it sees two different keys and loads BAD, which our checks never saw.
Run: python repro/xgboost_escaped_key.py [variant]   (variants below; writes under /tmp)"""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import xgboost as xgb

X = np.random.default_rng(0).normal(size=(100, 2))
params = {"max_depth": 2, "objective": "binary:logistic"}
booster = xgb.train(params, xgb.DMatrix(X, X[:, 0] > 0), 2)
document = json.loads(booster.save_raw("json"))
tree = document["learner"]["gradient_booster"]["model"]["trees"][0]
n = len(tree["left_children"])
VARIANTS = {  # key -> the value XGBoost gets instead of the checked one
    "split_indices": [1 << 30] * n,  # features far beyond num_feature: read out of bounds
    "left_children": [n + 10000000, *tree["left_children"][1:]],  # a child far out of range
    "parents": [2147483647, 1 << 30, 1 << 30],  # XGBoost's loader follows parent links
    "cycle": None,  # root's left child is the root itself: XGBoost's predictor loops
}
variant = sys.argv[1] if len(sys.argv) > 1 else "split_indices"
key = "left_children" if variant == "cycle" else variant
bad = [0, *tree["left_children"][1:]] if variant == "cycle" else VARIANTS[variant]
good = tree.pop(key)
text = json.dumps(document)
marker = json.dumps({"id": 0})[1:-1]  # `"id": 0`, the first key of tree 0 we anchor on
escaped = key[:-1] + f"\\u{ord(key[-1]):04x}"
text = text.replace(
    marker, f'"{key}": {json.dumps(bad)}, "{escaped}": {json.dumps(good)}, {marker}', 1
)
path = f"/tmp/escaped_{variant}.json"
Path(path).write_text(text)
assert json.loads(text)["learner"]["gradient_booster"]["model"]["trees"][0][key] == good
code = f"from veritas_dsl.cli import main; raise SystemExit(main(['inspect', {path!r}]))"
try:
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=120)
    print("exit", child.returncode, "(-11: SIGSEGV)")
    print(child.stdout[-700:], child.stderr[-700:])
except subprocess.TimeoutExpired:
    print("no answer in 120 s: ver inspect hangs")
