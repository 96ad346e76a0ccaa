"""The grammar of the .ver language."""
