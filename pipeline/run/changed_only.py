"""`run --previous PREV`: only the queries whose evidence changed reach the output.

The previous results are joined to the new ones by query id, the Beam way (a keyed join: PREV
is never held in memory), and each query is counted as unchanged, changed or new; PREV's ids
that this run did not answer are `gone`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from decimal import Decimal
from typing import Any, NamedTuple

import apache_beam as beam
from apache_beam import pvalue

from pipeline.io.json_lines import known_json_line, loads_json_line, read_json_line
from stages.models import ProjectedItem, QueryResult
from stages.support import counters

GONE = "gone"
SCORE_TOLERANCE = Decimal("0.000001")
"""Scores that differ by at most this much, as written in decimal, are the same."""
_SURELY_SAME, _SURELY_MOVED = 0.99e-6, 1.01e-6


def same_evidence(new: QueryResult, old: QueryResult) -> bool:
    """Whether the Agent sees the same list: document ids, order and content, and scores
    within SCORE_TOLERANCE (see `same_score`)."""
    return len(new.projected) == len(old.projected) and all(
        _same(a, b) for a, b in zip(new.projected, old.projected, strict=True))


def same_score(a: float, b: float) -> bool:
    """Whether `a` and `b` differ by at most SCORE_TOLERANCE as written: each as its shortest
    decimal form (what a JSON result file holds), so that 0.123457 against 0.123456 is the same
    though their binary difference is a hair over 1e-6. Only gaps near the bound are compared
    in decimal."""
    gap = abs(a - b)
    if gap < _SURELY_SAME:
        return True
    if not gap <= _SURELY_MOVED:  # NaN too
        return False
    return abs(Decimal(repr(a)) - Decimal(repr(b))) <= SCORE_TOLERANCE


def _same(a: ProjectedItem, b: ProjectedItem) -> bool:
    return ((a.document_id, a.source, a.content) == (b.document_id, b.source, b.content)
            and same_score(a.score, b.score))


def compared(joined: tuple[str, Mapping[str, Iterable[QueryResult]]]
             ) -> Iterator[QueryResult | pvalue.TaggedOutput]:
    """One query's new and previous results -> the new one when it changed or is new, its id
    to `gone` when only PREV has it; counted."""
    query_id, sides = joined
    new, old = list(sides["new"]), list(sides["old"])
    if not new:
        counters.count(counters.PREVIOUS_GONE)
        yield pvalue.TaggedOutput(GONE, query_id)
    elif not old:
        counters.count(counters.EVIDENCE_NEW)
        yield new[0]
    elif same_evidence(new[0], old[0]):
        counters.count(counters.EVIDENCE_UNCHANGED)
    else:
        counters.count(counters.EVIDENCE_CHANGED)
        yield new[0]


def counted_new(result: QueryResult) -> QueryResult:
    """`result`, counted as new (there is no previous result to compare it with)."""
    counters.count(counters.EVIDENCE_NEW)
    return result


def changed_results(new: Mapping[str, bytes], previous: Mapping[str, bytes]
                    ) -> Iterator[QueryResult]:
    """New result lines (by query id) against previous ones -> the new results whose
    evidence changed or is new, counted as `compared` counts them; the same bytes are the
    same evidence without parsing either."""
    for query_id, line in new.items():
        old = previous.get(query_id)
        if old == line:
            counters.count(counters.EVIDENCE_UNCHANGED)
        elif old is None:
            counters.count(counters.EVIDENCE_NEW)
            yield _read(line)
        elif _same_projected(loads_json_line(line)["projected"],
                             loads_json_line(old)["projected"]):
            counters.count(counters.EVIDENCE_UNCHANGED)
        else:
            counters.count(counters.EVIDENCE_CHANGED)
            yield _read(line)


def _read(line: bytes) -> QueryResult:
    """A new result from its line (written this run by `to_json_line`), which the results'
    sink then writes as it is."""
    result = read_json_line(QueryResult, line)
    known_json_line(result, line.decode("utf-8"))
    return result


def _same_projected(new: list[dict[str, Any]], old: list[dict[str, Any]]) -> bool:
    """`same_evidence` over two result lines' `projected` lists as JSON holds them (written
    by this version: the fields and their names are ours)."""
    return len(new) == len(old) and all(
        (a["document_id"], a["source"], a["content"]) == (b["document_id"], b["source"],
                                                          b["content"])
        and same_score(a["score"], b["score"]) for a, b in zip(new, old, strict=True))


class ChangedOutputs(NamedTuple):
    results: beam.PCollection[QueryResult]
    gone: beam.PCollection[str]


class KeepChanged(beam.PTransform[beam.PCollection[QueryResult], ChangedOutputs]):
    """QueryResult -> the ones whose evidence differs from `previous` (a PCollection of the
    previous run's results), and the ids only `previous` holds.

    Usage::

        changed = results | KeepChanged(previous_results)
    """

    def __init__(self, previous: beam.PCollection[QueryResult]) -> None:
        super().__init__()
        self._previous = previous

    def expand(self, results: beam.PCollection[QueryResult]) -> ChangedOutputs:
        keyed: dict[str, Any] = {
            "new": results | "KeyNew" >> beam.Map(lambda r: (r.query_id, r)),
            "old": self._previous | "KeyOld" >> beam.Map(lambda r: (r.query_id, r))}
        outputs = (keyed
                   | "JoinByQueryId" >> beam.CoGroupByKey()
                   | "Compare" >> beam.FlatMap(compared).with_outputs(GONE, main="results"))
        return ChangedOutputs(outputs.results, outputs[GONE])
