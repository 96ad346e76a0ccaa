"""The .ver language: parser, syntax tree, checks, and the typed spec they produce."""
