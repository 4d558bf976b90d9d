"""The candidate steps of a run, in order, written once as data: the evidence transform
applies each as a Beam step labelled by its name, `explain` calls the same functions and shows
each by its view, eval's funnel has a column per step, the summary prints their counters and
the manifest names them. Adding a step is its module (in `stages/steps/`) and one entry here.

Between the steps, the chain reads what a step needs that recall did not give: contents
(FetchContent, before the first step that needs them, else after the last step) and stored
vectors (FetchVectors, before the first step that needs them)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from connectors.rerankers.cross_encoder import CrossEncoderScorer
from pipeline.config.settings import RagSettings
from stages.candidate_step import CandidateStep
from stages.models import Candidate, EmbeddedQuery
from stages.step_views import StepView
from stages.steps.dedup import MERGED_VIEW, keyed_dedup
from stages.steps.fusion import FUSED_VIEW, rrf_fusion
from stages.steps.mmr import MMR_VIEW, mmr_step
from stages.steps.per_doc_cap import CAPPED_VIEW, per_doc_cap
from stages.steps.rerank import RERANK_VIEW, rerank_step
from stages.steps.score_floor import FLOOR_VIEW, score_floor
from stages.steps.top_n import KEPT_VIEW, top_n_step
from stages.support.counters import SUMMARY


def _always(_: RagSettings) -> bool:
    return True


@dataclass(frozen=True)
class ChainEntry:
    """A candidate step of the chain: its `name` (the step's), how it is `built` from a run's
    settings, when it `applies` to them, and its `view` (the one its step declares), by
    which `explain --json` has its field, empty, also when it does not run."""

    name: str
    built: Callable[[RagSettings], CandidateStep]
    applies: Callable[[RagSettings], bool] = _always
    view: StepView | None = None


def _mmr(rag: RagSettings) -> CandidateStep:
    assert rag.mmr is not None
    return mmr_step(rag.mmr.lambda_, rag.mmr.top or rag.return_n)


def _rerank(rag: RagSettings) -> CandidateStep:
    assert rag.rerank is not None
    return rerank_step(CrossEncoderScorer(rag.rerank.model, rag.rerank.batch_size),
                       rag.rerank.top)


CANDIDATE_STEPS: tuple[ChainEntry, ...] = (
    ChainEntry("RrfFusion", lambda rag: rrf_fusion(rag.recall.rrf()),
               lambda rag: rag.recall.mode == "hybrid", FUSED_VIEW),
    ChainEntry("KeyedDedup", lambda rag: keyed_dedup(rag.dedup_key), view=MERGED_VIEW),
    ChainEntry("PerDocCap", lambda rag: per_doc_cap(rag.max_chunks_per_document),
               view=CAPPED_VIEW),
    ChainEntry("ScoreFloor", lambda rag: score_floor(rag.min_score or 0.0),
               lambda rag: rag.min_score is not None, FLOOR_VIEW),
    ChainEntry("Mmr", _mmr, lambda rag: rag.mmr is not None, MMR_VIEW),
    ChainEntry("Rerank", _rerank, lambda rag: rag.rerank is not None, RERANK_VIEW),
    ChainEntry("TopN", lambda rag: top_n_step(rag.return_n), view=KEPT_VIEW),
)
"""Between IdentityNormalize and Project, in order: RrfFusion in hybrid recall only,
ScoreFloor when `rag.min-score` is set, Mmr with `rag.mmr`, Rerank with `rag.rerank`."""

FETCH_CONTENT, FETCH_VECTORS = "FetchContent", "FetchVectors"


def candidate_chain(rag: RagSettings) -> list[CandidateStep]:
    """The candidate steps that apply to `rag`, in order.

    Raises:
        RagEvidenceError: a step cannot be built (its model folder is missing, say).
    """
    steps = [entry.built(rag) for entry in CANDIDATE_STEPS if entry.applies(rag)]
    for step, entry in zip(steps, (e for e in CANDIDATE_STEPS if e.applies(rag)), strict=True):
        assert step.name == entry.name, f"{entry.name} built a step named {step.name}"
        assert entry.view in (None, step.view), f"{entry.name}'s entry names another view"
    return steps


def planned(steps: Sequence[CandidateStep]) -> list[CandidateStep | str]:
    """`steps` with the reads they need between them: FETCH_VECTORS before the first step
    that needs vectors, FETCH_CONTENT before the first that needs contents (else last)."""
    content_at = next((i for i, s in enumerate(steps) if s.needs_content), len(steps))
    vectors_at = next((i for i, s in enumerate(steps) if s.needs_vectors), None)
    plan: list[CandidateStep | str] = []
    for i, step in enumerate(steps):
        plan += [FETCH_VECTORS] if i == vectors_at else []
        plan += [FETCH_CONTENT] if i == content_at else []
        plan.append(step)
    return plan + ([FETCH_CONTENT] if content_at == len(steps) else [])


def sees_query(steps: Sequence[CandidateStep]) -> bool:
    """Whether a step of `steps` sees the query (its candidates then carry it)."""
    return any(step.needs_query for step in steps)


def step_counters(steps: Sequence[CandidateStep]) -> tuple[str, ...]:
    """The counters `steps` count under that every run does not report already."""
    named = [name for s in steps for name in (s.dropped_counter, *s.counters) if name]
    return tuple(dict.fromkeys(name for name in named if name not in SUMMARY))


def through(steps: Sequence[CandidateStep], candidates: Sequence[Candidate],
            query: EmbeddedQuery | None = None) -> list[Candidate]:
    """`candidates` through `steps`' functions, in order, outside Beam (benches, tests)."""
    kept = list(candidates)
    for step in steps:
        kept = step.apply(kept, query)
    return kept


def step_names(rag: RagSettings) -> list[str]:
    """Every step of a run, by the names its Beam labels carry (text recall embeds first)."""
    embed = [] if rag.recall.mode == "lexical" else ["EmbedQueries"]
    plan = planned(candidate_chain(rag))
    return [*embed, "Recall", "IdentityNormalize",
            *(p if isinstance(p, str) else p.name for p in plan), "Project"]


def every_json_field() -> list[str]:
    """The `explain --json` fields of every step any settings apply, in chain order."""
    return [e.view.field for e in CANDIDATE_STEPS if e.view is not None and e.view.field]


def every_step_name() -> list[str]:
    """The names of every candidate step any settings apply, in chain order."""
    return [entry.name for entry in CANDIDATE_STEPS]
