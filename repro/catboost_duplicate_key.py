"""A CatBoost JSON model whose first tree holds `splits` (or `leaf_values`) twice, one of them
hostile (a split on a feature and border index far out of range; a short leaf array). Python's
json keeps the last of two equal keys; which one does CatBoost keep? If the first, CatBoost loads
what our checks never saw; and a key spelled with a \\u escape.
Run: python repro/catboost_duplicate_key.py   (writes under /tmp)"""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from catboost import CatBoostRegressor

X = np.random.default_rng(0).normal(size=(200, 3))
model = CatBoostRegressor(iterations=2, depth=2, verbose=0, allow_writing_files=False)
model.fit(X, X[:, 0]).save_model("/tmp/cb.json", format="json")
document = json.loads(Path("/tmp/cb.json").read_text())
tree = document["oblivious_trees"][0]
hostile = {
    "splits": [dict(s, float_feature_index=1 << 20, split_index=1 << 30) for s in tree["splits"]],
    "leaf_values": [0.0],
}
for key, bad in hostile.items():
    escaped = key[:-1] + f"\\u{ord(key[-1]):04x}"  # the same key, its last letter escaped
    for order in ("hostile_first", "hostile_last", "escaped_last"):
        good = tree[key]
        pairs = [(key, bad), (key, good)] if order == "hostile_first" else [(key, good), (key, bad)]
        if order == "escaped_last":
            pairs = [(key, bad), (escaped, good)]
        rest = {k: v for k, v in tree.items() if k != key}
        body = ", ".join(f'"{k}": {json.dumps(v)}' for k, v in pairs)
        body += ", " + json.dumps(rest)[1:-1]
        document["oblivious_trees"][0] = "@TREE@"
        text = json.dumps(document).replace('"@TREE@"', "{" + body + "}")
        document["oblivious_trees"][0] = tree
        path = f"/tmp/cb_dup_{key}_{order}.json"
        Path(path).write_text(text)
        code = f"from veritas_dsl.cli import main; raise SystemExit(main(['inspect', {path!r}]))"
        child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               timeout=120)
        last = (child.stderr.strip().splitlines() or [""])[-1][:160]
        print(f"{key} {order}: exit {child.returncode} {last}")
