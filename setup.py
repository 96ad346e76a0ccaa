"""The package list, derived from the folders: pyproject's ``package-dir`` installs ``solvers/`` and
``grammar/`` inside ``veritas_dsl``, which setuptools' discovery cannot follow. Everything else
is in pyproject.toml."""

import tomllib
from pathlib import Path

from setuptools import setup

ROOT = Path(__file__).resolve().parent


def packages() -> list[str]:
    """Every folder with an ``__init__.py`` under a ``package-dir`` entry, as a package name."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    found = set()
    for package, folder in config["package-dir"].items():
        base = ROOT / folder
        for init in base.rglob("__init__.py"):
            parts = init.parent.relative_to(base).parts
            if not any(part.startswith((".", "__")) for part in parts):
                found.add(".".join([package, *parts]))
    return sorted(found)


if __name__ == "__main__":  # as setuptools runs it; tests import packages() alone
    setup(packages=packages())
