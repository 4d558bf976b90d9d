"""`rag-evidence explain`: where one query's evidence came from and where the rest went, stage
by stage, computed by the same stage functions as `run`."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from connectors.search_port import KnowledgeSearchPort
from core.errors import InvalidInputError, KnowledgeSearchError
from pipeline.config.backends import embedder_factory_for, port_factory_for
from pipeline.config.settings import Settings
from pipeline.io.validation_messages import describe_validation_error
from pipeline.run.chain import every_json_field
from pipeline.run.trace import Traced, trace
from stages.models import Candidate, DeadLetter, Query, QueryResult
from stages.step_views import Row, StepView


@dataclass(frozen=True)
class ShownStep:
    """What one candidate step did to the query, as its view shows it."""

    name: str
    view: StepView
    rows: list[Row]


@dataclass
class Explanation:
    """One query's way: each retriever's hits, then each candidate step of the run's chain
    (`pipeline.run.chain`), in order, as the step's view shows it, then the result."""

    query: Query
    retrievers: dict[str, list[Row]] = field(default_factory=dict)
    steps: list[ShownStep] = field(default_factory=list)
    result: QueryResult | None = None
    fields: list[str] = field(default_factory=list)
    """The JSON fields of every step of the chain, in order: one that did not run is empty."""

    def to_dict(self) -> dict[str, Any]:
        """Each step's rows under its view's field (a step without one: under `dropped_by`,
        by its name; one that did not run: empty), in chain order, between the retrievers and
        the result."""
        ran = {step.view.field: step.rows for step in self.steps if step.view.field}
        by_field = {name: ran.get(name, []) for name in dict.fromkeys([*self.fields, *ran])}
        dropped_by = {step.name: step.rows for step in self.steps if not step.view.field}
        return {"query": self.query.model_dump(exclude_none=True),
                "retrievers": self.retrievers, **by_field,
                **({"dropped_by": dropped_by} if dropped_by else {}),
                "result": self.result.model_dump(mode="json") if self.result else None}


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
    shown = []
    for step in traced.steps:  # the run's own chain (see `chain`)
        shown.append(ShownStep(step.name, step.view, step.view.rows(step.before, step.after)))
    return Explanation(query, _by_retriever(traced.recalled), shown, traced.result,
                       every_json_field())


def _raised(outcome: Any) -> Any:
    if isinstance(outcome, DeadLetter):
        raise KnowledgeSearchError(f"{outcome.stage}: {outcome.error}")
    return outcome


def _by_retriever(candidates: list[Candidate]) -> dict[str, list[Row]]:
    """Each retriever's hits in its own order: rank, raw score, evidence key."""
    lists: dict[str, list[Row]] = {}
    for candidate in candidates:
        (retriever,) = candidate.retrievers
        lists.setdefault(retriever.reason, []).append(
            {"rank": retriever.rank, "score": retriever.score,
             "evidence_key": candidate.evidence_key, "doc_id": candidate.doc_id})
    return lists
