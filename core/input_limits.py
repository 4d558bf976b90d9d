"""The limits every input parser enforces (query lines, chunk lines), in one place.

A line past a limit is an error naming the limit, never a crash: JSON nested deeper than
`MAX_NESTING`, a whole number of more than `MAX_NUMBER_DIGITS` digits (a longer decimal is read
as a float, and then must be within float32), a line longer than
`MAX_LINE_CHARS`, a vector longer than `MAX_VECTOR_LENGTH`, a component outside float32, text
that is not valid Unicode (a lone surrogate, or a byte that is not UTF-8).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Annotated, Any

import numpy as np
import orjson
from pydantic import Strict, ValidatorFunctionWrapHandler, WrapValidator

Component = Annotated[float, Strict()]
"""A vector component: a number (whole or not), never `true` or a string of digits."""

MAX_LINE_CHARS = 16 * 1024 * 1024
MAX_LINE_BYTES = MAX_LINE_CHARS
"""Readers skip a longer line unread (never holding it whole), and it is that line's error."""
MAX_NESTING = 64
MAX_NUMBER_DIGITS = 400
MAX_VECTOR_LENGTH = 16_384
MAX_FILTER_KEYS = 64
MAX_FILTER_VALUES = 1024
"""Per query: metadata filter keys, and values in one key's list (each key may cost a scan of
the store's metadata)."""
FLOAT32_MAX = float(np.finfo(np.float32).max)
_SURROGATE = re.compile("[\ud800-\udfff]")
_OUTSIDE_INT64 = 2.0**63
"""orjson reads a whole number outside 64 bits as a float, always at least this large."""


UNREAD: Any = object()
"""What `loads` is given when nothing read the line before it."""


def loads(text: str, read: Any = UNREAD) -> Any:
    """`json.loads` within the limits above; `read`: orjson's value of `text`, when the
    caller has it already (the line is not read again).

    Raises:
        ValueError: a message naming the limit or the JSON error, for a dead letter.
    """
    if len(text) > MAX_LINE_CHARS:
        raise ValueError(f"line has {len(text)} characters; at most {MAX_LINE_CHARS} are read")
    try:
        value = _fast_loads(text) if read is UNREAD else _as_json_reads_it(read)
    except (orjson.JSONDecodeError, _NeedsStandardParser):
        value = _standard_loads(text)
    if text.count("[") + text.count("{") > MAX_NESTING:  # else it cannot nest that deep
        check_nesting(value)
    return value


class _NeedsStandardParser(Exception):
    pass


def _fast_loads(text: str) -> Any:
    """orjson (for lines of vectors; docs/benchmarks.md), where it reads a line exactly as
    `json` does; anything it refuses goes to `json`, whose errors and extensions (NaN) stay
    the contract."""
    return _as_json_reads_it(orjson.loads(text))


def _as_json_reads_it(value: Any) -> Any:
    """orjson's `value`, unless it may differ from what `json` reads (see below)."""
    if _may_hold_a_long_integer(value):
        raise _NeedsStandardParser
    return value


def _may_hold_a_long_integer(value: Any) -> bool:
    """Whether a float in `value` is so large that the line may have had a whole number that
    orjson turned into a float (a float this large is rare, and then read again by json)."""
    if isinstance(value, float):
        return abs(value) >= _OUTSIDE_INT64
    if isinstance(value, dict):
        return any(_may_hold_a_long_integer(item) for item in value.values())
    if isinstance(value, list):
        try:  # a vector: two passes in C, no object made per component
            return bool(value) and (max(value) >= _OUTSIDE_INT64 or min(value) <= -_OUTSIDE_INT64)
        except TypeError:  # not all numbers
            return any(_may_hold_a_long_integer(item) for item in value)
    return False


def _standard_loads(text: str) -> Any:
    try:
        return json.loads(text, parse_int=_int)
    except RecursionError:
        raise ValueError(f"JSON nested too deeply (at most {MAX_NESTING} levels)") from None


def check_nesting(value: Any, depth: int = 0) -> None:
    """Raises ValueError when `value` nests lists and objects deeper than MAX_NESTING."""
    if depth > MAX_NESTING:
        raise ValueError(f"JSON nested too deeply (at most {MAX_NESTING} levels)")
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for item in items:
        if isinstance(item, dict | list):
            check_nesting(item, depth + 1)


def check_filters(filters: dict[str, Any]) -> None:
    """Raises ValueError for more filter keys, or more values in one list, than the limits."""
    if len(filters) > MAX_FILTER_KEYS:
        raise ValueError(f"has {len(filters)} keys; at most {MAX_FILTER_KEYS}")
    for key, value in filters.items():
        if isinstance(value, list) and len(value) > MAX_FILTER_VALUES:
            raise ValueError(f"{key!r} lists {len(value)} values; at most {MAX_FILTER_VALUES}")


def is_valid_text(value: str) -> bool:
    """Whether UTF-8 can encode `value` (`check_text` passes it)."""
    return _SURROGATE.search(value) is None


def check_text(value: str) -> str:
    """Raises ValueError for text that UTF-8 cannot encode (a lone surrogate)."""
    if _SURROGATE.search(value):
        raise ValueError("is not valid Unicode (it holds a lone surrogate)")
    return value


def check_vector(vector: Sequence[float]) -> None:
    """Raises ValueError unless `vector` is a usable float32 vector: not empty, at most
    MAX_VECTOR_LENGTH long, every component finite in float32, and not zero in float32."""
    _check_components(np.asarray(vector, dtype=np.float64))


def _check_components(as_float64: np.ndarray) -> None:
    if not len(as_float64):
        raise ValueError("a vector must not be empty")
    if len(as_float64) > MAX_VECTOR_LENGTH:
        raise ValueError(f"has {len(as_float64)} components; at most {MAX_VECTOR_LENGTH}")
    magnitude = np.abs(as_float64).max()
    if not magnitude <= FLOAT32_MAX:  # NaN compares false too
        raise ValueError("every component must be a finite float32 number "
                         f"(no NaN or inf, magnitude at most {FLOAT32_MAX:.4g})")
    if np.float32(magnitude) == 0:  # the largest rounds to 0 only if every one does
        raise ValueError("is zero in float32 (every component rounds to 0): cosine similarity "
                         "is undefined")


def _usable_vector(value: Any, handler: ValidatorFunctionWrapHandler) -> tuple[float, ...]:
    """A `Vector`: strict numbers (`Component`), then `check_vector`. A list of floats (and
    ints), as JSON gives, is checked in one numpy pass; anything else goes through pydantic
    first, whose errors name the component."""
    kinds = set(map(type, value)) if type(value) is list else None
    if not kinds or not kinds <= _PLAIN_NUMBERS:
        vector: tuple[float, ...] = handler(value)
        check_vector(vector)
        return vector
    _check_components(np.array(value, dtype=np.float64))
    return tuple(value) if kinds == _FLOATS else tuple(map(float, value))


_FLOATS = {float}
_PLAIN_NUMBERS = {float, int}


def plain_vector(value: Any) -> tuple[float, ...] | None:
    """`value` as a `Vector` validates it, when it is a list of floats and ints (as JSON gives)
    that `check_vector` passes and no component reaches 2**63 in magnitude (a float that
    large may have been a long integer, which `loads` reads again); None for anything else,
    whose validation then names what is wrong. The checks of a valid vector, without
    pydantic's."""
    if type(value) is not list or not 0 < len(value) <= MAX_VECTOR_LENGTH:
        return None
    kinds = set(map(type, value))
    if not kinds <= _PLAIN_NUMBERS:
        return None
    try:
        magnitude = float(np.abs(np.array(value, dtype=np.float64)).max())
    except OverflowError:  # an integer beyond float64
        return None
    if not (magnitude < _OUTSIDE_INT64 and magnitude <= FLOAT32_MAX) or not np.float32(
            magnitude):
        return None
    return tuple(value) if kinds == _FLOATS else tuple(map(float, value))


Vector = Annotated[tuple[Component, ...], WrapValidator(_usable_vector)]
"""A query's or chunk's vector: validated and checked with `check_vector`."""


def _int(digits: str) -> int:
    if len(digits) > MAX_NUMBER_DIGITS:
        raise ValueError(f"a number has {len(digits)} digits; at most {MAX_NUMBER_DIGITS}")
    return int(digits)

