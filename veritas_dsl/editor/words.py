"""The words of `.ver` that highlighting and completion know, by class: the keywords of
``grammar/ver.lark`` (tests/editor/test_textmate.py checks them against it), and the names of
:mod:`veritas_dsl.names` (formats, engines, built-ins, units). The Pygments lexer, completion
and the TextMate grammar (``grammar.py``) read these."""

from __future__ import annotations

from veritas_dsl import names

KEYWORDS = (
    "model", "models", "data", "features", "from", "const", "query", "property", "for", "in",
    "where", "input", "maximize", "minimize", "find", "forall", "expect", "solve", "with",
    "except",
)  # fmt: skip
OPERATOR_WORDS = ("and", "or", "not")
TYPES = ("real", "int", "bool", "onehot")
#: Functions of conditions and objectives, scale statistics, derived models, families
#: (:data:`veritas_dsl.names.BUILTINS`).
BUILTINS = names.BUILTINS
#: Model and data formats, engines, and what `expect` looks at.
CONSTANTS = names.CONSTANTS
#: The units after a number: ``10s``, ``2GB``, ``1%``.
DURATION_UNITS = tuple(names.DURATION_UNITS)
SIZE_UNITS = tuple(names.SIZE_UNITS)
SHARE_UNITS = tuple(names.SHARE_UNITS)
