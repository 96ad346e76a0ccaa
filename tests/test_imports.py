"""Paying only for what is used: ``import veritas_dsl``, the pytest plugin that every pytest
session of a user loads, and the commands that solve nothing (``ver --help``, ``ver fmt``,
``ver lsp``, ``ver check`` of a spec with an error) import no engine library, no Numba and no
model library. Each runs in a fresh interpreter, which then lists the heavy modules it holds.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from veritas_dsl.exports import typing_imports

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
#: What a spec pays for only when it needs it: Numba (the A* engine, DaRE forests), PySAT and
#: HiGHS (engines), XGBoost and scikit-learn (model formats).
HEAVY = ("numba", "pysat", "highspy", "xgboost", "sklearn")

#: Runs the statements of argv[1] and prints the heavy top-level modules loaded by then.
PROBE = f"""
import json, sys
exec(sys.argv[1])
print(json.dumps(sorted(m for m in sys.modules if m.partition(".")[0] in {HEAVY!r})))
"""


def loaded(statements: str, cwd: Path = ROOT, stdin: str = "") -> list[str]:
    """The modules of :data:`HEAVY` a fresh interpreter holds after running ``statements``."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, statements],
        capture_output=True,
        text=True,
        cwd=cwd,
        input=stdin,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def ver(*argv: str) -> str:
    """Statements that run the ``ver`` command with ``argv`` in-process, its exit code in
    ``code``."""
    return (
        "from veritas_dsl.cli import main\n"
        "try:\n"
        f"    code = main({list(argv)!r})\n"
        "except SystemExit as stop:  # argparse, after --help\n"
        "    code = stop.code\n"
    )


def test_importing_the_package_imports_nothing_heavy():
    assert loaded("import veritas_dsl\nimport veritas_dsl.unlearning") == []


def test_loading_the_pytest_plugin_imports_nothing_heavy(tmp_path):
    # pytest loads the plugin from its entry point and configures it, as in a user's session
    statements = (
        "import pytest\n"
        "pytest.main(['--collect-only', '-q', '-p', 'no:cacheprovider', '.'])\n"
        "assert 'veritas_dsl.pytest_plugin' in sys.modules\n"
    )
    assert loaded(statements, cwd=tmp_path) == []


def test_help_imports_nothing_heavy():
    assert loaded(ver("--help") + "assert code == 0, code\n") == []


def test_formatting_a_spec_imports_nothing_heavy(tmp_path):
    spec = tmp_path / "fairness.ver"
    shutil.copy(EXAMPLES / "fairness.ver", spec)
    assert loaded(ver("fmt", str(spec)) + "assert code == 0, code\n") == []


def test_the_language_server_starts_and_stops_importing_nothing_heavy():
    assert loaded(ver("lsp") + "assert code == 0, code\n", stdin="") == []


@pytest.mark.parametrize(
    "where",
    [
        "where x.incme >= 60",  # a name error, found once the model is read
        'where x.age >= "old"',  # a type error
        "where x.age >=",  # a syntax error
    ],
)
def test_checking_a_spec_with_an_error_imports_nothing_heavy(tmp_path, where):
    shutil.copy(EXAMPLES / "models" / "credit_forest.json", tmp_path / "forest.json")
    spec = tmp_path / "bad.ver"
    spec.write_text(
        'model m = ensemble "forest.json"\n\n'
        f"query q {{\n    input x\n    {where}\n    maximize m(x)\n}}\n"
    )
    statements = ver("check", str(spec)) + "assert code == 2, code\n"
    assert loaded(statements) == []


def test_the_registry_imports_an_engine_only_when_it_is_asked_to_work():
    statements = (
        "from veritas_dsl.solvers import registry\n"
        "def engines():\n"
        "    return sorted(m for m in sys.modules if m.startswith('veritas_dsl.solvers')"
        " and m.endswith('.engine'))\n"
        "declared = {name: e.capabilities for name, e in registry.ENGINES.items()}\n"
        "assert engines() == [], engines()\n"
        "registry.get('oracle').chain\n"
        "assert engines() == ['veritas_dsl.solvers.oracle.engine'], engines()\n"
    )
    assert loaded(statements) == []


# -- the public names, imported on first use ------------------------------------------------


@pytest.mark.parametrize("package", ["veritas_dsl", "veritas_dsl.unlearning"])
def test_each_public_name_is_listed_once_and_is_its_modules_own(package):
    import importlib

    module = importlib.import_module(package)
    public = typing_imports(Path(module.__file__).read_text())
    assert sorted(public) == sorted(module.__all__)
    for name, where in public.items():
        assert getattr(module, name) is getattr(importlib.import_module(where), name), name
    assert set(module.__all__) <= set(dir(module))
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        module.nothing  # noqa: B018


def test_the_names_are_read_from_the_typing_block_alone():
    source = (
        "from typing import TYPE_CHECKING\n"
        "from a import not_public\n"
        "if TYPE_CHECKING:\n"
        "    from a.b import One, Two as Three\n"
        "    import c\n"
    )
    assert typing_imports(source) == {"One": "a.b", "Three": "a.b"}


def test_a_public_name_that_is_also_a_submodule_stays_the_public_one():
    statements = (
        "import veritas_dsl.unlearning.leakage\n"  # the submodule first
        "from veritas_dsl.unlearning import leakage\n"
        "module = sys.modules['veritas_dsl.unlearning.leakage']\n"
        "assert leakage is module.leakage and callable(leakage), leakage\n"
    )
    loaded(statements)
