"""The package's shape: each module sits in a layer of the table in docs/layers.md and imports only
its own layer and those its row allows (engines and the running layer never import the language),
no two modules import each other (directly or round a loop), and no module is over 500 lines.

Imports are read from the source (``ast``), function-local ones included: an import moved into a
function to dodge a cycle is still a cycle. Imports of a package's own parents (``veritas_dsl``
runs its ``__init__`` before any submodule) do not count, as in every Python project. Imports under
``if TYPE_CHECKING:`` never run: they name types for annotations, so they count for the layers
(a module must not even name a higher layer's types) but cannot close a cycle.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: The table of layers this test reads: the one the docs show.
TABLE = ROOT / "docs" / "layers.md"


def sources() -> dict[str, Path]:
    """Where each importable package's source lives, as pyproject maps it (``solvers/`` installs
    as ``veritas_dsl.solvers``)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    return {package: ROOT / folder for package, folder in config["package-dir"].items()}


def read_layers(text: str) -> tuple[list[tuple[str, tuple[str, ...]]], dict[str, set[str]]]:
    """The layers of the docs' table, lowest first, each with the module prefixes its row names
    (``model/`` is the package ``veritas_dsl.model``, ``run.py`` the module
    ``veritas_dsl.run``, ``solvers/`` ``veritas_dsl.solvers``), and the layers each one may
    import: those its row names, and theirs in turn."""
    layers, direct = [], {}
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 4 or cells[0] in ("Layer", "---"):
            continue
        name, modules, may, _ = cells
        prefixes = []
        for path in re.findall(r"`([^`]+)`", modules):
            stem = path.removesuffix("/").removesuffix(".py").replace("/", ".")
            prefixes.append("veritas_dsl" if stem == "__init__" else f"veritas_dsl.{stem}")
        layers.append((name, tuple(prefixes)))
        direct[name] = {m.strip() for m in may.split(",") if m.strip()}
    closed = {}
    for name, _ in layers:  # lowest first: a layer names only layers above it in the table
        closed[name] = set(direct[name]).union(*(closed[m] for m in direct[name]))
    return layers, closed


SOURCES = sources()
LAYERS, MAY_IMPORT = read_layers(TABLE.read_text())

MAX_LINES = 500
#: A function's code (its docstring aside) over this many lines says at its top why it is long.
MAX_FUNCTION_LINES = 80


def module_files() -> dict[str, Path]:
    """Every module of the package, by its dotted name."""
    modules = {}
    for package, folder in SOURCES.items():
        for path in sorted(folder.rglob("*.py")):
            parts = path.relative_to(folder).with_suffix("").parts
            dotted = ".".join([package, *(p for p in parts if p != "__init__")])
            modules[dotted] = path
    return modules


def imports(
    name: str, source: str, is_package: bool, known: set[str], typing: bool = True
) -> list[tuple[str, int]]:
    """The package modules that module ``name`` imports anywhere in ``source``, with the line of
    each import (those under ``if TYPE_CHECKING:`` only when ``typing``). ``from package import
    module`` is an import of that module."""
    tree = ast.parse(source)
    skipped = set() if typing else {id(node) for node in typing_only(tree)}
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = name.split(".") if is_package else name.split(".")[:-1]
                here = here[: len(here) - node.level + 1]
                base = ".".join([*here, base] if base else here)
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                for alias in node.names
            ]
        else:
            continue
        found += [(target, node.lineno) for target in targets if target in known]
    return found


def typing_only(tree: ast.Module) -> list[ast.AST]:
    """The statements under ``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``), nested ones too."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in (
            "TYPE_CHECKING",
            "typing.TYPE_CHECKING",
        ):
            found += [inner for statement in node.body for inner in ast.walk(statement)]
    return found


def graph(files: dict[str, Path], typing: bool = True) -> dict[str, list[tuple[str, int]]]:
    """Each module's imports of other package modules, its own parent packages left out."""
    known = set(files)
    edges = {}
    for name, path in files.items():
        found = imports(name, path.read_text(), path.name == "__init__.py", known, typing)
        edges[name] = [(t, line) for t, line in found if not name.startswith(t + ".")]
    return edges


def layer_of(module: str) -> int | None:
    """The index of ``module``'s layer: the one with the longest prefix naming it."""
    best, best_length = None, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            # The bare package name stands for its __init__ alone, not for every module.
            covers = module == prefix or (
                prefix != "veritas_dsl" and module.startswith(prefix + ".")
            )
            if covers and len(prefix) > best_length:
                best, best_length = index, len(prefix)
    return best


def forbidden_imports(edges, files) -> list[str]:
    """Each import of a layer the importer's row does not allow, as ``file:line: a (layer)
    imports b (layer)``."""
    found = []
    for name, targets in edges.items():
        mine = LAYERS[layer_of(name)][0]
        for target, line in targets:
            theirs = LAYERS[layer_of(target)][0]
            if theirs != mine and theirs not in MAY_IMPORT[mine]:
                where = f"{files[name].relative_to(ROOT)}:{line}"
                found.append(f"{where}: {name} ({mine}) imports {target} ({theirs})")
    return found


def cycles(edges) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target, _ in edges.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return groups


def test_every_module_has_a_layer():
    unplaced = [name for name in module_files() if layer_of(name) is None]
    assert not unplaced, f"add these modules to a layer in LAYERS: {unplaced}"


def test_no_module_imports_a_layer_its_row_does_not_allow():
    files = module_files()
    found = forbidden_imports(graph(files), files)
    assert not found, "imports the table in docs/layers.md does not allow:\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("importer", "imported"),
    [
        ("veritas_dsl.solvers.oracle.engine", "veritas_dsl.lang.typed"),  # an engine
        ("veritas_dsl.run", "veritas_dsl.lang.lower"),  # the running layer
        ("veritas_dsl.report.json", "veritas_dsl.lang.typed"),  # a report
        ("veritas_dsl.ir.query", "veritas_dsl.solvers.base"),  # the IR, upwards
    ],
)
def test_a_planted_import_of_the_language_or_upwards_is_found(importer, imported):
    files = module_files()
    edges = graph(files)
    edges[importer] = [*edges[importer], (imported, 1)]
    assert forbidden_imports(edges, files) == [
        f"{files[importer].relative_to(ROOT)}:1: {importer} ({LAYERS[layer_of(importer)][0]}) "
        f"imports {imported} ({LAYERS[layer_of(imported)][0]})"
    ]


def test_the_table_is_the_docs_and_reads_whole():
    names = [name for name, _ in LAYERS]
    assert names == [
        "foundation",
        "models and data",
        "query IR",
        "language",
        "engines",
        "running",
        "reports",
        "entry points",
    ]
    assert "language" not in MAY_IMPORT["engines"] | MAY_IMPORT["running"] | MAY_IMPORT["reports"]
    assert MAY_IMPORT["entry points"] == set(names) - {"entry points"}


def test_no_import_cycles():
    found = cycles(graph(module_files(), typing=False))
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_no_module_over_the_limit():
    over = {}
    for path in module_files().values():
        lines = len(path.read_text().splitlines())
        if lines > MAX_LINES:
            over[path.relative_to(ROOT).as_posix()] = lines
    assert not over, f"modules over {MAX_LINES} lines (split them along their seams): {over}"


def long_functions(source: str) -> list[tuple[str, int, int]]:
    """``(name, line, code lines)`` of each function whose code is over the limit and whose
    docstring or first comment does not say why (a sentence with "long" in it)."""
    lines = source.splitlines()
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        first = node.body[1] if ast.get_docstring(node) and len(node.body) > 1 else node.body[0]
        code = node.end_lineno - first.lineno + 1
        top = "\n".join(lines[node.lineno : first.lineno - 1])  # docstring and comments
        if code > MAX_FUNCTION_LINES and "long" not in top.lower():
            found.append((node.name, node.lineno, code))
    return found


def test_no_long_function_without_a_reason():
    over = [
        f"{path.relative_to(ROOT)}:{line}: {name} ({code} lines)"
        for path in module_files().values()
        for name, line, code in long_functions(path.read_text())
    ]
    assert not over, (
        f"functions over {MAX_FUNCTION_LINES} lines without a reason at their top (split them, or "
        "say why they are long):\n" + "\n".join(over)
    )


def test_the_checks_see_a_planted_violation():
    """The checks themselves: an IR module importing the run layer, through a function-local
    import, is both an upward import and (with run importing the IR) a cycle; an import for
    annotations only is left out of the cycles; a long function must say why."""
    known = {"veritas_dsl.ir.query", "veritas_dsl.run"}
    planted = "def f():\n    from veritas_dsl.run import solve\n"
    edges = {
        "veritas_dsl.ir.query": imports("veritas_dsl.ir.query", planted, False, known),
        "veritas_dsl.run": imports("veritas_dsl.run", "from .ir import query\n", False, known),
    }
    files = {name: ROOT / "planted.py" for name in known}
    assert forbidden_imports(edges, files) == [
        "planted.py:2: veritas_dsl.ir.query (query IR) imports veritas_dsl.run (running)"
    ]
    assert cycles(edges) == [["veritas_dsl.ir.query", "veritas_dsl.run"]]
    typed = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from veritas_dsl import run\n"
    assert imports("veritas_dsl.ir.query", typed, False, known) == [("veritas_dsl.run", 3)]
    assert imports("veritas_dsl.ir.query", typed, False, known, typing=False) == []
    line = "    x = 1\n"
    long, limit = line * (MAX_FUNCTION_LINES + 1), line * MAX_FUNCTION_LINES
    assert long_functions(f'def f():\n    """Add."""\n{long}') == [("f", 1, 81)]
    assert long_functions(f'def f():\n    """Add; long because ..."""\n{long}') == []
    assert long_functions(f'def f():\n    """Add."""\n{limit}') == []
