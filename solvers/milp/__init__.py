"""The exact MILP engine: the Kantchelian et al. (2016) formulation on HiGHS, or Gurobi.

What it answers and whether it can run here are declared in this light module, which the registry
reads without importing the engine (:mod:`.engine`).
"""

from __future__ import annotations

from typing import Literal

from veritas_dsl.solvers.base import Availability, Capabilities
from veritas_dsl.solvers.milp import gurobi, highs

Driver = Literal["auto", "highs", "gurobi"]

#: What the program answers. Not hard_vote: a count of trees would need one indicator per tree
#: and label; not yet. l2 as a distance to a row to minimise; not as a ball or between two
#: instances (their squares would need rows of their own, with checks and cuts as outputs have).
SUPPORTED = frozenset(
    {
        "two_instances", "several_models", "multiclass", "int_domain", "bool_domain", "tie",
        "one_hot", "changed", "linf", "l1", "l2", "weighted_distance", "linear",
        "output_constraint", "disjunction", "maximize", "minimize", "worst_of",
        "minimize_distance", "find", "prove",
    }
)


def capabilities(driver: Driver) -> Capabilities:
    """What the engine on ``driver`` answers and the limits it honours."""
    # Steps are branch-and-bound nodes; only Gurobi has a memory limit. The N best solutions
    # come from solving again with each one excluded (solvers/nogoods.py).
    limits = {"timeout", "steps", "solutions"} | ({"memory"} if driver == "gurobi" else set())
    return Capabilities(constructs=SUPPORTED, limits=frozenset(limits))


def available(driver: Driver) -> Availability:
    """Whether the engine on ``driver`` can run here: Gurobi's licence, or HiGHS installed."""
    if driver == "gurobi":
        return gurobi.licence()
    return Availability.AVAILABLE if highs.available() else Availability.NOT_INSTALLED
