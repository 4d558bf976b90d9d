"""TopN: keep the `return-n` best candidates and rank them 1..n as evidence blocks."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from stages.candidate_stage import CandidateStage
from stages.models import Candidate, EvidenceBlock
from stages.ranking import ranked


def top_n(candidates: Sequence[Candidate], return_n: int) -> list[Candidate]:
    """The `return_n` best candidates in ranking order.

    Raises:
        ValueError: `return_n` is below 1.
    """
    if return_n < 1:
        raise ValueError(f"rag.return-n={return_n!r}: must be at least 1")
    return ranked(candidates)[:return_n]


def to_evidence_blocks(candidates: Sequence[Candidate]) -> list[EvidenceBlock]:
    """Evidence blocks ranked 1..n in ranking order."""
    return [
        EvidenceBlock(
            evidence_key=c.evidence_key,
            doc_id=c.doc_id,
            chunk_index=c.chunk_index,
            source=c.source,
            content=c.content,
            score=c.score,
            rank=rank,
            hit_reasons=c.hit_reasons,
            retrievers=c.retrievers,
        )
        for rank, c in enumerate(ranked(candidates), start=1)
    ]


class TopN(CandidateStage):
    """Keeps the `return_n` best candidates, per query.

    >>> best = candidates | TopN(return_n=5)  # doctest: +SKIP
    """

    def __init__(self, return_n: int = 5) -> None:
        if return_n < 1:
            raise ValueError(f"rag.return-n={return_n!r}: must be at least 1")
        super().__init__("TopN", partial(top_n, return_n=return_n))
