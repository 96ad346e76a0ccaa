"""Every package folder is installed: setup.py derives the package list from the folders that
pyproject's package-dir maps (solvers/ and grammar/ install inside veritas_dsl), and a wheel built
from this tree holds every one of them and the grammar."""

from __future__ import annotations

import runpy
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def folder_packages() -> set[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    found = set()
    for package, folder in config["package-dir"].items():
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / folder)
            if not any(part.startswith((".", "__")) for part in relative.parts):
                found.add(".".join([package, *relative.parts]))
    return found


def test_no_package_list_is_kept_by_hand():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "packages" not in config
    derived = runpy.run_path(str(ROOT / "setup.py"))["packages"]()
    assert set(derived) == folder_packages()
    assert {"veritas_dsl.solvers.astar.kernels", "veritas_dsl.grammar"} <= set(derived)


def test_a_wheel_holds_every_package_and_the_grammar(tmp_path):
    # Built from a copy: setuptools writes build/ into the tree it builds.
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for folder in ("veritas_dsl", "solvers", "grammar"):
        ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
        shutil.copytree(ROOT / folder, source / folder, ignore=ignore)
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(source), "-w", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = tmp_path.glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    inside = {n.rsplit("/", 1)[0].replace("/", ".") for n in names if n.endswith("/__init__.py")}
    assert inside == folder_packages()
    assert "veritas_dsl/grammar/ver.lark" in names
