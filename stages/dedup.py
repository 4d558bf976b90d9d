"""KeyedDedup: merge candidates only when their evidence keys are equal."""

from __future__ import annotations

from collections.abc import Sequence

from stages.candidate_stage import CandidateStage
from stages.counters import DUPLICATES_MERGED
from stages.models import Candidate
from stages.ranking import ranked


def dedup_by_evidence_key(candidates: Sequence[Candidate]) -> list[Candidate]:
    """One candidate per evidence key, in ranking order.

    The survivor keeps the content, source and metadata of the higher-ranked candidate (and so
    its score, the best); its `hit_reasons` are the union of all merged reasons in rank order.
    Candidates of one document with different chunk indexes are never merged here.
    """
    survivors: dict[str, Candidate] = {}
    for candidate in ranked(candidates):
        kept = survivors.get(candidate.evidence_key)
        if kept is None:
            survivors[candidate.evidence_key] = candidate
        else:
            survivors[candidate.evidence_key] = _merge_reasons(kept, candidate)
    return list(survivors.values())


def _merge_reasons(kept: Candidate, dropped: Candidate) -> Candidate:
    extra = tuple(r for r in dropped.hit_reasons if r not in kept.hit_reasons)
    if not extra:
        return kept
    return kept.model_copy(update={"hit_reasons": kept.hit_reasons + extra})


class KeyedDedup(CandidateStage):
    """Merges candidates with equal evidence keys, per query.

    >>> deduped = candidates | KeyedDedup()  # doctest: +SKIP
    """

    def __init__(self) -> None:
        super().__init__("DedupByEvidenceKey", dedup_by_evidence_key, DUPLICATES_MERGED)
