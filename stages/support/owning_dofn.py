"""A DoFn that owns one closeable resource (a search port, a writer) for its lifetime."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

import apache_beam as beam


class Closeable(Protocol):
    def close(self) -> None: ...


R = TypeVar("R", bound=Closeable)


class OwningDoFn(beam.DoFn, Generic[R]):
    """Opens its resource with `opener` in `setup` (or on first use), closes it in
    `teardown`, and never pickles it: connections and files stay in the worker that opened
    them (elasticsearch-py #839, #2731)."""

    def __init__(self, opener: Callable[[], R]) -> None:
        self._opener = opener
        self._owned: R | None = None

    def setup(self) -> None:
        self._owned = self._opener()

    def owned(self) -> R:
        """The resource, opened now if `setup` did not (or could not) open it. (A method, not
        a property: Beam inspects a DoFn's attributes when it builds the pipeline.)"""
        if self._owned is None:
            self._owned = self._opener()
        return self._owned

    def teardown(self) -> None:
        if self._owned is not None:
            self._owned.close()
            self._owned = None

    def __getstate__(self) -> dict[str, object]:
        return {**self.__dict__, "_owned": None}
