"""veritas-dsl: prove properties of tree ensembles, or find concrete counterexamples.

The data flows one way: ``.ver`` text, syntax tree, typed AST, query IR (:mod:`veritas_dsl.ir`),
an engine (:mod:`veritas_dsl.solvers`), a :class:`Result`, a report. The model layer
(:class:`Ensemble`) turns XGBoost, scikit-learn, LightGBM, CatBoost and ONNX models, and DaRE
forests (:mod:`veritas_dsl.unlearning`), into flat arrays.

The public names load on first use (:mod:`veritas_dsl.exports`): ``import veritas_dsl``, and the
pytest plugin that every pytest session of a user loads, import nothing heavy; a spec imports the
engines, Numba and the model libraries it needs when it needs them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from veritas_dsl.exports import lazy_exports

if TYPE_CHECKING:  # the public names: type checkers read them here, and so does lazy_exports
    from veritas_dsl.builder import SpecBuilder
    from veritas_dsl.diagnostics import Diagnostic, SpecError
    from veritas_dsl.model import Ensemble, ModelError, load_model
    from veritas_dsl.outcome import Check, Interrupted, QueryRun, Verdict
    from veritas_dsl.result import Result, Solution, Termination, TracePoint, Witness
    from veritas_dsl.spec import Spec, load, parse

__all__ = [
    "Check",
    "Diagnostic",
    "Ensemble",
    "Interrupted",
    "ModelError",
    "QueryRun",
    "Result",
    "Solution",
    "Spec",
    "SpecBuilder",
    "SpecError",
    "Termination",
    "TracePoint",
    "Verdict",
    "Witness",
    "load",
    "load_model",
    "parse",
]

lazy_exports(__name__)
__version__ = "0.1.0"
