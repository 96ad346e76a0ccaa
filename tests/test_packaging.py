"""Every package folder is installed: pyproject lists packages by hand (solvers/ and grammar/ are
mapped into veritas_dsl), so a new folder must be added there too."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_folder_is_listed():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    mapping = config["package-dir"]
    found = set()
    for package, folder in mapping.items():
        base = ROOT / folder
        for init in base.rglob("__init__.py"):
            relative = init.parent.relative_to(base)
            if any(part.startswith((".", "__")) for part in relative.parts):
                continue
            found.add(".".join([package, *relative.parts]))
    # a mapped sub-package folder (solvers/) is found from its own mapping, not from veritas_dsl/
    assert found - listed == set(), (
        f"add these to [tool.setuptools] packages: {sorted(found - listed)}"
    )
    assert listed - found == set(), f"listed packages without a folder: {sorted(listed - found)}"
