"""A result encoded once for every sink that writes it, and never a stale line."""

from __future__ import annotations

import threading
from typing import ClassVar

from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.io.json_lines import (
    known_json_line,
    read_json_line,
    shared_json_line,
    to_json_line,
)
from stages.models import QueryResult, RetrieverHit


def _result(query_id: str) -> QueryResult:
    return QueryResult(query_id=query_id, evidence=(), projected=())


class _Counted(QueryResult):
    calls: ClassVar[int] = 0

    def model_dump_json(self, **kwargs: object) -> str:  # type: ignore[override]
        type(self).calls += 1
        return super().model_dump_json(**kwargs)  # type: ignore[arg-type]


def test_the_same_record_is_encoded_once() -> None:
    record = _Counted(query_id="q1", evidence=(), projected=())
    before = _Counted.calls
    lines = {shared_json_line(record) for _ in range(3)}
    assert lines == {to_json_line(_result("q1"))}
    assert _Counted.calls - before == 1


@given(st.lists(st.sampled_from(["a", "b", "é", "\ud800"]), min_size=1, max_size=8))
def test_each_record_gets_its_own_line(ids: list[str]) -> None:
    # equal records that are other objects, records that alternate: never another's line
    for query_id in ids:
        record = _result(query_id)
        assert shared_json_line(record) == to_json_line(record)
        assert shared_json_line(_result(query_id)) == to_json_line(record)


def test_threads_do_not_share_the_last_line() -> None:
    seen: dict[str, str] = {}

    def encode(query_id: str) -> None:
        for _ in range(200):
            record = _result(query_id)
            if shared_json_line(record) != to_json_line(record):
                seen[query_id] = "stale"
        seen.setdefault(query_id, "ok")

    threads = [threading.Thread(target=encode, args=(f"q{n}",)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == {f"q{n}": "ok" for n in range(4)}


_TEXT = st.text(max_size=12) | st.sampled_from(["\ud800", "a\udfffb", "é\udc80"])  # lone surrogates
_SCORE = st.floats(allow_nan=False, allow_infinity=False, width=64)


@st.composite
def _results(draw: st.DrawFn) -> QueryResult:
    blocks = draw(st.lists(st.fixed_dictionaries({
        "evidence_key": _TEXT, "doc_id": st.none() | _TEXT,
        "chunk_index": st.none() | st.integers(0, 2**40), "source": _TEXT,
        "content": _TEXT, "score": _SCORE,
        "hit_reasons": st.lists(_TEXT, max_size=2).map(tuple),
        "retrievers": st.lists(st.tuples(_TEXT, st.integers(1, 99), _SCORE).map(
            lambda r: RetrieverHit(*r)), max_size=2).map(tuple)}), max_size=3))
    items = draw(st.lists(st.fixed_dictionaries({
        "document_id": _TEXT, "source": _TEXT, "content": _TEXT, "score": _SCORE}),
        max_size=3))
    return QueryResult.model_validate({
        "query_id": draw(_TEXT),
        "evidence": [{**block, "rank": rank} for rank, block in enumerate(blocks, start=1)],
        "projected": items})


@settings(max_examples=200, deadline=None)
@given(_results())
def test_a_result_read_from_its_line_is_written_as_that_line(result: QueryResult) -> None:
    # what `known_json_line` relies on: the sink writes a changed result as the line it was
    # read from, the line `to_json_line` gives it again
    line = to_json_line(result)
    again = read_json_line(QueryResult, line.encode("utf-8"))
    assert again == result
    assert to_json_line(again) == line
    assert shared_json_line(known_json_line(again, line)) == line
