"""The compiled A* kernels are cached in the user's cache directory, never inside the package.

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
    code = "from veritas_dsl.solvers.astar import kernels as K; K.two_sum(1.0, 2.0)"
    run(tmp_path, {"NUMBA_CACHE_DIR": str(elsewhere)}, sys.executable, "-c", code)
    assert any(p.name.startswith("kernels.two_sum") for p in cached(elsewhere))
    assert cached(tmp_path / "xdg") + cached(tmp_path / "home") == []
