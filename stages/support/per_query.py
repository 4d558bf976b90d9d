"""A step that answers each query's element on its own, failing only that query.

What `answer` raises goes, with an error handler, to the `failed` output as Beam's
`with_exception_handling` would send it; without one it fails the pipeline, as in unit tests.
Beam's wrapper does the same for any DoFn, but forwards every attribute lookup through Python
on each element; catching here spares that.
"""

from __future__ import annotations

import traceback
from abc import ABCMeta, abstractmethod
from collections.abc import Iterable, Iterator
from typing import Any, ClassVar

import apache_beam as beam
from apache_beam import pvalue

from stages.support.dead_letters import routed

FAILED = "failed"
"""The tag of the elements whose step raised: (element, (exception type, repr, traceback))."""


class GuardedDoFn(beam.DoFn, metaclass=ABCMeta):
    """Subclasses set `output_type` and implement `answers` (one element in, its outputs or
    DeadLetters out)."""

    output_type: ClassVar[type] = object
    _guarded = False

    def guarded(self, on: bool) -> GuardedDoFn:
        """This DoFn, catching what it raises (`on`) or letting it fail the pipeline."""
        self._guarded = on
        return self

    @abstractmethod
    def answers(self, element: Any, *side_inputs: Any) -> Iterable[Any]:
        """`element`'s outputs and DeadLetters."""

    # side_inputs unannotated: Beam would check an annotation against each step's side inputs
    def process(self, element: Any, *side_inputs) -> Iterator[Any]:
        """`element`'s outputs, its dead letters to `dead_letter`, or what it raised to `failed`
        (side inputs, if the step was given any, come after it)."""
        try:
            results = list(self.answers(element, *side_inputs))  # a generator raises here too
        except Exception as error:
            if not self._guarded:
                raise
            yield pvalue.TaggedOutput(FAILED, failed_element(element, error))
            return
        yield from routed(results)

    def infer_output_type(self, input_type: Any) -> Any:
        return self.output_type


class PerQueryDoFn(GuardedDoFn):
    """One output (or DeadLetter) per element: subclasses implement `answer`."""

    @abstractmethod
    def answer(self, element: Any, *side_inputs: Any) -> Any:
        """`element`'s output or DeadLetter."""

    def answers(self, element: Any, *side_inputs: Any) -> Iterable[Any]:
        return (self.answer(element, *side_inputs),)


def failed_element(element: Any, error: Exception) -> Any:
    """What Beam's `with_exception_handling` sends an error handler for `element`."""
    return (element, (type(error), repr(error), traceback.format_exception(error)))
