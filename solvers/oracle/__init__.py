"""The brute-force oracle.

What it answers and whether it can run here are declared in this light module, which the registry
reads without importing the engine (:mod:`.engine`).
"""

from veritas_dsl.solvers.base import Availability, Capabilities

#: Every construct it enumerates: all of them, each added here when it is added to the IR.
CAPABILITIES = Capabilities(
    constructs=frozenset(
        {
            "two_instances", "several_models", "multiclass", "int_domain", "bool_domain",
            "tie", "one_hot", "changed", "linf", "l1", "l2", "l2_ball", "l2_pair",
            "weighted_distance", "linear",
            "output_constraint", "disjunction", "maximize", "minimize", "worst_of",
            "minimize_distance", "find", "prove", "hard_vote",
        }
    ),
    limits=frozenset({"timeout", "solutions"}),
    lazy=False,
    ranks=True,  # its combinations come best first
)


def available() -> Availability:
    """Always: plain Python and NumPy."""
    return Availability.AVAILABLE
