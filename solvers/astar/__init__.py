"""The anytime A* engine (VERITAS search) compiled with Numba.

What it answers and whether it can run here are declared in this light module, which the registry
reads without importing Numba or the engine (:mod:`.engine`).
"""

from veritas_dsl.solvers.base import Availability, Capabilities

CAPABILITIES = Capabilities(
    # Not hard_vote: a count of trees per label has no admissible per-tree heuristic yet. l2
    # as a distance to a row to minimise; not as a ball or between two instances.
    constructs=frozenset(
        {
            "two_instances", "several_models", "multiclass", "int_domain", "bool_domain",
            "tie", "one_hot", "changed", "linf", "l1", "l2", "weighted_distance", "linear",
            "output_constraint", "disjunction", "maximize", "minimize", "worst_of",
            "minimize_distance", "find", "prove",
        }
    ),
    limits=frozenset({"timeout", "steps", "memory", "solutions"}),
    lazy=False,  # its searches switch output constraints on themselves (BranchSearch)
    ranks=True,  # the N best: the search cuts below the Nth best (nbest.py)
)


def available() -> Availability:
    """Whether Numba imports."""
    try:
        import numba  # noqa: F401
    except ImportError:
        return Availability.NOT_INSTALLED
    return Availability.AVAILABLE
