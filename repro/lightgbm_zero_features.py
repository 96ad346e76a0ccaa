"""A LightGBM text model with no features (max_feature_idx=-1, feature_names= empty) and one
single-leaf tree: does `ver inspect` end with a located error?
Run: python repro/lightgbm_zero_features.py"""
import subprocess
import sys
from pathlib import Path

text = """tree
version=v4
num_class=1
num_tree_per_iteration=1
label_index=0
max_feature_idx=-1
objective=regression
feature_names=
feature_infos=
tree_sizes=40

Tree=0
num_leaves=1
num_cat=0
split_feature=
threshold=
decision_type=
left_child=
right_child=
leaf_value=0.5
is_linear=0
shrinkage=1


end of trees
"""
path = "/tmp/zero_features.txt"
Path(path).write_text(text)
code = f"from veritas_dsl.cli import main; raise SystemExit(main(['inspect', {path!r}]))"
child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
print("exit", child.returncode)
print(child.stdout[-800:], child.stderr[-800:])
