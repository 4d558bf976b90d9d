"""FetchContent: read the content of the candidates that survived TopN, and only theirs (late
materialization: a port that answers without contents is asked for a few, not every hit)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import cast

import apache_beam as beam
from apache_beam import pvalue

from connectors.search_port import (
    ContentRef,
    KnowledgeSearchPort,
    LateContentPort,
    PortFactory,
    can,
)
from core.errors import KnowledgeSearchError
from stages.models import Candidate, DeadLetter, QueryCandidates
from stages.support.internal_errors import HandlesErrors
from stages.support.owning_dofn import OwningDoFn
from stages.support.per_query import PerQueryDoFn

ReadContents = Callable[[Sequence[ContentRef]], list[str]]
"""A `LateContentPort`'s `contents`."""


def with_contents(element: QueryCandidates, read: ReadContents | None
                  ) -> QueryCandidates | DeadLetter:
    """`element` with every candidate's content read by `read` (those that have one pass as
    they are); a content that cannot be read dead-letters the query."""
    missing = [c for c in element.candidates if c.content is None]
    if not missing:
        return element
    try:
        if read is None:
            raise KnowledgeSearchError("the port gave hits without content and cannot read "
                                       "contents")
        contents = iter(read([c.ref for c in missing if c.ref is not None]))
        filled = [c if c.content is not None else _read(c, contents)
                  for c in element.candidates]
    except KnowledgeSearchError as error:
        return _letter(element, error)
    return QueryCandidates(element.query_id, tuple(filled))


def _letter(element: QueryCandidates, error: KnowledgeSearchError) -> DeadLetter:
    return DeadLetter(stage="recall", query_id=element.query_id,
                      error=f"reading the content of its evidence failed: {error}")


def _read(candidate: Candidate, contents: Iterator[str]) -> Candidate:
    if candidate.ref is None:
        raise KnowledgeSearchError(f"{candidate.evidence_key} came without content or a ref")
    return candidate._replace(content=next(contents))


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
                return _letter(element, error)
            read = cast(LateContentPort, port).contents if can(port, "contents") else None
        return with_contents(element, read)


class FetchContent(HandlesErrors, beam.PTransform[beam.PCollection[QueryCandidates],
                                                  pvalue.DoOutputsTuple]):
    """QueryCandidates -> the same with contents read (main `candidates`), or DeadLetter (tag
    `dead_letter`) when they cannot be.

    Usage::

        fetched = best | FetchContent(port_factory)
    """

    def __init__(self, port_factory: PortFactory) -> None:
        super().__init__()
        self._fn = _FetchDoFn(port_factory)

    def expand(self, element: beam.PCollection[QueryCandidates]) -> pvalue.DoOutputsTuple:
        return self._guarded_step(element, "ReadContents", self._fn, main="candidates")
