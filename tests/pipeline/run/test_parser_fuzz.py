"""Arbitrary bytes into the query and chunk parsers: nothing escapes, everything is accounted."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from connectors.chunk_record import ChunkRecord
from core.errors import InvalidInputError
from pipeline.ingest.sources import parse_chunk_line
from pipeline.io.json_lines import to_json_line
from pipeline.run.query_parse import parse_query_line
from stages.models import DeadLetter, Query

JSONISH = st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["id", "text", "vector", "vectors", "filters", "content", "metadata",
                         "x"]), inner, max_size=4),
    max_leaves=20)
LINES = st.one_of(
    st.binary(max_size=300),
    st.builds(lambda v: json.dumps(v).encode(), JSONISH),
    st.builds(lambda v: json.dumps(v, ensure_ascii=False).encode("utf-8", "surrogatepass"),
              JSONISH),
)


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(LINES)
def test_the_query_parser_turns_any_bytes_into_a_query_or_a_writable_dead_letter(
        line: bytes) -> None:
    parsed = parse_query_line(3, line)
    assert isinstance(parsed, Query | DeadLetter)
    if isinstance(parsed, DeadLetter):
        assert parsed.line_number == 3 and parsed.stage == "parse"
        json.loads(to_json_line(parsed))
    else:
        json.loads(parsed.model_dump_json())


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(LINES)
def test_the_chunk_parser_turns_any_bytes_into_a_record_or_an_error_naming_the_line(
        line: bytes) -> None:
    try:
        record = parse_chunk_line("chunks.jsonl", 9, line)
    except InvalidInputError as error:
        assert str(error).startswith("chunks.jsonl:9")
        return
    assert isinstance(record, ChunkRecord)
    json.loads(record.model_dump_json())
