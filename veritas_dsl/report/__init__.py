"""Reports of query runs: the terminal text and the JSON document."""
