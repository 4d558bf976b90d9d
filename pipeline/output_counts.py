"""The run's counts read from its files, for runners that report no metrics."""

from __future__ import annotations

from pipeline.query_sources import count_records
from stages import counters


def output_counts(queries_path: str, out_path: str | None, dead_letter_path: str
                  ) -> dict[str, int]:
    """queries, results and dead letters as the files hold them; `out_path` None (results
    went to Elasticsearch) counts results as the queries that were not dead letters."""
    queries = count_records(queries_path)
    dead = count_records(dead_letter_path)
    results = count_records(out_path) if out_path is not None else queries - dead
    return {counters.QUERIES: queries, counters.RESULTS: results, counters.DEAD_LETTERS: dead}
