"""veritas-dsl."""
