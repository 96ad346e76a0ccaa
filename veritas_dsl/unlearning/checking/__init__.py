"""The checker's part for unlearning (the language layer): models derived by ``delete`` and
``retrain``, and families of forests (``deletions``, ``worst_case``)."""
