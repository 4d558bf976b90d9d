"""The candidate stages of a run, in order, written once: the evidence transform applies them as
Beam steps labelled by their class names, and `explain` calls the same stages' functions, so the
two cannot drift. Adding a stage is its module and one entry here."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pipeline.config.settings import RagSettings
from stages.dedup import KeyedDedup
from stages.fusion import RrfFusion
from stages.models import Candidate
from stages.per_doc_cap import PerDocCap
from stages.score_floor import ScoreFloor
from stages.support.candidate_stage import CandidateStage
from stages.top_n import TopN

CANDIDATE_STEPS: tuple[Callable[[RagSettings], CandidateStage | None], ...] = (
    lambda rag: RrfFusion(rag.recall.rrf()) if rag.recall.mode == "hybrid" else None,
    lambda rag: KeyedDedup(rag.dedup_key),
    lambda rag: PerDocCap(rag.max_chunks_per_document),
    lambda rag: ScoreFloor(rag.min_score) if rag.min_score is not None else None,
    lambda rag: TopN(rag.return_n),
)
"""Between IdentityNormalize and FetchContent, each built from `rag.*` (None: it does not apply
to these settings): RrfFusion in hybrid recall only, ScoreFloor when `rag.min-score` is set."""


def candidate_chain(rag: RagSettings) -> list[CandidateStage]:
    """The candidate stages that apply to `rag`, in order."""
    return [stage for build in CANDIDATE_STEPS if (stage := build(rag)) is not None]


def through(stages: Sequence[CandidateStage], candidates: Sequence[Candidate]) -> list[Candidate]:
    """`candidates` through `stages`' functions, in order, outside Beam (benches, tests)."""
    kept = list(candidates)
    for stage in stages:
        kept = stage.fn(kept)
    return kept


def step_names(rag: RagSettings) -> list[str]:
    """Every step of a run, by the class names its Beam labels carry (text recall embeds
    first)."""
    embed = [] if rag.recall.mode == "lexical" else ["EmbedQueries"]
    return [*embed, "Recall", "IdentityNormalize",
            *(type(stage).__name__ for stage in candidate_chain(rag)), "FetchContent",
            "Project"]
