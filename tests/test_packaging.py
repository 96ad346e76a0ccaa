"""Every package folder is installed: setup.py derives the package list from the folders that
pyproject's package-dir maps (solvers/ and grammar/ install inside veritas_dsl), and a wheel built
from this tree holds every one of them, the grammar, the JSON Schema files and the LICENSE. The
sdist holds every file `git ls-files` lists (tests, examples, docs, benchmarks, editors), and a
test file runs from it."""

from __future__ import annotations

import hashlib
import json
import runpy
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

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
    for name in ("pyproject.toml", "setup.py", "README.md", "LICENSE"):
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
    schemas = {f"veritas_dsl/report/schema/{n}.schema.json" for n in ("run", "check", "leakage")}
    assert schemas <= set(names)
    (license_file,) = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
    assert zipfile.ZipFile(wheel).read(license_file) == (ROOT / "LICENSE").read_bytes()


def test_the_license_is_the_apache_2_text_unmodified():
    # pyproject and the VS Code manifest say Apache-2.0; the file is apache.org's LICENSE-2.0.txt.
    digest = hashlib.md5((ROOT / "LICENSE").read_bytes(), usedforsecurity=False).hexdigest()
    assert digest == "3b83ef96387f14655fc854ddc3c6bd57"
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"] == (
        "Apache-2.0"
    )
    assert json.loads((ROOT / "editors" / "vscode" / "package.json").read_text())["license"] == (
        "Apache-2.0"
    )


#: Tracked files that are the repository's, not the project's: CI's script and git's own.
NOT_SHIPPED = {".ci/run", ".gitignore"}


def tracked() -> set[str]:
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    return {name for name in listed.split("\0") if name and (ROOT / name).exists()}


@pytest.fixture(scope="module")
def sdist(tmp_path_factory) -> Path:
    """The sdist built from a copy of the tracked files (what a clean checkout holds), unpacked."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    folder = tmp_path_factory.mktemp("sdist")
    source = folder / "source"
    for name in tracked():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name)
    built = subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--outdir", str(folder), str(source)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    (archive,) = folder.glob("*.tar.gz")
    with tarfile.open(archive) as tar:
        tar.extractall(folder / "unpacked", filter="data")
    (unpacked,) = (folder / "unpacked").iterdir()
    return unpacked


def test_the_sdist_holds_every_tracked_file(sdist):
    shipped = {str(p.relative_to(sdist)) for p in sdist.rglob("*") if p.is_file()}
    generated = {"PKG-INFO", "setup.cfg"} | {n for n in shipped if ".egg-info/" in n}
    expected = tracked() - NOT_SHIPPED
    assert shipped - generated == expected
    for folder in ("tests", "examples", "docs", "bench", "grammar", "editors"):
        assert any(name.startswith(folder + "/") for name in expected), folder
    assert {"tests/conftest.py", "LICENSE", "MANIFEST.in"} <= shipped


def test_a_test_file_runs_from_the_sdist(sdist):
    # The layers test reads the sdist's sources, docs and pyproject; -P keeps the sdist's folder
    # off sys.path, so `veritas_dsl` is the installed package, as for a user of the sdist.
    ran = subprocess.run(
        [sys.executable, "-P", "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "tests/test_layers.py"],
        cwd=sdist,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-2000:]
    assert " passed" in ran.stdout


def test_every_library_the_package_imports_is_declared():
    # A module imported only because another dependency happens to bring it (scipy came with
    # xgboost) breaks when that dependency stops bringing it: every import is declared.
    import ast
    from importlib.metadata import packages_distributions

    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lists = [project["dependencies"], *project["optional-dependencies"].values()]
    requirements = [Requirement(r) for group in lists for r in group]
    declared = {n.lower() for r in requirements for n in (r.name, *r.extras)}
    owners = packages_distributions()
    undeclared = set()
    for folder in ("veritas_dsl", "solvers"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top in sys.stdlib_module_names or top in ("veritas_dsl", "solvers"):
                        continue
                    dists = {d.lower() for d in owners.get(top, [top])}
                    if not dists & declared:
                        undeclared.add((top, path.relative_to(ROOT).as_posix()))
    assert not undeclared, sorted(undeclared)
