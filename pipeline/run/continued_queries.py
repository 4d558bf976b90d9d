"""Which of the queries a continued run parsed (those whose record changed since PREV, or that
PREV has no state for: see `shard_continuation`) it continues from PREV's state: those whose
fingerprint is unchanged. Joined by query id, the Beam way: as few as the queries that
changed."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import apache_beam as beam
from apache_beam import pvalue

from stages.candidate_state import query_fingerprint
from stages.embed import needs_embedding
from stages.models import Continuation, EmbeddedQuery, Query, QueryState, RawResult
from stages.support import counters

FULL = "full"
"""The tag of the queries answered in full (`Query`)."""
COMPARE = "compare"
"""The tag of the previous results that a new result is compared with (`RawResult`)."""
GONE = "gone"
"""The tag of PREV's query ids that this run has no query for (`str`)."""


def triaged(joined: tuple[str, Mapping[str, Iterable[Any]]], gone: bool = True
            ) -> Iterator[Continuation | pvalue.TaggedOutput]:
    """One id's query and PREV's (state or None, previous result) -> the query continued, or
    to `FULL`, counted by why: new (no state or no previous result), or changed since; the
    previous result of a query answered in full to `COMPARE`; an id whose query tonight is
    no query (a dead letter) to `GONE`, unless not `gone` (another step tells them)."""
    query_id, sides = joined
    queries = list(sides["query"])
    kept = list(sides["previous"])
    states = [state for state, _ in kept]
    previous = [result for _, result in kept]
    if not queries and previous and gone:
        counters.count(counters.PREVIOUS_GONE)
        yield pvalue.TaggedOutput(GONE, query_id)
    for query in queries:
        state = states[0] if len(states) == 1 else None
        if state is None:
            counters.count(counters.FULL_NEW_QUERY)
        elif state.fingerprint != query_fingerprint(query) or (
                needs_embedding(query) and state.text_vector is None):
            counters.count(counters.FULL_QUERY_CHANGED)
        else:
            yield Continuation(EmbeddedQuery(query, state.text_vector), state, previous[0])
            continue
        yield pvalue.TaggedOutput(FULL, query)
        yield from (pvalue.TaggedOutput(COMPARE, result) for result in previous)


class SplitContinued(beam.PTransform[beam.PCollection[Query], pvalue.DoOutputsTuple]):
    """Query -> Continuation (main `continued`) and Query (tag `full`), given PREV's
    `previous` (id, (state or None, result raw)) of these queries' ids; also the previous
    results of the queries answered in full (tag `compare`) and the ids whose query is a dead
    letter (tag `gone`).

    Usage::

        split = queries | SplitContinued(previous)
        split.continued, split.full, split.compare, split.gone
    """

    def __init__(self, previous: beam.PCollection[tuple[str, tuple[QueryState | None,
                                                                    RawResult]]],
                 gone: bool = True) -> None:
        super().__init__()
        self._previous, self._gone = previous, gone

    def expand(self, queries: beam.PCollection[Query]) -> pvalue.DoOutputsTuple:
        keyed: dict[str, Any] = {
            "query": queries | "KeyQueries" >> beam.Map(lambda q: (q.id, q)),
            "previous": self._previous}
        return (keyed
                | "JoinByQueryId" >> beam.CoGroupByKey()
                | "Triage" >> beam.FlatMap(triaged, self._gone).with_outputs(FULL, COMPARE, GONE,
                                                                 main="continued"))


def counted_in_full(query: Query, counter: str) -> Query:
    """`query`, counted as answered in full for a reason of the whole run."""
    counters.count(counter)
    return query
