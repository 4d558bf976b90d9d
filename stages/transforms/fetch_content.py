"""FetchContent and FetchVectors as Beam steps: `with_contents` or `with_vectors` per query,
the port opened on the first candidate that lacks what the step reads."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import apache_beam as beam
from apache_beam import pvalue

from connectors.search_port import KnowledgeSearchPort, PortFactory, can
from core.errors import KnowledgeSearchError
from stages.fetch_content import letter, with_contents
from stages.fetch_vectors import vectors_letter, with_vectors
from stages.models import DeadLetter, QueryCandidates
from stages.support.internal_errors import HandlesErrors
from stages.support.owning_dofn import OwningDoFn
from stages.support.per_query import PerQueryDoFn


class _Reads(NamedTuple):
    """What a fetch step reads: the port's method, the candidate's field it fills, how it
    fills one query's candidates, and the dead letter of a port that cannot be opened."""

    method: str
    field: str
    fill: Callable[[QueryCandidates, Any], QueryCandidates | DeadLetter]
    letter: Callable[[QueryCandidates, KnowledgeSearchError], DeadLetter]


CONTENTS = _Reads("contents", "content", with_contents, letter)
VECTORS = _Reads("vectors_of", "vector", with_vectors, vectors_letter)


class _FetchDoFn(OwningDoFn[KnowledgeSearchPort], PerQueryDoFn):
    """Opens its port on the first candidate that lacks what it reads (never, for contents
    from a port that gives them with its hits)."""

    output_type = QueryCandidates

    def __init__(self, port_factory: PortFactory, reads: _Reads) -> None:
        super().__init__(port_factory)
        self._reads = reads

    def setup(self) -> None:
        return None

    def answer(self, element: QueryCandidates) -> QueryCandidates | DeadLetter:
        reads, read = self._reads, None
        if any(getattr(c, reads.field) is None for c in element.candidates):
            try:
                port = self.owned()
            except KnowledgeSearchError as error:
                return reads.letter(element, error)
            read = getattr(port, reads.method) if can(port, reads.method) else None
        return reads.fill(element, read)


class FetchContent(HandlesErrors, beam.PTransform[beam.PCollection[QueryCandidates],
                                                  pvalue.DoOutputsTuple]):
    """QueryCandidates -> the same with contents read (main `candidates`), or DeadLetter (tag
    `dead_letter`) when they cannot be.

    Usage::

        fetched = best | FetchContent(port_factory)
    """

    def __init__(self, port_factory: PortFactory) -> None:
        super().__init__()
        self._fn = _FetchDoFn(port_factory, CONTENTS)
        self._label = "ReadContents"

    def expand(self, element: beam.PCollection[QueryCandidates]) -> pvalue.DoOutputsTuple:
        return self._guarded_step(element, self._label, self._fn, main="candidates")


class FetchVectors(FetchContent):
    """QueryCandidates -> the same with each candidate's stored vector (main `candidates`),
    or DeadLetter (tag `dead_letter`) when they cannot be read.

    Usage::

        with_vectors = candidates | FetchVectors(port_factory)
    """

    def __init__(self, port_factory: PortFactory) -> None:
        super().__init__(port_factory)
        self._fn = _FetchDoFn(port_factory, VECTORS)
        self._label = "ReadVectors"
