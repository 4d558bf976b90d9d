"""The texts of a run's queries, read on the driver: what an index that analyses texts itself
is asked the BM25 statistics of, before a lexical or hybrid night that keeps or continues
state (see `Backend.lexical_statistics`)."""

from __future__ import annotations

from collections.abc import Iterator

from pipeline.io.query_source import QuerySource
from pipeline.run.query_parse import parse_query_line
from stages.models import Query


def standing_texts(queries: QuerySource) -> Iterator[str]:
    """The text of each valid query of `queries` that has one (a BM25 sub-query's), in file
    order; a line that does not parse is passed over (the run dead-letters it)."""
    for number, record in queries.records():
        query = parse_query_line(number, record)
        if isinstance(query, Query) and query.text is not None and query.text.strip():
            yield query.text
