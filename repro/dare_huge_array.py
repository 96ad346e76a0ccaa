"""A .dare archive (an .npz) whose X member is a valid .npy header claiming 10**11 float32 rows
with no data after it: numpy allocates the claimed array before it reads, and MemoryError is not
among the errors the loader turns into ModelError: `internal error`.
Run: python repro/dare_huge_array.py   (writes /tmp/huge.dare)"""
import io
import subprocess
import sys
import zipfile

from numpy.lib import format as npy

header = io.BytesIO()
npy.write_array_header_1_0(
    header, {"descr": "<f4", "fortran_order": False, "shape": (10**11, 4)}
)
with zipfile.ZipFile("/tmp/huge.dare", "w") as archive:
    archive.writestr("X.npy", header.getvalue())
code = "from veritas_dsl.cli import main; raise SystemExit(main(['inspect', '/tmp/huge.dare']))"
child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
print("exit", child.returncode)
print(child.stdout[-600:], child.stderr[-600:])
