"""The names a spec gives formats, engines, built-ins and units: the one table that the checker,
the model and data loaders, the engine registry and the editor (completion, hover, the Pygments
lexer, the generated VS Code grammar) read, and that the IR's norms and the parser's units are
tested against (tests/test_names.py, tests/editor/test_textmate.py). A new format, engine,
built-in or unit adds its name here first."""

#: Model file formats (``model m = xgboost "m.json"``); ``veritas_dsl.model.load`` reads them.
MODEL_FORMATS = (
    "xgboost", "xgboost_dump", "lightgbm", "sklearn", "catboost", "onnx", "ensemble", "dare",
)  # fmt: skip
#: Data file formats (``data d = csv "d.csv"``).
DATA_FORMATS = ("csv", "libsvm")
#: Engines (``solve with astar``); ``veritas_dsl.solvers.registry`` holds one of each.
ENGINES = ("oracle", "astar", "milp", "gurobi", "sat")
#: Distances between instances (``linf(x, r)``); each is also the IR's norm and construct name.
NORMS = ("linf", "l1", "l2")
#: Functions that take a per-feature ``scale``: the distances and the count of changed features.
SCALED = (*NORMS, "changed")
#: Functions of conditions and objectives: ``class(m, x)``, ``vote(m, x)``, ``proba(m, x)`` (a
#: binary model's probability of class 1), distances, changes.
FUNCTIONS = ("class", "vote", "proba", *SCALED)
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
#: Units of a duration (``timeout = 10s``), in seconds.
DURATION_UNITS = {"ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0}
#: Units of a size (``memory = 2GB``), in bytes.
SIZE_UNITS = {
    "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30,
}  # fmt: skip
#: Units of a share (``gap = 1%``), as a fraction.
SHARE_UNITS = {"%": 0.01}
#: What an ``expect`` looks at.
EXPECT_SUBJECTS = ("upper", "lower", "found", "none")

#: Every name called like a function.
BUILTINS = FUNCTIONS + STATISTICS + WORST_OF + DERIVATIONS + FAMILIES
#: Every other name with a fixed meaning.
CONSTANTS = MODEL_FORMATS + DATA_FORMATS + ENGINES + EXPECT_SUBJECTS + ("inf",)
