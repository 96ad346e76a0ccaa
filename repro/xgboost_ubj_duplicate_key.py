"""An XGBoost UBJSON model whose tree 0 holds `parents` twice, a bad value first and the real
one last. Our UBJSON reader keeps the last of two equal keys, so our checks see the real parent
links; if XGBoost kept the first, it would load parent links our checks never saw.
Run: python repro/xgboost_ubj_duplicate_key.py   (writes /tmp/dup_parents.ubj)"""
import subprocess
import sys
from pathlib import Path

import numpy as np
import xgboost as xgb

from veritas_dsl.model import ubjson

X = np.random.default_rng(0).normal(size=(100, 2))
params = {"max_depth": 2, "objective": "binary:logistic"}
booster = xgb.train(params, xgb.DMatrix(X, X[:, 0] > 0), 2)
raw = bytes(booster.save_raw("ubj"))
at = raw.index(b"parents") + len(b"parents")  # the first tree's `parents` value starts here
reader = ubjson._Reader(memoryview(raw))
reader.pos = at
good = ubjson.loads(raw)["learner"]["gradient_booster"]["model"]["trees"][0]["parents"]
reader.value()
value = raw[at : reader.pos]
key = b"L" + (7).to_bytes(8, "big") + b"parents"  # XGBoost writes key lengths as int64
key_start = at - len(key)
assert raw[key_start:at] == key
bad = np.array([2147483647] + [1 << 30] * (len(good) - 1), dtype=">i4").tobytes()
assert value.endswith(np.asarray(good, dtype=">i4").tobytes())
bad_value = value[: len(value) - len(bad)] + bad
data = raw[:key_start] + key + bad_value + raw[key_start:]
try:  # before the fix our reader kept the last `parents` (the real links); now it refuses
    tree0 = ubjson.loads(data)["learner"]["gradient_booster"]["model"]["trees"][0]
    assert list(tree0["parents"]) == list(good)
except ubjson.UBJSONError as error:
    print("our reader:", error)
path = "/tmp/dup_parents.ubj"
Path(path).write_bytes(data)
code = f"from veritas_dsl.cli import main; raise SystemExit(main(['inspect', {path!r}]))"
child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
print("exit", child.returncode, "(-11: SIGSEGV)")
print(child.stdout[-700:], child.stderr[-700:])
