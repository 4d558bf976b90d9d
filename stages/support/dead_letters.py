"""How a query that fails at some stage becomes a dead letter."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TypeVar

from apache_beam import pvalue

from stages.models import DeadLetter
from stages.support import counters

T = TypeVar("T")

DEAD_LETTER = "dead_letter"
"""The tag of every stage's dead-letter output."""


def routed(results: Iterable[T | DeadLetter]) -> Iterator[T | pvalue.TaggedOutput]:
    """A step's results as its outputs: dead letters counted and sent to the `dead_letter`
    tag, everything else to the main output."""
    for result in results:
        if isinstance(result, DeadLetter):
            counters.count(counters.DEAD_LETTERS)
            yield pvalue.TaggedOutput(DEAD_LETTER, result)
        else:
            yield result
