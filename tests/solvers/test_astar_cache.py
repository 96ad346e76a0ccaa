"""The compiled A* kernels are cached in the user's cache directory, never inside the package,
and a cached kernel is never loaded once a kernel it calls has changed.

Numba's default, a ``__pycache__`` next to the source, leaves files that ``pip uninstall`` does
not remove; the folder left over then shadows a later install as a namespace package.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import veritas_dsl
import veritas_dsl.grammar
import veritas_dsl.solvers

PACKAGE_DIRS = [
    Path(p)
    for module in (veritas_dsl, veritas_dsl.solvers, veritas_dsl.grammar)
    for p in module.__path__
]


def package_files() -> dict[Path, tuple[int, int]]:
    """Size and modification time of every file of the installed package but Python's own
    bytecode."""
    return {
        path: (path.stat().st_size, path.stat().st_mtime_ns)
        for folder in PACKAGE_DIRS
        for path in folder.rglob("*")
        if path.is_file() and path.suffix != ".pyc"
    }


def run(tmp_path, env_changes: dict[str, str | None], *command: str):
    env = {**os.environ, "HOME": str(tmp_path / "home"), "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    for name, value in env_changes.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    done = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done


def cached(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.nbi")) if folder.exists() else []


def test_a_query_writes_its_kernels_to_the_user_cache_and_nothing_into_the_package(
    tmp_path, two_trees
):
    two_trees.save(tmp_path / "m.json")
    (tmp_path / "spec.ver").write_text(
        'model m = ensemble "m.json"\nquery top { input x  maximize m(x)  solve with astar }\n'
    )
    before = package_files()
    ver = Path(sys.executable).with_name("ver")
    run(tmp_path, {"NUMBA_CACHE_DIR": None}, str(ver), "run", "spec.ver")
    after = package_files()
    assert [str(p) for p in after if after[p] != before.get(p)] == []
    # platformdirs' user cache: XDG_CACHE_HOME on Linux, under HOME elsewhere
    assert cached(tmp_path / "xdg") + cached(tmp_path / "home"), "no kernel was cached"


def test_numba_cache_dir_moves_the_kernel_cache(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    code = "from veritas_dsl.solvers.astar import kernels as K; K.encode_distance(1.0)"
    run(tmp_path, {"NUMBA_CACHE_DIR": str(elsewhere)}, sys.executable, "-c", code)
    assert any(p.name.startswith("exact.encode_distance") for p in cached(elsewhere))
    assert cached(tmp_path / "xdg") + cached(tmp_path / "home") == []


CALLER = """from veritas_dsl.jit import kernel
from callee import value


@kernel
def answer():
    return value()
"""
CALLEE = """from veritas_dsl.jit import internal


@internal
def value():
    return {}
"""


def test_a_kernel_whose_callee_changed_in_another_file_is_compiled_again(tmp_path):
    """Numba checks only a cached function's own file, yet the cached code includes its
    callees: the kernels' folder is cached under a digest of all its sources."""
    folder = tmp_path / "kernels"
    folder.mkdir()
    (folder / "caller.py").write_text(CALLER)
    callee = folder / "callee.py"
    callee.write_text(CALLEE.format(1))
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(folder)}
    code = "import caller; print(caller.answer())"
    assert run(tmp_path, env, sys.executable, "-c", code).stdout == "1\n"
    assert cached(tmp_path / "cache"), "nothing was cached"
    # the same size and modification time: only the content differs
    stamp = callee.stat()
    callee.write_text(CALLEE.format(2))
    os.utime(callee, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert run(tmp_path, env, sys.executable, "-c", code).stdout == "2\n"
