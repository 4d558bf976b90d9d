"""The fast JSON path (orjson) reads every line exactly as the standard parser does."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.input_limits import loads

_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10**30, 10**30),
                     st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=20))
_VALUES = st.recursive(_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=8), inner, max_size=5)),
    max_leaves=30)


def _typed(value: object) -> object:
    """`value` with each number's type kept, so that 1 and 1.0 differ."""
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    return (type(value).__name__, value)


@settings(max_examples=300, deadline=None)
@given(value=_VALUES)
def test_loads_equals_the_standard_parser_types_included(value: object) -> None:
    text = json.dumps(value)
    assert _typed(loads(text)) == _typed(json.loads(text))


def test_what_orjson_refuses_or_reads_otherwise_is_read_as_before() -> None:
    for text in ['{"a": NaN}', '{"a": 1e400}', '{"a": "\\ud800"}',
                 '{"a": 123456789012345678901234567890}', '{"a": -9223372036854775809}']:
        assert repr(_typed(loads(text))) == repr(_typed(json.loads(text)))


@pytest.mark.parametrize("text", ['{"v": [1, 12345678901234567890]}',
                                  '{"f": {"n": -12345678901234567890}}',
                                  '[[1.5, "x", 99999999999999999999]]'])
def test_whole_numbers_beyond_64_bits_stay_whole(text: str) -> None:
    assert repr(_typed(loads(text))) == repr(_typed(json.loads(text)))
