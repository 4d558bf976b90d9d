"""Merging what several hits of one chunk say: their reasons and each retriever's best rank."""

from __future__ import annotations

from stages.models import Candidate, RetrieverHit


def merged_retrievers(*groups: tuple[RetrieverHit, ...]) -> tuple[RetrieverHit, ...]:
    """One entry per retriever (reason), its best rank, in first-seen order."""
    best: dict[str, RetrieverHit] = {}
    for group in groups:
        for hit in group:
            kept = best.get(hit.reason)
            if kept is None or hit.rank < kept.rank:
                best[hit.reason] = hit
    return tuple(best.values())


def absorb(kept: Candidate, other: Candidate) -> Candidate:
    """`kept` (the higher-ranked) with `other`'s reasons and retriever ranks merged in."""
    reasons = kept.hit_reasons + tuple(r for r in other.hit_reasons if r not in kept.hit_reasons)
    retrievers = merged_retrievers(kept.retrievers, other.retrievers)
    if reasons == kept.hit_reasons and retrievers == kept.retrievers:
        return kept
    return kept._replace(hit_reasons=reasons, retrievers=retrievers)
