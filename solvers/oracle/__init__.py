"""The brute-force oracle."""
