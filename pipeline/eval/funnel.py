"""Where each judged relevant item went in a run: the loss funnel (how many survive each stage)
and the lost items, each with the stage that dropped it and where each retriever ranked it.

Items are what the judgments name: evidence keys (chunk-level) or documents, a document
surviving a stage while any chunk of it does. The stages are the run's own (see
`pipeline.run.trace`): Recall (within `rag.retrieve-k` of some retriever), then the candidate
chain (`pipeline.run.chain`: the steps that apply), then Project (the Agent's list, cut by
`projection.*`). eval's metrics score TopN's list (the evidence), so with
k at least `rag.return-n`, Recall@k is the mean over queries of the share of their relevant
items that survive TopN.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pipeline.config.settings import RagSettings
from pipeline.eval.metrics import document_of
from pipeline.eval.qrels import Qrels
from pipeline.run.chain import candidate_chain, every_step_name
from pipeline.run.trace import Traced
from stages.models import Candidate, DeadLetter

RECALL, PROJECT = "Recall", "Project"
NOT_ASKED = "not asked"
"""The stage of a judged query's items when the query file does not hold that query."""


@dataclass(frozen=True)
class Loss:
    """One relevant item that did not reach the Agent."""

    query_id: str
    item: str
    stage: str
    ranks: dict[str, int] = field(default_factory=dict)
    """Its best rank per retriever (sub-query reason) within `rag.retrieve-k`; empty when no
    retriever recalled it."""

    def to_dict(self) -> dict[str, Any]:
        return {"query_id": self.query_id, "item": self.item, "stage": self.stage,
                "ranks": self.ranks}


@dataclass(frozen=True)
class Funnel:
    """How many relevant items there are, and how many survive each stage, in stage order."""

    relevant: int
    survivors: dict[str, int]
    losses: list[Loss]

    def to_dict(self) -> dict[str, int]:
        return {"relevant": self.relevant, **self.survivors}


def stage_names(rag: RagSettings) -> list[str]:
    """The funnel's stages for `rag`, in order."""
    return [RECALL, *(step.name for step in candidate_chain(rag)), PROJECT]


def every_stage_name() -> list[str]:
    """The stages of every possible chain, in order (the columns of the funnel table)."""
    return [RECALL, *every_step_name(), PROJECT]


def loss_funnel(traced: Mapping[str, Traced | DeadLetter], qrels: Qrels,
                rag: RagSettings) -> Funnel:
    """The funnel of one config over every judged query (`traced` by query id)."""
    names = stage_names(rag)
    survivors = dict.fromkeys(names, 0)
    losses: list[Loss] = []
    relevant_total = 0
    for query_id, judged in sorted(qrels.judgments.items()):
        relevant = sorted(item for item, grade in judged.items() if grade > 0)
        relevant_total += len(relevant)
        outcome = traced.get(query_id)
        if not isinstance(outcome, Traced):
            stage = NOT_ASKED if outcome is None else f"{outcome.stage} (dead letter)"
            losses += [Loss(query_id, item, stage) for item in relevant]
            continue
        kept_after = _kept_after(outcome, qrels.level)
        for item in relevant:
            dropped_at = next((n for n in names if item not in kept_after[n]), None)
            for name in names[:names.index(dropped_at)] if dropped_at else names:
                survivors[name] += 1
            if dropped_at is not None:
                losses.append(Loss(query_id, item, dropped_at,
                                   _best_ranks(outcome.recalled, item, qrels.level)))
    return Funnel(relevant_total, survivors, losses)


def _kept_after(traced: Traced, level: str) -> dict[str, set[str]]:
    """The items each stage kept."""
    kept = {RECALL: _items(traced.recalled, level)}
    for step in traced.steps:
        kept[step.name] = _items(step.after, level)
    last = traced.steps[-1].after if traced.steps else traced.recalled
    by_key = {c.evidence_key: c for c in last}
    projected = [by_key[item.document_id] for item in traced.result.projected]
    kept[PROJECT] = _items(projected, level)
    return kept


def _items(candidates: Iterable[Candidate], level: str) -> set[str]:
    return {item_of(c, level) for c in candidates}


def item_of(candidate: Candidate, level: str) -> str:
    """What judgments at `level` call this candidate, as eval's metrics call a block."""
    return candidate.evidence_key if level == "chunk" else document_of(candidate)


def _best_ranks(recalled: Sequence[Candidate], item: str, level: str) -> dict[str, int]:
    ranks: dict[str, int] = {}
    for candidate in recalled:
        if item_of(candidate, level) == item:
            for hit in candidate.retrievers:
                ranks[hit.reason] = min(ranks.get(hit.reason, hit.rank), hit.rank)
    return dict(sorted(ranks.items()))
