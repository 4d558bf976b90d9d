"""ElasticsearchPort: the KnowledgeSearchPort over dense_vector kNN, one `_msearch` per batch."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from elasticsearch import Elasticsearch

from connectors.elasticsearch.client import open_client
from connectors.elasticsearch.config import ElasticsearchConfig
from connectors.elasticsearch.failures import describe_body, is_retryable_status, not_an_answer
from connectors.elasticsearch.index_check import IndexFacts, check_index
from connectors.elasticsearch.layouts import hit_metadata, identity_source_filter, source_filter
from connectors.elasticsearch.retry import retry_each
from connectors.elasticsearch.score_scale import cosine_scale
from connectors.embedder_port import EmbedderInfo
from connectors.events import EventHook, ignore_event
from connectors.retry import Done, ItemOutcome, Reject, Retry
from connectors.search_port import (
    ChunkHits,
    ChunkOutcome,
    SearchHit,
    SearchOutcome,
    SearchRequest,
)
from core.chunk_identity import resolve_identity
from core.errors import DimensionMismatchError, KnowledgeSearchError, SearchRejectedError
from core.vectors import NO_DIRECTION, unit_rows

H = TypeVar("H")
"""What one sub-search's hits are read as: `SearchHit`s, or `ChunkHits`."""


class ElasticsearchPort:
    """kNN search on a `dense_vector` field and BM25 `match` on the content field, every
    request of a batch one sub-search of one `_msearch`, retried by the adapter's one loop
    (`retry.retry_each`).

    Retried, with exponential backoff and jitter up to `retry.max_attempts` attempts: 429, 502,
    503, 504 (whole request or one sub-search), timeouts and connection errors; a timed-out
    request is sent again in halves. Never retried: a circuit breaker with durability
    PERMANENT, and every other 4xx. A request that still fails gets its own
    `SearchUnavailableError` (or `SearchRejectedError`), with the earlier errors on it.

    Usage::

        config = ElasticsearchConfig(("http://localhost:9200",), "chunks")
        port = ElasticsearchPort.open(config)
    """

    def __init__(self, client: Elasticsearch, config: ElasticsearchConfig, facts: IndexFacts, *,
                 on_event: EventHook = ignore_event,
                 sleep: Callable[[float], None] = time.sleep,
                 rng: random.Random | None = None) -> None:
        self._client = client
        self._config = config
        self._facts = facts
        self._knn_score = cosine_scale(facts.similarity)
        self._on_event = on_event
        self._sleep = sleep
        self._rng = rng or random.Random()

    @classmethod
    def open(cls, config: ElasticsearchConfig, on_event: EventHook = ignore_event,
             environ: Mapping[str, str] | None = None) -> ElasticsearchPort:
        """Connects and checks the index and vector field; fails fast naming the host."""
        client = open_client(config, environ, fast_json=True)
        try:
            facts = check_index(client, config)
        except Exception:
            client.close()
            raise
        return cls(client, config, facts, on_event=on_event)

    @property
    def dimension(self) -> int:
        return self._facts.dimension

    @property
    def embedder(self) -> EmbedderInfo | None:
        return self._facts.embedder

    @property
    def metadata_keys(self) -> frozenset[str]:
        """The metadata keys of the index's mapping (see `IndexFacts.metadata_keys`)."""
        return self._facts.metadata_keys

    def search(self, requests: Sequence[SearchRequest]) -> list[SearchOutcome]:
        config = self._config
        source = source_filter(config.layout, config.vector_field, config.content_field,
                               config.metadata_field)
        return self._answers(requests, source, self._hits, [])

    def search_chunks(self, requests: Sequence[SearchRequest]) -> list[ChunkOutcome]:
        """As `search`, in columns, fetching of each hit's `_source` only its content and the
        fields its identity is read from."""
        config = self._config
        source = identity_source_filter(config.layout, config.content_field,
                                        config.metadata_field)
        return self._answers(requests, source, self._chunk_hits, ChunkHits([], [], [], [], []))

    def _answers(self, requests: Sequence[SearchRequest], source: dict[str, list[str]],
                 read: Callable[[list[Mapping[str, Any]], bool], H], empty: H
                 ) -> list[H | KnowledgeSearchError]:
        """Each request's hits read by `read`, or its error: every request one sub-search of
        an `_msearch`, retried by the adapter's one loop."""
        outcomes: list[H | KnowledgeSearchError | None] = [self._invalid(r) for r in requests]
        directions = _directions(requests, outcomes)
        bodies: dict[int, dict[str, Any]] = {}  # built once, sent by every attempt
        for i, request in enumerate(requests):
            if outcomes[i] is None:
                body = self._body(request, source, directions.get(i))
                if body is None:
                    outcomes[i] = SearchRejectedError(f"vector {NO_DIRECTION}")
                else:
                    bodies[i] = body
        pending = list(bodies)
        size = self._config.max_searches_per_request
        for start in range(0, len(pending), size):
            group = pending[start:start + size]
            found = retry_each(group, lambda ids: self._msearch(requests, bodies, ids, read),
                               self._config.retry, what="search", hosts=self._config.hosts,
                               on_event=self._on_event, sleep=self._sleep, rng=self._rng,
                               split_timeouts=True)
            for i, outcome in found.items():
                outcomes[i] = outcome
        return [o if o is not None else empty for o in outcomes]

    def close(self) -> None:
        self._client.close()

    def _msearch(self, requests: Sequence[SearchRequest], bodies: dict[int, dict[str, Any]],
                 group: list[int], read: Callable[[list[Mapping[str, Any]], bool], H]
                 ) -> dict[int, ItemOutcome[H]]:
        """One `_msearch` for `group`: each sub-search's hits, or how it failed."""
        searches: list[dict[str, Any]] = []
        for i in group:
            searches += [{"index": self._config.index}, bodies[i]]
        body = self._client.msearch(searches=searches).body
        responses = body.get("responses") if isinstance(body, dict) else None
        if not isinstance(responses, list) or len(responses) != len(group) or not all(
                isinstance(r, dict) for r in responses):
            return dict.fromkeys(group, Retry(not_an_answer("_msearch", body)))
        outcomes: dict[int, ItemOutcome[H]] = {}
        for i, response in zip(group, responses, strict=True):
            status = int(response.get("status", 200))
            if "error" not in response:
                outcomes[i] = Done(read(response["hits"]["hits"], requests[i].vector is not None))
            elif is_retryable_status(status, response):
                outcomes[i] = Retry(describe_body(status, response))
            else:
                outcomes[i] = Reject(describe_body(status, response))
        return outcomes

    def _invalid(self, request: SearchRequest) -> KnowledgeSearchError | None:
        if request.vector is not None and len(request.vector) != self.dimension:
            mismatch = DimensionMismatchError("vector", len(request.vector), self.dimension)
            return SearchRejectedError(str(mismatch))
        undeclared = sorted(set(request.filters) - set(self._config.filter_fields))
        if undeclared:
            return SearchRejectedError(
                f"filters.{undeclared[0]}={request.filters[undeclared[0]]!r}: not a declared "
                f"filter field (search.elasticsearch.filter-fields="
                f"{list(self._config.filter_fields)!r})")
        return None

    def _body(self, request: SearchRequest, source: dict[str, list[str]],
              direction: list[float] | None) -> dict[str, Any] | None:
        """The sub-search of `request`, fetching `source`; None for a vector without a
        `direction` (see `_directions`)."""
        if request.text is not None:
            return self._match_body(request, request.text, source)
        if direction is None:
            return None
        config = self._config
        knn: dict[str, Any] = {
            "field": config.vector_field,
            "query_vector": direction,
            "k": request.k,
            "num_candidates": config.candidates_for(request.k),
        }
        if request.filters:
            knn["filter"] = self._filters(request)
        if config.similarity is not None:
            knn["similarity"] = config.similarity
        return {"knn": knn, "size": request.k, "_source": source}

    def _match_body(self, request: SearchRequest, text: str, source: dict[str, list[str]]
                    ) -> dict[str, Any]:
        """BM25 on the content field; filters as non-scoring filters."""
        query = {"bool": {"must": [{"match": {self._config.content_field: text}}],
                          "filter": self._filters(request)}}
        return {"query": query, "size": request.k, "_source": source}

    def _filters(self, request: SearchRequest) -> list[dict[str, Any]]:
        paths = self._facts.filter_paths
        return [_term(paths.get(f) or self._config.field_path(f), v)
                for f, v in request.filters.items()]

    def _hits(self, found: list[Mapping[str, Any]], knn: bool) -> list[SearchHit]:
        return [SearchHit(id=hit_id, score=score, content=content, metadata=metadata)
                for hit_id, score, content, metadata in self._read(found, knn)]

    def _chunk_hits(self, found: list[Mapping[str, Any]], knn: bool) -> ChunkHits:
        ids, scores, identities, contents = [], [], [], []
        for hit_id, score, content, metadata in self._read(found, knn):
            ids.append(hit_id)
            scores.append(score)
            identities.append(resolve_identity(metadata))
            contents.append(content)
        return ChunkHits(ids, scores, identities, contents, [None] * len(ids))

    def _read(self, found: list[Mapping[str, Any]], knn: bool
              ) -> Iterator[tuple[Any, float, str, dict[str, Any]]]:
        """Each hit in the port's terms: id, score (kNN on the (1 + cosine) / 2 scale),
        content, and metadata as the layout keeps it."""
        config = self._config
        for raw in found:
            source = dict(raw.get("_source") or {})
            content = source.pop(config.content_field, "")
            if config.metadata_field is None:
                source.pop(config.vector_field, None)
                metadata = source
            else:
                metadata = dict(source.get(config.metadata_field) or {})
            score = float(raw.get("_score") or 0.0)
            yield (raw.get("_id"), self._knn_score(score) if knn else score, str(content),
                   hit_metadata(config.layout, metadata))


def _directions(requests: Sequence[SearchRequest], outcomes: Sequence[object]
                ) -> dict[int, list[float]]:
    """The unit vector of each valid vector request that has a direction, by position: one
    numpy pass for the batch (per request, numpy's own calls cost more than the arithmetic)."""
    at, vectors = [], []
    for i, request in enumerate(requests):
        if request.vector is not None and outcomes[i] is None:  # valid: all of one length
            at.append(i)
            vectors.append(request.vector)
    if not at:
        return {}
    rows, usable = unit_rows(vectors)
    return {i: row for i, row, ok in zip(at, rows.tolist(), usable.tolist(), strict=True) if ok}


def _term(path: str, value: Any) -> dict[str, Any]:
    if isinstance(value, list):
        return {"terms": {path: value}}
    return {"term": {path: value}}
