"""The exact SAT engine (PySAT, CaDiCaL 1.9.5 with an exact propagator for sums of leaf values).

What it answers and whether it can run here are declared in this light module, which the registry
reads without importing PySAT or the engine (:mod:`.engine`).
"""

from veritas_dsl.solvers.base import Availability, Capabilities

#: What the SAT engine answers exactly. Refused: ``l1`` (a sum of real distances) and
#: ``linear`` (real-valued linear constraints over inputs): their exact float32 semantics has
#: no finite encoding on the threshold grid; the MILP engine and the oracle take them. ``l2``
#: (a sum of squares) is not listed either; the oracle takes it.
SUPPORTED = frozenset(
    {
        "two_instances", "several_models", "multiclass", "int_domain", "bool_domain", "tie",
        "one_hot", "changed", "linf", "weighted_distance", "output_constraint", "disjunction",
        "maximize", "minimize", "worst_of", "minimize_distance", "find", "prove", "hard_vote",
    }
)

CAPABILITIES = Capabilities(constructs=SUPPORTED)


def available() -> Availability:
    """Whether PySAT imports with the solver the engine uses (CaDiCaL 1.9.5)."""
    try:
        from pysat.solvers import Cadical195  # noqa: F401
    except ImportError:
        return Availability.NOT_INSTALLED
    return Availability.AVAILABLE
