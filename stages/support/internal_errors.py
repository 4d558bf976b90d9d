"""Anything unexpected raised while handling an element fails that element, not the job.

One mechanism for every step that can fail, in `run` and `index` alike (`guarded_step`, with a
`GuardedDoFn`): the failed element and its exception go to one error handler, in the records
Beam's `with_exception_handling` gives it. A run makes them dead letters of stage `internal`
naming the exception (`InternalDeadLetters`); `index` makes them failures of the chunks they
held. A step that works on a batch fails its whole batch.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Self

import apache_beam as beam
from apache_beam import pvalue
from apache_beam.transforms.error_handling import CollectingErrorHandler, ErrorHandler

from core.errors import redact
from stages.models import Continuation, DeadLetter, EmbeddedQuery, Query
from stages.support import counters
from stages.support.dead_letters import DEAD_LETTER
from stages.support.per_query import FAILED, GuardedDoFn

FailedElement = tuple[Any, tuple[Any, str, Any]]
"""What Beam hands the error handler: (element, (exception type, repr, traceback))."""


def guarded_step(pcoll: beam.PCollection[Any], label: str, fn: GuardedDoFn,
                 error_handler: ErrorHandler | None, *side_inputs: Any, main: str = "main",
                 tags: tuple[str, ...] = ()) -> pvalue.DoOutputsTuple:
    """`fn` applied to each element of `pcoll` (see `GuardedDoFn`), what it raises sent to
    `error_handler` (None: it fails the pipeline); outputs `main`, `dead_letter` and `tags`."""
    outputs = pcoll | label >> beam.ParDo(
        fn.guarded(error_handler is not None), *side_inputs
    ).with_outputs(FAILED, DEAD_LETTER, *tags, main=main)
    if error_handler is not None:
        error_handler.add_error_pcollection(outputs[FAILED])
    return outputs


class HandlesErrors:
    """Our transforms' side of Beam's convention: `with_error_handler(handler)` (None: errors
    fail the pipeline, as in unit tests) and `_guarded_step(...)` for each step inside."""

    _error_handler: ErrorHandler | None = None

    def with_error_handler(self, error_handler: ErrorHandler | None) -> Self:
        self._error_handler = error_handler
        return self

    def _guarded_step(self, pcoll: beam.PCollection[Any], label: str, fn: GuardedDoFn,
                      *side_inputs: Any, main: str = "main", tags: tuple[str, ...] = ()
                      ) -> pvalue.DoOutputsTuple:
        """`guarded_step` with this transform's error handler."""
        return guarded_step(pcoll, label, fn, self._error_handler, *side_inputs, main=main,
                            tags=tags)


def internal_dead_letters(failed: FailedElement) -> Iterator[DeadLetter]:
    """One dead letter per query in the element that raised."""
    element, (_, message, _) = failed
    for query_id, line_number, value in _queries_of(element):
        counters.count(counters.DEAD_LETTERS)
        counters.count(counters.INTERNAL_ERRORS)
        yield DeadLetter(stage="internal", error=redact(f"unexpected error: {message}"),
                         query_id=query_id, line_number=line_number, input=value)


def _queries_of(element: Any) -> Iterator[tuple[str | None, int | None, Any]]:
    if isinstance(element, list):
        for item in element:
            yield from _queries_of(item)
    elif isinstance(element, EmbeddedQuery | Continuation):
        yield from _queries_of(element.query)
    elif isinstance(element, Query):
        yield element.id, element.line_number, element.model_dump(exclude_none=True)
    elif isinstance(element, tuple) and len(element) == 2 and isinstance(element[0], int):
        yield None, element[0], _shown(element[1])  # a numbered input line
    else:
        yield getattr(element, "query_id", None), None, None


def _shown(raw: Any) -> Any:
    """An input as a dead letter can hold it: text, a row, or nothing (an unreadable part)."""
    if isinstance(raw, bytes):
        return raw.decode("utf-8", errors="backslashreplace")
    return raw if isinstance(raw, str | dict) else None


class InternalDeadLetters(beam.PTransform[beam.PCollection[FailedElement],
                                          beam.PCollection[DeadLetter]]):
    """The error handler's records -> dead letters of stage `internal`."""

    def expand(self, failed: beam.PCollection[FailedElement]) -> beam.PCollection[DeadLetter]:
        return failed | "ToDeadLetters" >> beam.FlatMap(internal_dead_letters).with_output_types(
            DeadLetter)


class NamedErrorHandler(CollectingErrorHandler):
    """A CollectingErrorHandler whose closing steps carry `name`, so that one pipeline can
    collect two groups of errors apart (Beam labels them "Flatten" whatever the handler)."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self._name = name

    def close(self) -> None:
        self._output = tuple(self._error_pcolls) | f"{self._name}Errors" >> beam.Flatten()
        self._closed = True
