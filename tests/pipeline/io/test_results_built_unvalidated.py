"""A query's result is built from its candidates without pydantic's validation, and written by
orjson from its fields: for any candidates, it is the record validation gives from the same
values, and its line is the one pydantic writes."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.io.json_lines import to_json_line
from stages.models import Candidate, QueryCandidates, QueryResult, RetrieverHit
from stages.projection import ProjectionBudget, assemble_result

TEXT = st.text(max_size=8)
CANDIDATES = st.builds(
    Candidate,
    evidence_key=TEXT, doc_id=st.none() | TEXT, chunk_index=st.none() | st.integers(0, 9),
    source=TEXT, content=st.text(max_size=30),
    score=st.floats(allow_nan=False, allow_infinity=False) | st.integers(-5, 5),
    hit_reasons=st.lists(TEXT, max_size=3).map(tuple) | st.lists(TEXT, max_size=2),
    recall_order=st.integers(0, 50),
    retrievers=st.lists(st.builds(RetrieverHit, TEXT, st.integers(1, 9),
                                  st.floats(allow_nan=False)), max_size=2).map(tuple))


@settings(max_examples=300, deadline=None)
@given(st.lists(CANDIDATES, max_size=8), st.integers(1, 6), st.integers(1, 60),
       st.integers(1, 20))
def test_a_result_built_from_candidates_is_the_one_validation_gives(
        candidates: list[Candidate], items: int, chars: int, per_item: int) -> None:
    budget = ProjectionBudget(max_items=items, max_chars=chars, max_chars_per_item=per_item)
    built = assemble_result(QueryCandidates("q", tuple(candidates)), budget)
    validated = QueryResult.model_validate(built.model_dump())
    assert built == validated
    assert built.model_dump_json() == validated.model_dump_json()
    assert built.model_fields_set == validated.model_fields_set
    for block, checked in zip((*built.evidence, *built.projected),
                              (*validated.evidence, *validated.projected), strict=True):
        assert block.model_fields_set == checked.model_fields_set
        assert [type(v) for v in block.__dict__.values()] == [
            type(v) for v in checked.__dict__.values()]


@settings(max_examples=300, deadline=None)
@given(st.lists(CANDIDATES, max_size=6), st.sampled_from(["q", "q\u2028é😀", 'q"\\\x00']))
def test_a_result_is_written_as_pydantic_writes_it(candidates: list[Candidate],
                                                    query_id: str) -> None:
    built = assemble_result(QueryCandidates(query_id, tuple(candidates)), ProjectionBudget())
    validated = QueryResult.model_validate(built.model_dump())
    assert to_json_line(built) == validated.model_dump_json() == to_json_line(validated)


def test_a_result_with_a_lone_surrogate_is_written_escaped_as_before() -> None:
    result = assemble_result(QueryCandidates("q\ud800", ()), ProjectionBudget())
    line = to_json_line(result)
    assert line == json.dumps(result.model_dump(), ensure_ascii=True)
    assert "\\ud800" in line
