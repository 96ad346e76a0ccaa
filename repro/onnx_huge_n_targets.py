"""An ONNX TreeEnsembleRegressor of one leaf whose n_targets attribute is N (a file of ~300
bytes): the importer allocates np.full(N) before it refuses a regressor of more than one target.
N = 10**13: MemoryError, which the importer does not catch (`internal error`); N = 2 * 10**9:
16 GB written, the process dies under the cap (and without it, the machine swaps or OOM-kills).
Run: python repro/onnx_huge_n_targets.py [N] [CAP_MB]   (writes /tmp/huge_n_targets.onnx)"""
import os
import resource
import subprocess
import sys
from pathlib import Path

from onnx import TensorProto, helper

N = int(sys.argv[1]) if len(sys.argv) > 1 else 10**13
CAP = int(sys.argv[2]) if len(sys.argv) > 2 else 4000
node = helper.make_node(
    "TreeEnsembleRegressor", ["X"], ["Y"], domain="ai.onnx.ml",
    nodes_treeids=[0], nodes_nodeids=[0], nodes_featureids=[0], nodes_values=[0.0],
    nodes_modes=["LEAF"], nodes_truenodeids=[0], nodes_falsenodeids=[0],
    target_treeids=[0], target_nodeids=[0], target_ids=[0], target_weights=[1.0],
    n_targets=N,
)
graph = helper.make_graph(
    [node], "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, 1])],
    [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
)
model = helper.make_model(
    graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)]
)
path = "/tmp/huge_n_targets.onnx"
Path(path).write_bytes(model.SerializeToString())
print(f"file {os.path.getsize(path)} bytes")


def cap():
    resource.setrlimit(resource.RLIMIT_AS, (CAP << 20, CAP << 20))


code = f"from veritas_dsl.cli import main; raise SystemExit(main(['inspect', {path!r}]))"
child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       preexec_fn=cap)
print("exit", child.returncode)
print(child.stdout[-800:], child.stderr[-800:])
