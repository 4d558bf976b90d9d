"""A line holding only an id and a vector (what a bulk run reads by the million) is parsed
without pydantic's validation, by checks of its own: for any line, the query (its fields, the
fields set, its line number) or the dead letter is the one the full validation gives."""

from __future__ import annotations

import json
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.run.query_parse import parse_query_line, parsed_in_full, plain_vector_query
from stages.models import DeadLetter, Query

COMPONENTS = st.one_of(
    st.floats(width=32, allow_nan=False, allow_infinity=False),
    st.floats(), st.integers(), st.booleans(), st.none(), st.text(max_size=3),
    st.sampled_from([0.0, -0.0, 1e-46, 1e38, 3.5e38, 2.0**63, -(2.0**63), 10**30, 1e300]),
)
IDS = st.one_of(st.text(max_size=6), st.integers(), st.none(), st.sampled_from(["", "q\ud800"]))
SHAPES = st.one_of(
    st.builds(lambda i, v: {"id": i, "vector": v}, IDS, st.lists(COMPONENTS, max_size=6)),
    st.builds(lambda i, v: {"id": i, "vector": v}, IDS,
              st.lists(st.floats(-1, 1), min_size=1, max_size=6)),
    st.builds(lambda i, v, k: {"id": i, "vector": v, k: 1}, IDS,
              st.lists(st.floats(-1, 1), min_size=1, max_size=3),
              st.sampled_from(["text", "filters", "x"])),
    st.builds(lambda i, v: {"vector": v, "id": i}, IDS, st.just([0.5, 0.25])),
    st.builds(lambda v: {"id": "q", "vector": v}, st.just("not a list")),
)


def _line(value: object, kind: int) -> bytes:
    if kind == 0:
        return json.dumps(value).encode()
    if kind == 1:
        return json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")
    return json.dumps(value, indent=1).encode() + b"\r"


def _same(fast: Query | DeadLetter, full: Query | DeadLetter) -> None:
    assert type(fast) is type(full)
    if isinstance(fast, DeadLetter):
        assert fast == full
        return
    assert isinstance(full, Query)
    assert fast.model_dump() == full.model_dump()
    assert fast.model_fields_set == full.model_fields_set
    assert fast.line_number == full.line_number
    assert fast == full
    assert [type(c) for c in fast.vector or ()] == [type(c) for c in full.vector or ()]


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SHAPES, st.integers(0, 2))
def test_an_id_and_vector_line_parses_as_the_full_validation_parses_it(
        value: dict[str, object], kind: int) -> None:
    line = _line(value, kind)
    fast = plain_vector_query(4, line)
    _same(parse_query_line(4, line), parsed_in_full(4, line))
    if fast is not None:
        _same(fast, parsed_in_full(4, line))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SHAPES)
def test_a_parquet_row_of_an_id_and_a_vector_parses_as_the_full_validation_parses_it(
        row: dict[str, object]) -> None:
    fast = plain_vector_query(5, dict(row))
    _same(parse_query_line(5, dict(row)), parsed_in_full(5, dict(row)))
    if fast is not None:
        _same(fast, parsed_in_full(5, dict(row)))


def test_a_plain_vector_line_becomes_the_query_validation_gives() -> None:
    line = json.dumps({"id": "q1", "vector": [0.5, -1, 2.5e-3]}).encode()
    assert plain_vector_query(7, line) is not None  # read by the checks, not validation
    fast = parse_query_line(7, line)
    assert isinstance(fast, Query)
    assert fast.vector == (0.5, -1.0, 2.5e-3) and type(fast.vector[1]) is float
    assert fast.filters == {} and fast.text is None and fast.line_number == 7
    _same(fast, parsed_in_full(7, line))


def test_lines_the_checks_refuse_get_the_full_validations_dead_letter() -> None:
    for vector in ([], [0.0, 0.0], [1e39], [True, 0.5], ["0.5"], [math.inf]):
        line = json.dumps({"id": "q", "vector": vector}).encode()
        letter = parse_query_line(2, line)
        assert isinstance(letter, DeadLetter) and letter.error, vector
        assert letter == parsed_in_full(2, line)
