"""The candidate stages of a run, in order, written once as data: the evidence transform
applies each as a Beam step labelled by its name, `explain` calls the same functions and eval's
funnel names the same steps, so they cannot drift. Adding a stage is its module and one entry
here."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pipeline.config.settings import RagSettings
from stages.candidate_step import CandidateStep
from stages.dedup import keyed_dedup
from stages.fusion import rrf_fusion
from stages.models import Candidate
from stages.per_doc_cap import per_doc_cap
from stages.score_floor import score_floor
from stages.top_n import top_n_step

CANDIDATE_STEPS: tuple[Callable[[RagSettings], CandidateStep | None], ...] = (
    lambda rag: rrf_fusion(rag.recall.rrf()) if rag.recall.mode == "hybrid" else None,
    lambda rag: keyed_dedup(rag.dedup_key),
    lambda rag: per_doc_cap(rag.max_chunks_per_document),
    lambda rag: score_floor(rag.min_score) if rag.min_score is not None else None,
    lambda rag: top_n_step(rag.return_n),
)
"""Between IdentityNormalize and FetchContent, each built from `rag.*` (None: it does not apply
to these settings): RrfFusion in hybrid recall only, ScoreFloor when `rag.min-score` is set."""


def candidate_chain(rag: RagSettings) -> list[CandidateStep]:
    """The candidate stages that apply to `rag`, in order."""
    return [step for build in CANDIDATE_STEPS if (step := build(rag)) is not None]


def through(steps: Sequence[CandidateStep], candidates: Sequence[Candidate]) -> list[Candidate]:
    """`candidates` through `steps`' functions, in order, outside Beam (benches, tests)."""
    kept = list(candidates)
    for step in steps:
        kept = step.fn(kept)
    return kept


def step_names(rag: RagSettings) -> list[str]:
    """Every step of a run, by the names its Beam labels carry (text recall embeds first)."""
    embed = [] if rag.recall.mode == "lexical" else ["EmbedQueries"]
    return [*embed, "Recall", "IdentityNormalize",
            *(step.name for step in candidate_chain(rag)), "FetchContent", "Project"]
