"""Queries through a run's own stages in this process, keeping what each stage was given and
kept: what `explain` shows of one query and `eval`'s loss funnel counts over many. The stages
are the chain of `chain`, called by the same functions as the Beam steps, so neither can drift
from `run`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from connectors.embedder_port import EmbedderFactory, EmbedderPort
from connectors.search_port import ContinuablePort, KnowledgeSearchPort, LateContentPort, can
from core.errors import RagEvidenceError
from pipeline.config.settings import Settings
from pipeline.run.chain import FETCH_CONTENT, candidate_chain, planned, sees_query
from stages.embed import embed_queries, needs_embedding
from stages.fetch_content import with_contents
from stages.fetch_vectors import with_vectors
from stages.identity import candidates_of
from stages.models import Candidate, DeadLetter, EmbeddedQuery, Query, QueryCandidates, QueryResult
from stages.projection import assemble_result
from stages.recall import recall_batch
from stages.step_views import StepView


@dataclass(frozen=True)
class StageStep:
    """One candidate stage on one query: its name (its Beam label), the candidates before and
    after it, and how `explain` shows it."""

    name: str
    before: list[Candidate]
    after: list[Candidate]
    view: StepView
    """How `explain` shows the step (`CandidateStep.shown`)."""


@dataclass(frozen=True)
class Traced:
    """One query's way: what recall found (after IdentityNormalize), each candidate stage, and
    the result with its Agent projection."""

    query: Query
    recalled: list[Candidate]
    steps: list[StageStep]
    result: QueryResult


def trace(settings: Settings, queries: Sequence[Query], port: KnowledgeSearchPort,
          embedder_factory: EmbedderFactory | None = None) -> list[Traced | DeadLetter]:
    """Each query through embedding, recall (one port call), the candidate chain, contents and
    projection; a query that fails becomes its dead letter, as in a run. The embedder is built
    (by `embedder_factory`) only when a query needs one."""
    rag = settings.rag
    embedded: list[EmbeddedQuery | DeadLetter]
    if rag.recall.mode == "lexical":  # a run embeds nothing then (see `chain.step_names`)
        embedded = [EmbeddedQuery(query=q) for q in queries]
    else:
        embedder: EmbedderPort | RagEvidenceError = RagEvidenceError("nothing to embed")
        if any(needs_embedding(q) for q in queries):
            embedder = embedder_factory() if embedder_factory else RagEvidenceError(
                "text queries need an embedder")
        embedded = embed_queries(queries, embedder)
    ready = [e for e in embedded if isinstance(e, EmbeddedQuery)]
    chain = candidate_chain(rag)
    recalled = iter(recall_batch(ready, port, rag.retrieve_k, rag.recall.mode,
                                 rag.max_sub_queries, sees_query(chain)))
    read = cast(LateContentPort, port).contents if can(port, "contents") else None
    vectors = cast(ContinuablePort, port).vectors_of if can(port, "vectors_of") else None
    traced: list[Traced | DeadLetter] = []
    for query, outcome in zip(queries, embedded, strict=True):
        hits = next(recalled) if isinstance(outcome, EmbeddedQuery) else outcome
        if isinstance(hits, DeadLetter):
            traced.append(hits)
            continue
        found = candidates_of(hits)
        element: QueryCandidates | DeadLetter = QueryCandidates(query.id, tuple(found),
                                                                hits.query)
        steps = []
        for step in planned(chain):
            assert isinstance(element, QueryCandidates)
            if isinstance(step, str):
                element = (with_contents(element, read) if step == FETCH_CONTENT
                           else with_vectors(element, vectors))
                if isinstance(element, DeadLetter):
                    break
                continue
            try:
                after = step.apply(element.candidates, element.query)
            except RagEvidenceError as error:  # as a run dead-letters what a step raises
                element = DeadLetter(stage="internal", query_id=query.id,
                                     error=f"{step.name}: {error}")
                break
            steps.append(StageStep(step.name, list(element.candidates), after, step.shown))
            element = element._replace(candidates=tuple(after))
        if isinstance(element, DeadLetter):
            traced.append(element)
            continue
        traced.append(Traced(query, found, steps, assemble_result(element, settings.projection)))
    return traced
