"""A package's public names, imported on first use.

``import veritas_dsl`` runs in every pytest session of anyone who has the package installed (its
plugin), and before every ``ver`` command: it must not import Numba, the engines or the model
libraries for names a caller may never touch. A package imports its public names under ``if
TYPE_CHECKING:``, where type checkers and editors read them, lists them in ``__all__``, and calls
:func:`lazy_exports`, which reads those imports from the package's source (as ``lazy_loader``'s
``attach_stub`` reads a stub) and imports each name from its module when it is first read.
"""

from __future__ import annotations

import ast
import importlib
import sys
import types
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType


class LazyModule(types.ModuleType):
    """A package whose public names (``_public``: name -> module) are imported on first read.

    The class of the package's module object (Python's documented way to customise a module's
    attributes), not a module ``__getattr__`` alone (PEP 562): the import system binds each
    submodule on its package once it has run, and where a public name is also a submodule's
    (``veritas_dsl.unlearning.leakage``, the function and its module), the public object must
    stay, as it did when the package imported it eagerly.
    """

    _public: Mapping[str, str] = MappingProxyType({})  # set on each package's module

    def __getattr__(self, name: str) -> object:
        if name not in self._public:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(self._public[name]), name)
        setattr(self, name, value)  # later reads find it without coming here
        return value

    def __setattr__(self, name: str, value: object) -> None:
        # The submodule that defines a public name of its own name, bound by the import system.
        if isinstance(value, types.ModuleType) and self._public.get(name) == value.__name__:
            value = getattr(value, name)
        super().__setattr__(name, value)

    def __dir__(self) -> list[str]:
        return sorted({*self.__dict__, *self._public})


def lazy_exports(package: str) -> None:
    """Make ``package`` a :class:`LazyModule` whose public names are those its ``__init__.py``
    imports under ``if TYPE_CHECKING:`` (absolute imports)."""
    module = sys.modules[package]
    module._public = typing_imports(Path(module.__file__).read_text(encoding="utf-8"))
    module.__class__ = LazyModule


def typing_imports(source: str) -> dict[str, str]:
    """Each name imported under a top-level ``if TYPE_CHECKING:`` of ``source``, with the module
    it comes from."""
    found = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom) and statement.module:
                    for alias in statement.names:
                        found[alias.asname or alias.name] = statement.module
    return found
