"""ScoreFloor: drop the candidates whose score is below `rag.min-score` (off when None)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from stages.candidate_step import CandidateStep
from stages.models import Candidate
from stages.step_views import StepView, dropped_rows
from stages.support.counters import BELOW_MIN_SCORE

FLOOR_VIEW = StepView("removed below rag.min-score",
                      ("rank", "evidence_key", "score"),
                      dropped_rows, "below_min_score", shown_empty=False)
"""How `explain` shows the step."""


def above_floor(candidates: Sequence[Candidate], min_score: float) -> list[Candidate]:
    """The candidates scoring at least `min_score`, in their order. The score is the block's:
    (1 + cosine) / 2 in dense recall, BM25 in lexical, the RRF score in hybrid."""
    return [c for c in candidates if c.score >= min_score]


def score_floor(min_score: float) -> CandidateStep:
    """The step that drops each query's candidates below `min_score`, counted as
    `below_min_score`.

    Usage::

        kept = candidates | CandidateStage(score_floor(min_score=0.6))
    """
    return CandidateStep("ScoreFloor", partial(above_floor, min_score=min_score),
                         BELOW_MIN_SCORE,
                         view=FLOOR_VIEW)
