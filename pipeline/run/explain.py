"""`rag-evidence explain`: where one query's evidence came from and where the rest went, stage
by stage, computed by the same stage functions as `run`."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from connectors.search_port import KnowledgeSearchPort
from core.errors import InvalidInputError, KnowledgeSearchError
from pipeline.config.backends import embedder_factory_for, port_factory_for
from pipeline.config.settings import Settings
from pipeline.io.validation_messages import describe_validation_error
from pipeline.run.trace import Traced, trace
from stages.models import Candidate, DeadLetter, Query, QueryResult
from stages.ranking import ranked

Row = dict[str, Any]


@dataclass
class Explanation:
    """One query's way through the stages: each list holds what that stage saw or did."""

    query: Query
    retrievers: dict[str, list[Row]] = field(default_factory=dict)
    fused: list[Row] = field(default_factory=list)
    merged: list[Row] = field(default_factory=list)
    capped: list[Row] = field(default_factory=list)
    below_min_score: list[Row] = field(default_factory=list)
    kept: list[Row] = field(default_factory=list)
    dropped_by: dict[str, list[Row]] = field(default_factory=dict)
    """What a stage without a field of its own dropped, by its name."""
    result: QueryResult | None = None

    def record(self, name: str, rows: list[Row]) -> None:
        """What stage `name` did: in its field (`fused`, `merged`, ...) or in `dropped_by`."""
        if name in _FIELDS:
            setattr(self, name, rows)
        else:
            self.dropped_by[name] = rows

    def to_dict(self) -> dict[str, Any]:
        return {"query": self.query.model_dump(exclude_none=True),
                "retrievers": self.retrievers, "fused": self.fused, "merged": self.merged,
                "capped": self.capped, "below_min_score": self.below_min_score,
                "kept": self.kept, **({"dropped_by": self.dropped_by} if self.dropped_by else {}),
                "result": self.result.model_dump(mode="json") if self.result else None}


_FIELDS = ("fused", "merged", "capped", "below_min_score", "kept")


def query_of(text: str, filters: str | None = None) -> Query:
    """The query `explain` is asked about: its text, and filters given as a JSON object.

    Raises:
        InvalidInputError: the filters are no JSON object, or the query is invalid.
    """
    try:
        parsed = json.loads(filters) if filters else {}
    except ValueError as error:
        raise InvalidInputError("--filters", filters, f"is not JSON ({error})") from None
    if not isinstance(parsed, dict):
        raise InvalidInputError("--filters", filters, "must be a JSON object")
    try:
        return Query(id="explain", text=text, filters=parsed)
    except ValidationError as error:
        raise InvalidInputError("--query", text, describe_validation_error(error)) from None


def explain(settings: Settings, query: Query) -> Explanation:
    """Runs `query` through every stage of a run, in this process, and says what each did.

    Raises:
        RagEvidenceError: the store cannot be opened, the query cannot be embedded, or its
            recall failed (the error its dead letter would hold).
    """
    port = port_factory_for(settings)()
    try:
        return _explain(settings, query, port)
    finally:
        port.close()


def _explain(settings: Settings, query: Query, port: KnowledgeSearchPort) -> Explanation:
    (traced,) = trace(settings, [query], port, embedder_factory_for(settings))
    traced = _raised(traced)
    assert isinstance(traced, Traced)
    explained = Explanation(query, retrievers=_by_retriever(traced.recalled))
    for step in traced.steps:  # the run's own chain (see `chain`)
        field, record = _RECORDED.get(step.name, (step.name, _dropped))
        explained.record(field, record(step.before, step.after))
    explained.result = traced.result
    return explained


def _raised(outcome: Any) -> Any:
    if isinstance(outcome, DeadLetter):
        raise KnowledgeSearchError(f"{outcome.stage}: {outcome.error}")
    return outcome


def _row(candidate: Candidate, rank: int) -> Row:
    return {"rank": rank, "score": candidate.score, "evidence_key": candidate.evidence_key,
            "reasons": list(candidate.hit_reasons)}


def _by_retriever(candidates: list[Candidate]) -> dict[str, list[Row]]:
    """Each retriever's hits in its own order: rank, raw score, evidence key."""
    lists: dict[str, list[Row]] = {}
    for candidate in candidates:
        (retriever,) = candidate.retrievers
        lists.setdefault(retriever.reason, []).append(
            {"rank": retriever.rank, "score": retriever.score,
             "evidence_key": candidate.evidence_key, "doc_id": candidate.doc_id})
    return lists


def _merged(before: list[Candidate], after: list[Candidate]) -> list[Row]:
    """The candidates folded into a higher-ranked one of the same key (KeyedDedup)."""
    survivors = {c.evidence_key: c for c in after}
    merged = []
    for candidate in ranked(before):
        kept = survivors[candidate.evidence_key]
        if candidate.recall_order != kept.recall_order:  # not the survivor itself
            merged.append({"evidence_key": candidate.evidence_key, "score": candidate.score,
                           "reasons": list(candidate.hit_reasons),
                           "into": f"{kept.evidence_key} ({', '.join(kept.hit_reasons)})"})
    return merged


def _dropped(before: list[Candidate], after: list[Candidate]) -> list[Row]:
    """The candidates of `before` that `after` lacks, with their rank in `before`."""
    kept = {c.evidence_key for c in after}
    return [{"rank": rank, "evidence_key": c.evidence_key, "doc_id": c.doc_id,
             "score": c.score}
            for rank, c in enumerate(ranked(before), start=1) if c.evidence_key not in kept]


def _ranked_rows(_: list[Candidate], after: list[Candidate]) -> list[Row]:
    return [_row(c, rank) for rank, c in enumerate(ranked(after), start=1)]


def _in_order(_: list[Candidate], after: list[Candidate]) -> list[Row]:
    return [_row(c, rank) for rank, c in enumerate(after, start=1)]


_RECORDED: dict[str, tuple[str, Callable[[list[Candidate], list[Candidate]], list[Row]]]] = {
    "RrfFusion": ("fused", _ranked_rows),
    "KeyedDedup": ("merged", _merged),
    "PerDocCap": ("capped", _dropped),
    "ScoreFloor": ("below_min_score", _dropped),
    "TopN": ("kept", _in_order),
}
"""What `explain` shows of each stage of the chain, and in which field; a stage not named here
shows what it dropped, under `dropped_by`."""
