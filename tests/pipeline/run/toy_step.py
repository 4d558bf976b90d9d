"""A toy candidate step, as a newcomer writes one in `stages/steps/`: it drops the chunks of
odd index, sees the query (to prove a step gets it) and shows itself in `explain`."""

from __future__ import annotations

from collections.abc import Sequence

from stages.candidate_step import CandidateStep
from stages.models import Candidate, EmbeddedQuery
from stages.step_views import StepView, dropped_rows

ODD_DROPPED = "odd_chunks_dropped"


def even_chunks(candidates: Sequence[Candidate], query: EmbeddedQuery) -> list[Candidate]:
    """The candidates of even chunk index; every one, for a query whose text says `keep all`."""
    if query.query.text == "keep all":
        return list(candidates)
    return [c for c in candidates if (c.chunk_index or 0) % 2 == 0]


def even_step() -> CandidateStep:
    return CandidateStep("EvenChunks", even_chunks, ODD_DROPPED, needs_query=True,
                         view=StepView("removed for an odd chunk index",
                                       ("rank", "evidence_key", "score"), dropped_rows,
                                       "odd_chunks"))
