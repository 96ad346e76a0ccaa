"""Reports of query runs: the terminal text and tables, JSON, JSON Lines, CSV and JUnit documents,
checks, engine comparisons, the progress line, and writing output files whole."""
