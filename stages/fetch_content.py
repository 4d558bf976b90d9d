"""FetchContent: read the content of the candidates that survived TopN, and only theirs (late
materialization: a port that answers without contents is asked for a few, not every hit)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from connectors.search_port import (
    ContentRef,
)
from core.errors import KnowledgeSearchError
from stages.models import Candidate, DeadLetter, QueryCandidates

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
        return letter(element, error)
    return element._replace(candidates=tuple(filled))


def letter(element: QueryCandidates, error: KnowledgeSearchError) -> DeadLetter:
    return DeadLetter(stage="recall", query_id=element.query_id,
                      error=f"reading the content of its evidence failed: {error}")


def _read(candidate: Candidate, contents: Iterator[str]) -> Candidate:
    if candidate.ref is None:
        raise KnowledgeSearchError(f"{candidate.evidence_key} came without content or a ref")
    return candidate._replace(content=next(contents))
