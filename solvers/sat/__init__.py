"""The exact SAT engine (PySAT, CaDiCaL 1.9.5 with an exact propagator for sums of leaf values)."""
