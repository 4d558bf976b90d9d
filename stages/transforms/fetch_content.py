"""FetchContent and FetchVectors as Beam steps: `with_contents` or `with_vectors` per query,
the port opened on the first candidate that lacks what the step reads."""

from __future__ import annotations

from typing import cast

import apache_beam as beam
from apache_beam import pvalue

from connectors.search_port import (
    ContinuablePort,
    KnowledgeSearchPort,
    LateContentPort,
    PortFactory,
    can,
)
from core.errors import KnowledgeSearchError
from stages.fetch_content import ReadContents, letter, with_contents
from stages.fetch_vectors import ReadVectors, vectors_letter, with_vectors
from stages.models import DeadLetter, QueryCandidates
from stages.support.internal_errors import HandlesErrors
from stages.support.owning_dofn import OwningDoFn
from stages.support.per_query import PerQueryDoFn


class _FetchDoFn(OwningDoFn[KnowledgeSearchPort], PerQueryDoFn):
    """Opens its port on the first candidate without content (never, for a port that gives
    contents with its hits)."""

    output_type = QueryCandidates

    def setup(self) -> None:
        return None

    def answer(self, element: QueryCandidates) -> QueryCandidates | DeadLetter:
        read: ReadContents | None = None
        if any(c.content is None for c in element.candidates):
            try:
                port = self.owned()
            except KnowledgeSearchError as error:
                return letter(element, error)
            read = cast(LateContentPort, port).contents if can(port, "contents") else None
        return with_contents(element, read)


class _FetchVectorsDoFn(OwningDoFn[KnowledgeSearchPort], PerQueryDoFn):
    """Opens its port on the first query with candidates."""

    output_type = QueryCandidates

    def setup(self) -> None:
        return None

    def answer(self, element: QueryCandidates) -> QueryCandidates | DeadLetter:
        read: ReadVectors | None = None
        if element.candidates:
            try:
                port = self.owned()
            except KnowledgeSearchError as error:
                return vectors_letter(element, error)
            read = cast(ContinuablePort, port).vectors_of if can(port, "vectors_of") else None
        return with_vectors(element, read)


class FetchContent(HandlesErrors, beam.PTransform[beam.PCollection[QueryCandidates],
                                                  pvalue.DoOutputsTuple]):
    """QueryCandidates -> the same with contents read (main `candidates`), or DeadLetter (tag
    `dead_letter`) when they cannot be.

    Usage::

        fetched = best | FetchContent(port_factory)
    """

    def __init__(self, port_factory: PortFactory) -> None:
        super().__init__()
        self._fn: PerQueryDoFn = _FetchDoFn(port_factory)
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
        self._fn = _FetchVectorsDoFn(port_factory)
        self._label = "ReadVectors"
