"""A LightGBM text model of C classes, one single-leaf tree each (a file of ~40*C bytes): the
importer builds a dense (n_nodes, n_outputs) value matrix, C*C float64, so memory grows with the
square of the file size (C = 20000: a 1 MB file, a 3.2 GB matrix, touched in full by the checks).
The child runs under an address-space cap so that it cannot take the machine down.
Run: python repro/lightgbm_many_classes.py [C] [CAP_MB]   (writes /tmp/many_classes.txt)"""
import os
import resource
import subprocess
import sys

C = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
CAP = int(sys.argv[2]) if len(sys.argv) > 2 else 12000
head = (f"tree\nversion=v4\nnum_class={C}\nnum_tree_per_iteration={C}\nlabel_index=0\n"
        "max_feature_idx=0\nobjective=multiclass\nfeature_names=a\nfeature_infos=none\n\n")
tree = ("Tree={t}\nnum_leaves=1\nnum_cat=0\nsplit_feature=\nthreshold=\ndecision_type=\n"
        "left_child=\nright_child=\nleaf_value=0.5\nis_linear=0\nshrinkage=1\n\n\n")
path = "/tmp/many_classes.txt"
with open(path, "w") as f:
    f.write(head + "".join(tree.format(t=t) for t in range(C)) + "end of trees\n")
print(f"file {os.path.getsize(path)} bytes; value matrix {C * C * 8 >> 20} MB")


def cap():
    resource.setrlimit(resource.RLIMIT_AS, (CAP << 20, CAP << 20))


code = (
    "import resource, time\n"
    "from veritas_dsl.model import Ensemble\n"
    "t = time.time()\n"
    "try:\n"
    f"    m = Ensemble.from_lightgbm({path!r}); print('loaded', m.n_trees, 'trees')\n"
    "except BaseException as e:\n"
    "    print(type(e).__name__, str(e)[:300])\n"
    "print('peak RSS MB', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10,\n"
    "      'in', round(time.time() - t), 's')\n"
)
child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       preexec_fn=cap)
print("exit", child.returncode)
print(child.stdout[-1000:], child.stderr[-1000:])
