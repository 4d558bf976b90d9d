"""The `Vector` type's numpy path for plain JSON numbers agrees with pydantic's strict path."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from core.input_limits import FLOAT32_MAX, Component, Vector, check_vector

_FAST = TypeAdapter(Vector)
_REFERENCE = TypeAdapter(tuple[Component, ...])

_COMPONENTS = st.one_of(
    st.floats(), st.integers(-10**25, 10**25), st.booleans(), st.none(),
    st.sampled_from(["1.5", "", 0.0, 1.0, 1, 0, -0.0, 3.5e38, 1e-46]),
    st.lists(st.floats(), max_size=2))


def _reference(value: Any) -> tuple[float, ...] | str:
    try:
        vector = _REFERENCE.validate_python(value)
        check_vector(vector)
    except (ValidationError, ValueError) as error:
        return type(error).__name__
    return vector


def _fast(value: Any) -> tuple[float, ...] | str:
    try:
        return _FAST.validate_python(value)
    except ValidationError:
        return "ValidationError"


def _typed(vector: tuple[float, ...] | str) -> object:
    return vector if isinstance(vector, str) else [(type(x), x) for x in vector]


@settings(max_examples=400, deadline=None)
@given(value=st.lists(_COMPONENTS, max_size=6))
def test_the_fast_path_accepts_refuses_and_converts_as_the_strict_path_does(value: list[Any]
                                                                           ) -> None:
    expected = _reference(value)
    if isinstance(expected, str):  # a refusal: a ValueError in a validator is a ValidationError
        assert _fast(value) == "ValidationError"
    else:
        assert _typed(_fast(value)) == _typed(expected)


@pytest.mark.parametrize(("value", "field"), [
    ([1.0, True], "1"), (["1.5", 2.0], "0"), ([[1.0], 2.0], "0")])
def test_a_component_that_is_no_number_is_named(value: list[Any], field: str) -> None:
    with pytest.raises(ValidationError) as raised:
        _FAST.validate_python(value)
    assert raised.value.errors()[0]["loc"] == (int(field),)


def test_whole_numbers_become_floats() -> None:
    assert _typed(_FAST.validate_python([1, 2.5])) == [(float, 1.0), (float, 2.5)]


@settings(max_examples=400, deadline=None)
@given(value=st.lists(st.one_of(
    st.floats(), st.sampled_from([2.0**-150, 2.0**-149, -(2.0**-150), 3.4028235e38,
                                  3.4028236e38, 3.4028235677973366e38, 3.402823669e38])),
    min_size=1, max_size=5))
def test_a_vector_is_refused_exactly_when_numpy_finds_it_unusable_in_float32(
        value: list[float]) -> None:
    as_float64 = np.asarray(value, dtype=np.float64)
    with np.errstate(over="ignore"):
        unusable = not (np.isfinite(as_float64).all()
                        and np.abs(as_float64).max() <= FLOAT32_MAX
                        and as_float64.astype(np.float32).any())
    try:
        check_vector(value)
    except ValueError:
        assert unusable
    else:
        assert not unusable
