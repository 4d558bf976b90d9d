"""Mmr: keep a diverse `top` of each query's candidates by maximal marginal relevance, over
their stored vectors (Carbonell and Goldstein, 1998; LangChain's and Elasticsearch's MMR).

The relevance of a candidate is its cosine with the query's vectors (the best over them: its
text's vector, its `vector`, its `vectors`); its redundancy is its greatest cosine with a
candidate picked before it. Each pick is the one of greatest
`lambda * relevance - (1 - lambda) * redundancy`, the first by relevance alone, ties to the
better-ranked. The step keeps the picked set and drops the rest; it changes no score, so TopN
ranks the kept ones as before (what MMR changes is which chunks reach the evidence).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import numpy as np

from core.errors import RagEvidenceError
from core.params import Bound
from stages.candidate_step import CandidateStep
from stages.models import Candidate, EmbeddedQuery
from stages.ranking import ranked
from stages.step_views import StepView, dropped_rows
from stages.support.counters import DIVERSIFIED_AWAY

MMR_LAMBDA = Bound("rag.mmr.lambda", ge=0, le=1)
MMR_TOP = Bound("rag.mmr.top", ge=1, le=10_000)


MMR_VIEW = StepView("removed for diversity (MMR)",
                    ("rank", "evidence_key", "doc_id", "score"),
                    dropped_rows, "diversified_away")
"""How `explain` shows the step."""


def diversified(candidates: Sequence[Candidate], query: EmbeddedQuery, lambda_: float,
                top: int) -> list[Candidate]:
    """The `top` candidates MMR picks, in ranking order (all of them when there are no more).

    Raises:
        RagEvidenceError: a candidate came without its vector, or the query has none.
    """
    pool = ranked(candidates)
    if len(pool) <= top:
        return pool
    rows = _rows(pool)
    relevance = np.max(rows @ _query_rows(query).T, axis=1)
    redundancy = np.full(len(pool), -np.inf)
    free = np.ones(len(pool), dtype=bool)
    for step in range(top):
        # the first pick is the most relevant whatever lambda is (at 0, every gain would be 0
        # and the best-ranked would be picked instead)
        gain = relevance if step == 0 else np.where(
            free, lambda_ * relevance - (1 - lambda_) * redundancy, -np.inf)
        pick = int(np.argmax(gain))  # the first of equal gains: the better-ranked
        free[pick] = False
        redundancy = np.maximum(redundancy, rows @ rows[pick])
    return [c for c, left in zip(pool, free, strict=True) if not left]


def _rows(pool: Sequence[Candidate]) -> np.ndarray:
    for candidate in pool:
        if candidate.vector is None:
            raise RagEvidenceError(f"Mmr: candidate {candidate.evidence_key} came without its "
                                   "vector")
    return _unit(np.asarray([c.vector for c in pool], dtype=np.float64))


def _query_rows(query: EmbeddedQuery) -> np.ndarray:
    q = query.query
    vectors = [v for v in (query.text_vector, q.vector, *(q.vectors or ())) if v is not None]
    if not vectors:
        raise RagEvidenceError(f"Mmr: query {q.id!r} has no vector to measure relevance by")
    return _unit(np.asarray(vectors, dtype=np.float64))


def _unit(rows: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms > 0, norms, 1.0)


def mmr_step(lambda_: float = 0.5, top: int = 5) -> CandidateStep:
    """The step that keeps each query's `top` candidates by maximal marginal relevance
    (`lambda_` 1: relevance alone, 0: diversity alone), counted as `diversified_away`.

    Usage::

        diverse = candidates | CandidateStage(mmr_step(lambda_=0.5, top=5))

    Raises:
        OutOfBoundsError: `lambda_` or `top` is outside `MMR_LAMBDA` or `MMR_TOP`.
    """
    MMR_LAMBDA.check(lambda_)
    MMR_TOP.check(top)
    return CandidateStep("Mmr", partial(diversified, lambda_=lambda_, top=top),
                         DIVERSIFIED_AWAY, needs_query=True, needs_vectors=True,
                         view=MMR_VIEW)
