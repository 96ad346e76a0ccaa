"""The words of `.ver` that highlighting and completion know, by class (``grammar/ver.lark`` and
the checker's tables are the truth; tests/editor/test_highlight.py checks the TextMate grammar
against these)."""

from __future__ import annotations

KEYWORDS = (
    "model", "models", "data", "features", "from", "const", "query", "property", "for", "in",
    "where", "input", "maximize", "minimize", "find", "forall", "expect", "solve", "with",
    "except",
)  # fmt: skip
OPERATOR_WORDS = ("and", "or", "not")
TYPES = ("real", "int", "bool", "onehot")
#: Functions of conditions and objectives, derived models, scale statistics, family extremes.
BUILTINS = (
    "class", "vote", "linf", "l1", "changed", "mad", "std", "min", "max", "delete", "retrain",
    "worst_case", "best_case", "deletions",
)  # fmt: skip
#: Model and data formats, engines, and what `expect` looks at.
CONSTANTS = (
    "xgboost_dump", "xgboost", "lightgbm", "sklearn", "ensemble", "dare", "csv", "libsvm",
    "astar", "milp", "gurobi", "sat", "oracle", "upper", "lower", "found", "none", "inf",
)  # fmt: skip
