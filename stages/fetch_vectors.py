"""FetchVectors: read the stored vectors of a query's candidates, for a step that measures
them against each other (Mmr). Read only when such a step is in the chain, and only for the
candidates that reach it."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from core.errors import KnowledgeSearchError
from stages.models import DeadLetter, QueryCandidates

ReadVectors = Callable[[Sequence[str]], np.ndarray]
"""A `ContinuablePort`'s `vectors_of`: one unit row per id, in order."""


def with_vectors(element: QueryCandidates, read: ReadVectors | None
                 ) -> QueryCandidates | DeadLetter:
    """`element` with every candidate's stored vector (`Candidate.vector`); a vector that
    cannot be read dead-letters the query."""
    missing = [c for c in element.candidates if c.vector is None]
    if not missing:
        return element
    try:
        if read is None:
            raise KnowledgeSearchError("the store cannot give its chunks' vectors")
        nameless = next((c for c in missing if c.hit_id is None), None)
        if nameless is not None:
            raise KnowledgeSearchError(f"{nameless.evidence_key} came without an id to read "
                                       "its vector by")
        rows = iter(read([c.hit_id for c in missing if c.hit_id is not None]).tolist())
        filled = [c if c.vector is not None else c._replace(vector=tuple(next(rows)))
                  for c in element.candidates]
    except KnowledgeSearchError as error:
        return vectors_letter(element, error)
    return element._replace(candidates=tuple(filled))


def vectors_letter(element: QueryCandidates, error: KnowledgeSearchError) -> DeadLetter:
    return DeadLetter(stage="recall", query_id=element.query_id,
                      error=f"reading the vectors of its candidates failed: {error}")
