"""Which queries a run continues from PREV's state: those whose state and previous result
stand and whose fingerprint is unchanged. Joined by query id, the Beam way (PREV's state and
results are never held in memory)."""

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


def triaged(joined: tuple[str, Mapping[str, Iterable[Any]]]
            ) -> Iterator[Continuation | pvalue.TaggedOutput]:
    """One id's query, state and previous result -> the query continued, or to `FULL`,
    counted by why: new (no state or no previous result), or changed since; the previous
    result of a query answered in full to `COMPARE`; an id only PREV has to `GONE`."""
    query_id, sides = joined
    queries = list(sides["query"])
    states, previous = list(sides["state"]), list(sides["previous"])
    if not queries and previous:
        counters.count(counters.PREVIOUS_GONE)
        yield pvalue.TaggedOutput(GONE, query_id)
    for query in queries:
        state = states[0] if len(states) == 1 and len(previous) == 1 else None
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
    """Query -> Continuation (main `continued`) and Query (tag `full`), given PREV's `states`
    and `previous` results (raw, keyed by query id); also the previous results of the queries
    answered in full (tag `compare`) and PREV's ids with no query (tag `gone`).

    Usage::

        split = queries | SplitContinued(states, previous_results)
        split.continued, split.full, split.compare, split.gone
    """

    def __init__(self, states: beam.PCollection[QueryState],
                 previous: beam.PCollection[tuple[str, RawResult]]) -> None:
        super().__init__()
        self._states, self._previous = states, previous

    def expand(self, queries: beam.PCollection[Query]) -> pvalue.DoOutputsTuple:
        keyed: dict[str, Any] = {
            "query": queries | "KeyQueries" >> beam.Map(lambda q: (q.id, q)),
            "state": self._states | "KeyStates" >> beam.Map(lambda s: (s.query_id, s)),
            "previous": self._previous}
        return (keyed
                | "JoinByQueryId" >> beam.CoGroupByKey()
                | "Triage" >> beam.FlatMap(triaged).with_outputs(FULL, COMPARE, GONE,
                                                                 main="continued"))


def counted_in_full(query: Query, counter: str) -> Query:
    """`query`, counted as answered in full for a reason of the whole run."""
    counters.count(counter)
    return query
