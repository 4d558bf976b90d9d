"""Queries through a run's own stages in this process, keeping what each stage was given and
kept: what `explain` shows of one query and `eval`'s loss funnel counts over many. The stages
are the chain of `chain`, called by the same functions as the Beam steps, so neither can drift
from `run`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from connectors.embedder_port import EmbedderFactory, EmbedderPort
from connectors.search_port import KnowledgeSearchPort, LateContentPort, can
from core.errors import RagEvidenceError
from pipeline.config.settings import Settings
from pipeline.run.chain import candidate_chain
from stages.embed import embed_queries, needs_embedding
from stages.fetch_content import with_contents
from stages.identity import candidates_of
from stages.models import Candidate, DeadLetter, EmbeddedQuery, Query, QueryCandidates, QueryResult
from stages.projection import assemble_result
from stages.recall import recall_batch


@dataclass(frozen=True)
class StageStep:
    """One candidate stage on one query: its name (its Beam label) and
    the candidates before and after it."""

    name: str
    before: list[Candidate]
    after: list[Candidate]


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
    recalled = iter(recall_batch(ready, port, rag.retrieve_k, rag.recall.mode,
                                 rag.max_sub_queries))
    read = cast(LateContentPort, port).contents if can(port, "contents") else None
    chain = candidate_chain(rag)
    traced: list[Traced | DeadLetter] = []
    for query, outcome in zip(queries, embedded, strict=True):
        hits = next(recalled) if isinstance(outcome, EmbeddedQuery) else outcome
        if isinstance(hits, DeadLetter):
            traced.append(hits)
            continue
        found = candidates_of(hits)
        steps, kept = [], found
        for step in chain:
            after = step.fn(kept)
            steps.append(StageStep(step.name, kept, after))
            kept = after
        fetched = with_contents(QueryCandidates(query.id, tuple(kept)), read)
        if isinstance(fetched, DeadLetter):
            traced.append(fetched)
            continue
        traced.append(Traced(query, found, steps, assemble_result(fetched, settings.projection)))
    return traced
