"""The names a spec gives formats, engines and built-ins: the one table that the checker, the
model and data loaders, the engine registry and the editor (completion, hover, the Pygments lexer)
read, and that the VS Code grammar is tested against (tests/editor/test_highlight.py,
tests/test_names.py). A new format, engine or built-in adds its name here first."""

#: Model file formats (``model m = xgboost "m.json"``); ``veritas_dsl.model.load`` reads them.
MODEL_FORMATS = (
    "xgboost", "xgboost_dump", "lightgbm", "sklearn", "catboost", "onnx", "ensemble", "dare",
)  # fmt: skip
#: Data file formats (``data d = csv "d.csv"``).
DATA_FORMATS = ("csv", "libsvm")
#: Engines (``solve with astar``); ``veritas_dsl.solvers.registry`` holds one of each.
ENGINES = ("oracle", "astar", "milp", "gurobi", "sat")
#: Functions of conditions and objectives: ``class(m, x)``, ``vote(m, x)``, distances, changes.
FUNCTIONS = ("class", "vote", "linf", "l1", "changed")
#: What a distance's scale may be computed as (``scale = mad(train)``).
STATISTICS = ("mad", "std")
#: The least or largest of several terms, as a whole objective.
WORST_OF = ("min", "max")
#: Models derived from a DaRE forest: a deletion, a refit, the certified bounds.
DERIVATIONS = ("delete", "retrain", "worst_case", "best_case")
#: Certified bounds among the derivations.
CERTIFICATES = ("worst_case", "best_case")
#: Families of forests (``models V = deletions(before, ...)``).
FAMILIES = ("deletions",)
#: What an ``expect`` looks at.
EXPECT_SUBJECTS = ("upper", "lower", "found", "none")

#: Every name called like a function.
BUILTINS = FUNCTIONS + STATISTICS + WORST_OF + DERIVATIONS + FAMILIES
#: Every other name with a fixed meaning.
CONSTANTS = MODEL_FORMATS + DATA_FORMATS + ENGINES + EXPECT_SUBJECTS + ("inf",)
