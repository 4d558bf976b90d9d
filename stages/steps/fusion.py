"""RrfFusion: hybrid recall's ranked lists fused by Reciprocal Rank Fusion, keyed by evidence
key. Everything specific to a search backend stays behind the port; this only sees ranks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Annotated, Literal

from core.params import Bound, Real, Whole, check_bounds
from stages.candidate_step import CandidateStep
from stages.hit_merge import absorb
from stages.models import Candidate
from stages.step_views import StepView, ranked_rows

RRF_K = Bound("rag.recall.rrf-k", ge=1)
WEIGHT = Bound("rag.recall.weights", ge=0)
RetrieverFamily = Literal["knn", "bm25"]
Weight = Annotated[Real, WEIGHT]


@dataclass(frozen=True)
class RrfSettings:
    """`k` dampens the weight of top ranks (60 in the RRF paper and in Elasticsearch);
    `weights` scale each retriever family (`knn`, `bm25`; the part of a reason before `:`),
    1.0 when not named, never negative."""

    k: Annotated[Whole, RRF_K] = 60
    weights: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_bounds(self)
        for weight in self.weights.values():
            WEIGHT.check(weight)

    def weight(self, reason: str) -> float:
        return self.weights.get(reason.partition(":")[0], 1.0)


FUSED_VIEW = StepView("fused (reciprocal rank fusion)",
                      ("rank", "score", "evidence_key", "reasons"),
                      ranked_rows, "fused", shown_empty=False)
"""How `explain` shows the step."""


def fuse_reciprocal_rank(candidates: Sequence[Candidate], rrf: RrfSettings) -> list[Candidate]:
    """One candidate per evidence key, scored sum(weight / (k + rank)) over the retrievers that
    found it; content and source from the retriever that ranked it best (ties: recall
    order), reasons and per-retriever ranks and raw scores merged.
    """
    fused: dict[str, Candidate] = {}
    for candidate in sorted(candidates, key=lambda c: (_best_rank(c), c.recall_order)):
        kept = fused.get(candidate.evidence_key)
        fused[candidate.evidence_key] = candidate if kept is None else absorb(kept, candidate)
    return [c._replace(score=_rrf_score(c, rrf)) for c in fused.values()]


def _best_rank(candidate: Candidate) -> int:
    return min((r.rank for r in candidate.retrievers), default=1)


def _rrf_score(candidate: Candidate, rrf: RrfSettings) -> float:
    return sum(rrf.weight(r.reason) / (rrf.k + r.rank) for r in candidate.retrievers)


def rrf_fusion(rrf: RrfSettings) -> CandidateStep:
    """The step that fuses each query's ranked lists by Reciprocal Rank Fusion (hybrid
    recall).

    Usage::

        fused = candidates | CandidateStage(rrf_fusion(RrfSettings(k=60)))
    """
    return CandidateStep("RrfFusion", partial(fuse_reciprocal_rank, rrf=rrf),
                         view=FUSED_VIEW)
