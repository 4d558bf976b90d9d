"""Parameter types that carry their own bounds, checked the same way wherever they come from.

A `Bound` is declared once, on the field of the type that carries it. Pydantic reads it as a
constraint when settings are validated (errors at the exact key, in plain words), and
`check_bounds` applies it when code builds the type directly, raising `OutOfBoundsError`
naming the setting. Parameter types are frozen dataclasses whose `__pydantic_config__` makes
settings spell them in kebab-case with no unknown key.

>>> @dataclass(frozen=True)
... class Budget:
...     items: Annotated[Whole, Bound("projection.items", ge=1)] = 5
...     def __post_init__(self) -> None:
...         check_bounds(self)
>>> Budget(0)
Traceback (most recent call last):
...
core.params.OutOfBoundsError: config projection.items=0: must be at least 1
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing
from collections.abc import Hashable, Iterator
from dataclasses import dataclass
from typing import Annotated, Any

import annotated_types
from pydantic import AfterValidator, BeforeValidator, ConfigDict

from core.errors import ConfigError


def kebab(name: str) -> str:
    return name.replace("_", "-")


PARAMS_CONFIG = ConfigDict(extra="forbid", alias_generator=kebab)
"""How settings spell a parameter type: kebab-case keys, none unknown."""


class OutOfBoundsError(ConfigError, ValueError):
    """A parameter outside its bounds (a ValueError too, as any bad argument)."""


@dataclass(frozen=True)
class Bound:
    """The bounds of one setting, named by its key (`rag.return-n`)."""

    __is_annotated_types_grouped_metadata__ = True

    key: str
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    min_length: int | None = None

    def __iter__(self) -> Iterator[Any]:
        if self.ge is not None:
            yield annotated_types.Ge(self.ge)
        if self.gt is not None:
            yield annotated_types.Gt(self.gt)
        if self.le is not None:
            yield annotated_types.Le(self.le)
        if self.min_length is not None:
            yield annotated_types.MinLen(self.min_length)

    def check(self, value: Any) -> Any:
        """`value`, when it is within the bounds; raises OutOfBoundsError otherwise."""
        if value is None:
            return value
        problem = self._problem(value)
        if problem:
            raise OutOfBoundsError(self.key, value, problem)
        return value

    def _problem(self, value: Any) -> str | None:
        if self.min_length is not None and len(value) < self.min_length:
            return f"must hold at least {self.min_length} characters"
        if not isinstance(value, int | float):
            return None  # a word a field also takes (`auto`): the bounds are on its numbers
        if self.ge is not None and value < self.ge:
            return f"must be at least {_number(self.ge)}"
        if self.gt is not None and value <= self.gt:
            return f"must be more than {_number(self.gt)}"
        if self.le is not None and value > self.le:
            return f"must be at most {_number(self.le)}"
        return None


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _not_a_boolean(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("must be a number, not true or false")
    return value


def _finite(value: float) -> float:
    if not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value


Whole = Annotated[int, BeforeValidator(_not_a_boolean)]
"""A whole number; `true` is none."""
Real = Annotated[float, BeforeValidator(_not_a_boolean), AfterValidator(_finite)]
"""A finite number; `true` is none."""


def check_bounds(params: Any) -> None:
    """Checks every `Bound` on the fields of the dataclass instance `params`."""
    for name, bound in _bounds(typing.cast(Hashable, type(params))):
        bound.check(getattr(params, name))


@functools.cache
def _bounds(cls: Any) -> tuple[tuple[str, Bound], ...]:
    hints = typing.get_type_hints(cls, include_extras=True)
    found = []
    for field in dataclasses.fields(cls):
        for meta in _metadata(hints[field.name]):
            if isinstance(meta, Bound):
                found.append((field.name, meta))
    return tuple(found)


def _metadata(hint: Any) -> Iterator[Any]:
    """The Annotated metadata of `hint`, also inside `X | None`."""
    if typing.get_origin(hint) is Annotated:
        yield from hint.__metadata__
        yield from _metadata(typing.get_args(hint)[0])
    elif typing.get_origin(hint) in (typing.Union, types.UnionType):
        for arg in typing.get_args(hint):
            yield from _metadata(arg)


_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}


def seconds_of(value: Any) -> Any:
    """A duration in seconds: a number of seconds, or a text `N` + `s`, `m` or `h` (`90m`,
    `1.5h`); anything else is left for the number check to refuse."""
    _not_a_boolean(value)
    if isinstance(value, str):
        text = value.strip().lower()
        unit = _UNITS.get(text[-1:]) if text else None
        number = text[:-1] if unit else text
        try:
            return float(number) * (unit or 1.0)
        except ValueError:
            raise ValueError("must be a duration: seconds, or a number with s, m or h "
                             "(90m, 2h)") from None
    return value


def _positive(value: float) -> float:
    if not value > 0:
        raise ValueError("must be more than 0")
    return value


Duration = Annotated[float, BeforeValidator(seconds_of), AfterValidator(_finite),
                     AfterValidator(_positive)]
"""A positive finite duration in seconds, written as seconds or with s, m or h."""
