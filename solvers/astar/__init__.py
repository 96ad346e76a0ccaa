"""The anytime A* engine (VERITAS search) compiled with Numba."""
