"""Rerank: score each query's `top` best-ranked candidates against its text with a model that
reads both (a cross-encoder), and keep those, scored by the model.

The step reads contents (they are read before it: `needs_content`) and the query's text; a
query without text (vectors only) passes unchanged, counted as `not_reranked`. Candidates
below the `top` are dropped; the others keep their retrievers' ranks and scores, and their
`score` becomes the model's, which TopN then ranks by.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Protocol

from core.params import Bound
from stages.candidate_step import CandidateStep
from stages.models import Candidate, EmbeddedQuery
from stages.ranking import ranked
from stages.step_views import StepView, ordered_rows
from stages.support import counters

RERANK_TOP = Bound("rag.rerank.top", ge=1, le=10_000)


class PairScorer(Protocol):
    """Scores passages against a query text (`connectors.rerankers.cross_encoder`)."""

    def score(self, text: str, passages: Sequence[str]) -> list[float]: ...


RERANK_VIEW = StepView("reranked (the model's scores)",
                       ("rank", "score", "evidence_key", "reasons"),
                       ordered_rows, "reranked")
"""How `explain` shows the step."""


def reranked(candidates: Sequence[Candidate], query: EmbeddedQuery, scorer: PairScorer,
             top: int) -> list[Candidate]:
    """The `top` best-ranked candidates with the scorer's scores, best first (ties by recall
    order); the candidates as they are when the query has no text."""
    text = query.query.text
    if not text:
        counters.count(counters.NOT_RERANKED)
        return list(candidates)
    pool = ranked(candidates)[:top]
    scores = scorer.score(text, [c.content or "" for c in pool])
    return ranked([c._replace(score=s) for c, s in zip(pool, scores, strict=True)])


def rerank_step(scorer: PairScorer, top: int = 20) -> CandidateStep:
    """The step that reranks each query's `top` best candidates with `scorer`.

    Usage::

        reranked = candidates | CandidateStage(rerank_step(CrossEncoderScorer(folder), top=20))

    Raises:
        OutOfBoundsError: `top` is outside `RERANK_TOP`.
    """
    RERANK_TOP.check(top)
    return CandidateStep("Rerank", partial(reranked, scorer=scorer, top=top), needs_query=True,
                         needs_content=True, counters=(counters.NOT_RERANKED,),
                         view=RERANK_VIEW,
                         about=scorer.described() if hasattr(scorer, "described") else None)
