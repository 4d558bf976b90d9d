"""KeyedDedup: merge candidates only when their evidence keys are equal."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Literal

from stages.candidate_step import CandidateStep
from stages.hit_merge import absorb
from stages.models import Candidate
from stages.ranking import ranked
from stages.step_views import StepView, merged_rows
from stages.support.counters import DUPLICATES_MERGED

DedupKey = Literal["evidence-key", "source"]


MERGED_VIEW = StepView("merged as duplicates (same evidence key)",
                       ("evidence_key", "score", "reasons", "into"),
                       merged_rows, "merged")
"""How `explain` shows the step."""


def dedup_by_evidence_key(candidates: Sequence[Candidate],
                          key: DedupKey = "evidence-key") -> list[Candidate]:
    """One candidate per evidence key, in ranking order.

    The survivor keeps the content and source of the higher-ranked candidate (and so
    its score, the best); its `hit_reasons` are the union of all merged reasons in rank order,
    and its `retrievers` each retriever's best rank. Candidates of one document with different
    chunk indexes are never merged here.

    `key="source"` merges by source instead: the behaviour the spec replaced, kept only so
    that an evaluation can show what chunk-scoped evidence buys.
    """
    survivors: dict[str, Candidate] = {}
    for candidate in ranked(candidates):
        value = candidate.evidence_key if key == "evidence-key" else candidate.source
        kept = survivors.get(value)
        survivors[value] = candidate if kept is None else absorb(kept, candidate)
    return list(survivors.values())


def keyed_dedup(key: DedupKey = "evidence-key") -> CandidateStep:
    """The step that merges candidates with equal evidence keys, per query.

    Usage::

        deduped = candidates | CandidateStage(keyed_dedup())
    """
    return CandidateStep("KeyedDedup", partial(dedup_by_evidence_key, key=key),
                         DUPLICATES_MERGED,
                         view=MERGED_VIEW)
