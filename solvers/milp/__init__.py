"""The exact MILP engine: the Kantchelian et al. (2016) formulation on HiGHS, or Gurobi."""
