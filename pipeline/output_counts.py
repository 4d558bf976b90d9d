"""The run's counts read from its files, for runners that report no metrics."""

from __future__ import annotations

from apache_beam.io.filesystems import FileSystems

from stages import counters


def count_records(path: str) -> int:
    """Non-blank lines of a JSONL file (any Beam filesystem); 0 when it does not exist."""
    if not FileSystems.exists(path):
        return 0
    with FileSystems.open(path) as handle:
        return sum(1 for line in handle if line.strip())


def output_counts(queries_path: str, out_path: str | None, dead_letter_path: str
                  ) -> dict[str, int]:
    """queries, results and dead letters as the files hold them; `out_path` None (results
    went to Elasticsearch) counts results as the queries that were not dead letters."""
    queries = count_records(queries_path)
    dead = count_records(dead_letter_path)
    results = count_records(out_path) if out_path is not None else queries - dead
    return {counters.QUERIES: queries, counters.RESULTS: results, counters.DEAD_LETTERS: dead}
