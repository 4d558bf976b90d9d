"""ElasticsearchPort: the KnowledgeSearchPort over dense_vector kNN, one `_msearch` per batch."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from elastic_transport import ConnectionTimeout, TransportError
from elasticsearch import ApiError, Elasticsearch

from connectors.elasticsearch.client import open_client
from connectors.elasticsearch.config import ElasticsearchConfig
from connectors.elasticsearch.events import ES_BACKOFF_MS, ES_FAILURES, ES_REQUESTS, ES_RETRIES
from connectors.elasticsearch.index_check import IndexFacts, check_index
from connectors.elasticsearch.layouts import hit_metadata, source_filter
from connectors.elasticsearch.retry import (
    EventHook,
    backoff_seconds,
    describe,
    describe_body,
    ignore_event,
    is_retryable_exception,
    is_retryable_status,
)
from connectors.elasticsearch.score_scale import cosine_scale
from connectors.embedder_port import EmbedderInfo
from connectors.errors import (
    DimensionMismatchError,
    KnowledgeSearchError,
    SearchRejectedError,
    SearchUnavailableError,
)
from connectors.search_port import SearchHit, SearchOutcome, SearchRequest


class ElasticsearchPort:
    """kNN search on a `dense_vector` field and BM25 `match` on the content field, every
    request of a batch one sub-search of one `_msearch`; retries live here and only here.

    Retried, with exponential backoff and jitter up to `retry.max_attempts` attempts: 429, 502,
    503, 504 (whole request or one sub-search), timeouts and connection errors. Never retried: a
    circuit breaker with durability PERMANENT, and every other 4xx. A request that still fails
    gets its own `SearchUnavailableError` (or `SearchRejectedError`), with the earlier errors on it.

    >>> config = ElasticsearchConfig(("http://localhost:9200",), "chunks")
    >>> port = ElasticsearchPort.open(config)  # doctest: +SKIP
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
        client = open_client(config, environ)
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

    def search(self, requests: Sequence[SearchRequest]) -> list[SearchOutcome]:
        outcomes: list[SearchOutcome | None] = [self._invalid(r) for r in requests]
        pending = [i for i, outcome in enumerate(outcomes) if outcome is None]
        size = self._config.max_searches_per_request
        for start in range(0, len(pending), size):
            self._search_group(requests, pending[start:start + size], outcomes)
        return [o if o is not None else [] for o in outcomes]

    def _search_group(self, requests: Sequence[SearchRequest], group: list[int],
                      outcomes: list[SearchOutcome | None]) -> None:
        """One `_msearch` for `group`, retried; when it times out, each half is searched on
        its own, so that one heavy sub-search fails alone instead of sinking the others."""
        pending = group
        history: dict[int, list[str]] = {i: [] for i in group}
        for attempt in range(1, self._config.retry.max_attempts + 1):
            if not pending:
                return
            if attempt > 1:
                self._back_off(attempt - 1)
            pending, timed_out = self._attempt(requests, pending, outcomes, history)
            if timed_out and len(pending) > 1:
                middle = len(pending) // 2
                self._search_group(requests, pending[:middle], outcomes)
                self._search_group(requests, pending[middle:], outcomes)
                return
        for i in pending:
            self._on_event(ES_FAILURES, 1)
            outcomes[i] = SearchUnavailableError(
                f"search failed after {self._config.retry.max_attempts} attempts; last error: "
                f"{history[i][-1]}; earlier: {history[i][:-1]}")

    def close(self) -> None:
        self._client.close()

    def _attempt(self, requests: Sequence[SearchRequest], pending: list[int],
                 outcomes: list[SearchOutcome | None], history: dict[int, list[str]]
                 ) -> tuple[list[int], bool]:
        """One `_msearch`; returns the sub-searches to retry, and whether the request timed
        out as a whole."""
        searches: list[dict[str, Any]] = []
        for i in pending:
            searches += [{"index": self._config.index}, self._body(requests[i])]
        self._on_event(ES_REQUESTS, 1)
        try:
            responses = self._client.msearch(searches=searches).body["responses"]
        except (TransportError, ApiError) as error:
            for i in pending:
                history[i].append(describe(error))
            if is_retryable_exception(error):
                return pending, isinstance(error, ConnectionTimeout)
            self._fail(pending, outcomes, SearchRejectedError(describe(error)))
            return [], False
        retry = []
        for i, response in zip(pending, responses, strict=True):
            status = int(response.get("status", 200))
            if "error" not in response:
                knn = requests[i].vector is not None
                outcomes[i] = [self._hit(h, knn) for h in response["hits"]["hits"]]
                continue
            history[i].append(describe_body(status, response))
            if is_retryable_status(status, response):
                retry.append(i)
            else:
                self._fail([i], outcomes, SearchRejectedError(describe_body(status, response)))
        return retry, False

    def _fail(self, indexes: list[int], outcomes: list[SearchOutcome | None],
              error: KnowledgeSearchError) -> None:
        for i in indexes:
            self._on_event(ES_FAILURES, 1)
            outcomes[i] = error

    def _back_off(self, retry_number: int) -> None:
        seconds = backoff_seconds(self._config.retry, retry_number, self._rng)
        self._on_event(ES_RETRIES, 1)
        self._on_event(ES_BACKOFF_MS, int(seconds * 1000))
        self._sleep(seconds)

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

    def _body(self, request: SearchRequest) -> dict[str, Any]:
        if request.text is not None:
            return self._match_body(request, request.text)
        assert request.vector is not None
        config = self._config
        knn: dict[str, Any] = {
            "field": config.vector_field,
            "query_vector": list(request.vector),
            "k": request.k,
            "num_candidates": config.candidates_for(request.k),
        }
        if request.filters:
            knn["filter"] = self._filters(request)
        if config.similarity is not None:
            knn["similarity"] = config.similarity
        return {"knn": knn, "size": request.k, "_source": self._source_filter()}

    def _match_body(self, request: SearchRequest, text: str) -> dict[str, Any]:
        """BM25 on the content field; filters as non-scoring filters."""
        query = {"bool": {"must": [{"match": {self._config.content_field: text}}],
                          "filter": self._filters(request)}}
        return {"query": query, "size": request.k, "_source": self._source_filter()}

    def _filters(self, request: SearchRequest) -> list[dict[str, Any]]:
        paths = self._facts.filter_paths
        return [_term(paths.get(f) or self._config.field_path(f), v)
                for f, v in request.filters.items()]

    def _source_filter(self) -> dict[str, list[str]]:
        config = self._config
        return source_filter(config.layout, config.vector_field, config.content_field,
                             config.metadata_field)

    def _hit(self, raw: Mapping[str, Any], knn: bool) -> SearchHit:
        """A hit in the port's terms: kNN scores on the (1 + cosine) / 2 scale, metadata as
        the layout keeps it."""
        config = self._config
        source = dict(raw.get("_source") or {})
        content = source.pop(config.content_field, "")
        if config.metadata_field is None:
            source.pop(config.vector_field, None)
            metadata = source
        else:
            metadata = dict(source.get(config.metadata_field) or {})
        score = float(raw.get("_score") or 0.0)
        return SearchHit(id=raw.get("_id"), score=self._knn_score(score) if knn else score,
                         content=str(content), metadata=hit_metadata(config.layout, metadata))


def _term(path: str, value: Any) -> dict[str, Any]:
    if isinstance(value, list):
        return {"terms": {path: value}}
    return {"term": {path: value}}
