"""A result encoded once for every sink that writes it, and never a stale line."""

from __future__ import annotations

import threading
from typing import ClassVar

from hypothesis import given
from hypothesis import strategies as st

from pipeline.io.json_lines import shared_json_line, to_json_line
from stages.models import QueryResult


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
