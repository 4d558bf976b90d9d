"""Evidence quality per run: IR metrics by ir-measures, and how evidence spreads over documents."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import ir_measures
from ir_measures import RR, R, nDCG

from pipeline.eval.qrels import Qrels
from stages.models import ChunkEvidence


@dataclass(frozen=True)
class Scores:
    """Means over every judged query; a query without a result counts as zero."""

    ndcg: float
    recall: float
    mrr: float
    distinct_documents: float
    top_document_share: float
    answered: int
    judged: int
    ndcg_by_query: tuple[float, ...] = field(default=(), repr=False)
    """Each judged query's nDCG@k, in query id order: what paired tests compare."""


def ranked_ids(evidence: Sequence[ChunkEvidence], level: str) -> list[str]:
    """The ids a run ranks: evidence keys, or documents at their best rank (each once)."""
    if level == "chunk":
        return [block.evidence_key for block in evidence]
    seen: dict[str, None] = {}
    for block in evidence:
        seen.setdefault(document_of(block), None)
    return list(seen)


class Identified(Protocol):
    """A block or a candidate: what names its document."""

    @property
    def evidence_key(self) -> str: ...

    @property
    def doc_id(self) -> str | None: ...

    @property
    def source(self) -> str: ...


def document_of(block: Identified) -> str:
    """The document a block counts as in document-level judgments."""
    return block.doc_id or block.source or block.evidence_key


def score_run(results: Mapping[str, Sequence[ChunkEvidence]], qrels: Qrels, k: int
              ) -> Scores:
    """Scores `results` ({query id: evidence blocks in rank order}) against `qrels` at `k`."""
    measures = [nDCG @ k, R @ k, RR @ k]
    judged = sorted(qrels.judgments)
    run = [ir_measures.ScoredDoc(qid, doc, float(len(ids) - rank))
           for qid in judged for ids in [ranked_ids(results.get(qid, ()), qrels.level)[:k]]
           for rank, doc in enumerate(ids)]
    judgments = [ir_measures.Qrel(qid, doc, rel)
                 for qid, docs in qrels.judgments.items() for doc, rel in docs.items()]
    per_query: dict[Any, dict[str, float]] = {m: {} for m in measures}
    for metric in ir_measures.iter_calc(measures, judgments, run):
        per_query[metric.measure][metric.query_id] = metric.value
    ndcg, recall, mrr = (sum(per_query[m].get(q, 0.0) for q in judged) / len(judged)
                         for m in measures)
    ndcg_by_query = tuple(per_query[measures[0]].get(q, 0.0) for q in judged)
    spread = [_spread(results[q][:k]) for q in judged if results.get(q)]
    return Scores(ndcg, recall, mrr,
                  distinct_documents=_mean([s[0] for s in spread]),
                  top_document_share=_mean([s[1] for s in spread]),
                  answered=sum(1 for q in judged if results.get(q)), judged=len(judged),
                  ndcg_by_query=ndcg_by_query)


def _spread(evidence: Sequence[ChunkEvidence]) -> tuple[float, float]:
    documents = Counter(document_of(block) for block in evidence)
    return float(len(documents)), max(documents.values()) / len(evidence)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0
