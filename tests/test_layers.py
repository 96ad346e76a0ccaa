"""The package's shape: each module sits in a layer and imports only its own layer and those below,
no two modules import each other (directly or round a loop), and no module is over 500 lines.

Imports are read from the source (``ast``), function-local ones included: an import moved into a
function to dodge a cycle is still a cycle. Imports of a package's own parents (``veritas_dsl``
runs its ``__init__`` before any submodule) do not count, as in every Python project. Imports under
``if TYPE_CHECKING:`` never run: they name types for annotations, so they count for the layers
(a module must not even name a higher layer's types) but cannot close a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Where each importable package's source lives (``solvers/`` installs as veritas_dsl.solvers).
SOURCES = {"veritas_dsl": ROOT / "veritas_dsl", "veritas_dsl.solvers": ROOT / "solvers"}

#: The layers, lowest first. A module may import modules of its own layer and of lower ones.
#: A prefix names a module or a package (all of its modules).
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "foundation: what every layer shares",
        (
            "veritas_dsl.errors",
            "veritas_dsl.atomic",
            "veritas_dsl.inputs",
            "veritas_dsl.float32",
            "veritas_dsl.jit",
            "veritas_dsl.diagnostics",
            "veritas_dsl.result",
        ),
    ),
    ("models and data", ("veritas_dsl.model", "veritas_dsl.data")),
    ("query IR and its meaning", ("veritas_dsl.ir",)),
    ("the .ver language, down to the IR (lowering)", ("veritas_dsl.lang",)),
    ("engines", ("veritas_dsl.solvers",)),
    (
        # outcome: the data run fills in and reports read. validate: run checks every engine's
        # witness on the library model before anyone sees it (engines never check their own).
        # vacuity: run asks it whether a premise can hold, before and after the engine answers.
        # compare, parallel and cluster: run's queries side by side on engines, or across
        # processes or a Dask cluster (local_cluster: the process of a local one).
        "running queries",
        (
            "veritas_dsl.outcome",
            "veritas_dsl.validate",
            "veritas_dsl.vacuity",
            "veritas_dsl.run",
            "veritas_dsl.compare",
            "veritas_dsl.parallel",
            "veritas_dsl.cluster",
            "veritas_dsl.local_cluster",
            # unlearning: DareForest (a model) and leakage, which runs engines.
            "veritas_dsl.unlearning",
        ),
    ),
    ("reports", ("veritas_dsl.report",)),
    (
        "entry points",
        (
            "veritas_dsl.spec",
            "veritas_dsl.leakage_targets",
            "veritas_dsl.cli",
            "veritas_dsl.arguments",
            # editor: `ver fmt`, the language server and highlighting, beside the command line.
            "veritas_dsl.editor",
            "veritas_dsl.pytest_plugin",
            "veritas_dsl",
        ),
    ),
)

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


def upward_imports(edges, files) -> list[str]:
    """Each import of a higher layer, as ``file:line: a (layer) imports b (layer)``."""
    found = []
    for name, targets in edges.items():
        for target, line in targets:
            if layer_of(target) > layer_of(name):
                found.append(
                    f"{files[name].relative_to(ROOT)}:{line}: {name} ({LAYERS[layer_of(name)][0]})"
                    f" imports {target} ({LAYERS[layer_of(target)][0]})"
                )
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


def test_no_module_imports_a_higher_layer():
    files = module_files()
    found = upward_imports(graph(files), files)
    assert not found, "imports of a higher layer:\n" + "\n".join(found)


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
    assert upward_imports(edges, files) == [
        "planted.py:2: veritas_dsl.ir.query (query IR and its meaning) imports veritas_dsl.run "
        "(running queries)"
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
