"""The engines: brute-force oracle (and later A*, MILP, SAT)."""
