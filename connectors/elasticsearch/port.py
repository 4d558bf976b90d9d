"""ElasticsearchPort: the KnowledgeSearchPort over dense_vector kNN, one `_msearch` per batch."""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from typing import Any, TypeVar

import numpy as np
from elasticsearch import Elasticsearch

from connectors.elasticsearch.client import open_client
from connectors.elasticsearch.config import ElasticsearchConfig
from connectors.elasticsearch.failures import describe_body, is_retryable_status, not_an_answer
from connectors.elasticsearch.index_check import IndexFacts, check_index
from connectors.elasticsearch.layouts import hit_metadata, identity_source_filter, source_filter
from connectors.elasticsearch.retry import call_with_retries, retry_each
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
from core.errors import (
    DimensionMismatchError,
    KnowledgeSearchError,
    SearchRejectedError,
    SearchUnavailableError,
)
from core.vectors import NO_DIRECTION, unit_rows

MAX_CANDIDATES = 10_000
"""Elasticsearch's limit on a kNN search's `num_candidates` (and so on its `k`)."""
_NO_HITS = ChunkHits([], [], [], [], [])

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
        return self._answers(requests, source, self._chunk_hits, _NO_HITS)

    def search_among(self, requests: Sequence[SearchRequest], among: Sequence[Sequence[str]],
                     above: Sequence[float], shared: Sequence[str] = ()) -> list[ChunkOutcome]:
        """See `ContinuablePort`: each request searched as `search_chunks` searches it, its
        filters with an `ids` filter of the chunks named, so that every score is the one a
        search of the whole index gives; the hits above `above[i]` kept."""
        config = self._config
        source = identity_source_filter(config.layout, config.content_field,
                                        config.metadata_field)
        named = [list(dict.fromkeys([*ids, *shared])) for ids in among]
        outcomes = self._answers(requests, source, self._chunk_hits, _NO_HITS, named)
        return [outcome if isinstance(outcome, KnowledgeSearchError) else
                outcome.part(0, sum(1 for s in outcome.scores if s > bound))
                for outcome, bound in zip(outcomes, above, strict=True)]

    def vectors_of(self, ids: Sequence[str]) -> np.ndarray:
        """See `ContinuablePort`: the vectors as the index holds them, made unit. Raises
        `SearchRejectedError` for an index that scores quantized vectors (the vectors do not
        give its scores: each query is then continued by `search_among`)."""
        if self._facts.quantized:
            raise SearchRejectedError(f"index {self._config.index!r} scores quantized vectors")
        sources = self._sources(ids, [self._config.vector_field])
        vectors = [_vector_at(source, self._config.vector_field) for source in sources]
        rows, _ = unit_rows(vectors) if vectors else (np.empty((0, self.dimension)), None)
        return np.asarray(rows, dtype=np.float32)

    def scores_of(self, vectors: np.ndarray, ids: Sequence[Sequence[str]]
                  ) -> list[np.ndarray]:
        """See `ContinuablePort`: each row a kNN search among the chunks it names."""
        requests = [SearchRequest.model_construct(vector=tuple(row), text=None,
                                                  k=max(len(named), 1), filters={})
                    for row, named in zip(vectors.tolist(), ids, strict=True)]
        found = self.search_among(requests, ids, [-math.inf] * len(requests))
        scores = []
        for named, hits in zip(ids, found, strict=True):
            if isinstance(hits, KnowledgeSearchError):
                raise hits
            by_id = dict(zip(hits.ids, hits.scores, strict=True))
            missing = [i for i in named if i not in by_id]
            if missing:
                raise KnowledgeSearchError(f"index {self._config.index!r} holds no chunk "
                                           f"{missing[0]!r}")
            scores.append(np.asarray([by_id[i] for i in named], dtype=np.float64))
        return scores

    def hits_of(self, ids: Sequence[Sequence[str]], scores: Sequence[Sequence[float]]
                ) -> list[ChunkHits]:
        """See `ContinuablePort`: identities and contents read as `search_chunks` reads
        them."""
        config = self._config
        every = [i for named in ids for i in named]
        source = identity_source_filter(config.layout, config.content_field,
                                        config.metadata_field)
        raws: list[Mapping[str, Any]] = [{"_id": i, "_source": s, "_score": 0.0}
                for i, s in zip(every, self._sources(every, source["includes"]), strict=True)]
        read = iter(self._chunk_hits(raws, False))
        hits = []
        for named, given in zip(ids, scores, strict=True):
            part = [next(read) for _ in named]
            hits.append(ChunkHits([h.id for h in part], [float(s) for s in given],
                                  [h.identity for h in part], [h.content for h in part],
                                  [None] * len(part)))
        return hits

    def _sources(self, ids: Sequence[str], fields: list[str]) -> list[Mapping[str, Any]]:
        """The `_source` (of `fields`) of each chunk `ids` names, in order, by `_mget`.

        Raises:
            KnowledgeSearchError: a chunk the index does not hold, or a request that kept
                failing.
        """
        config, found = self._config, []
        size = config.max_searches_per_request * 10
        for start in range(0, len(ids), size):
            part = list(ids[start:start + size])
            body = call_with_retries(partial(self._mget, part, fields), config.retry,
                                     f"reading chunks of {config.index!r}", config.hosts,
                                     on_event=self._on_event)
            docs = body.get("docs") if isinstance(body, dict) else None
            if not isinstance(docs, list) or len(docs) != len(part):
                raise SearchUnavailableError(not_an_answer("_mget", body))
            for chunk_id, doc in zip(part, docs, strict=True):
                if not isinstance(doc, dict) or not doc.get("found"):
                    raise KnowledgeSearchError(f"index {config.index!r} holds no chunk "
                                               f"{chunk_id!r}")
                found.append(doc.get("_source") or {})
        return found

    def _mget(self, ids: list[str], fields: list[str]) -> Any:
        return self._client.mget(index=self._config.index, ids=ids, source=fields).body

    def _answers(self, requests: Sequence[SearchRequest], source: dict[str, list[str]],
                 read: Callable[[list[Mapping[str, Any]], bool], H], empty: H,
                 among: Sequence[list[str]] | None = None) -> list[H | KnowledgeSearchError]:
        """Each request's hits read by `read`, or its error: every request one sub-search of
        an `_msearch`, retried by the adapter's one loop; with `among`, request i searches
        only the chunks `among[i]` names (none: no hits)."""
        outcomes: list[H | KnowledgeSearchError | None] = [self._invalid(r) for r in requests]
        directions = _directions(requests, outcomes)
        bodies: dict[int, dict[str, Any]] = {}  # built once, sent by every attempt
        for i, request in enumerate(requests):
            if outcomes[i] is None and among is not None and not among[i]:
                outcomes[i] = empty
            elif outcomes[i] is None:
                body = self._body(request, source, directions.get(i),
                                  None if among is None else among[i])
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
              direction: list[float] | None, among: list[str] | None = None
              ) -> dict[str, Any] | None:
        """The sub-search of `request`, fetching `source`, among the chunks `among` names
        when given; None for a vector without a `direction` (see `_directions`)."""
        k = request.k if among is None else min(request.k, len(among), MAX_CANDIDATES)
        filters = self._filters(request, among)
        if request.text is not None:
            return self._match_body(request.text, k, filters, source)
        if direction is None:
            return None
        config = self._config
        candidates = config.candidates_for(k)
        knn: dict[str, Any] = {
            "field": config.vector_field,
            "query_vector": direction,
            "k": k,
            "num_candidates": candidates if among is None else
            min(max(candidates, len(among)), MAX_CANDIDATES),
        }
        if filters:
            knn["filter"] = filters
        if config.similarity is not None:
            knn["similarity"] = config.similarity
        return {"knn": knn, "size": k, "_source": source}

    def _match_body(self, text: str, k: int, filters: list[dict[str, Any]],
                    source: dict[str, list[str]]) -> dict[str, Any]:
        """BM25 on the content field; filters as non-scoring filters."""
        query = {"bool": {"must": [{"match": {self._config.content_field: text}}],
                          "filter": filters}}
        return {"query": query, "size": k, "_source": source}

    def _filters(self, request: SearchRequest, among: list[str] | None = None
                 ) -> list[dict[str, Any]]:
        """The request's filters, and an `ids` filter of the chunks `among` names."""
        paths = self._facts.filter_paths
        filters = [_term(paths.get(f) or self._config.field_path(f), v)
                   for f, v in request.filters.items()]
        return filters if among is None else [*filters, {"ids": {"values": among}}]

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


def _vector_at(source: Mapping[str, Any], path: str) -> list[float]:
    """The vector at dotted `path` of a chunk's `_source`."""
    node: Any = source
    for part in path.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
    if not isinstance(node, list):
        raise KnowledgeSearchError(f"a chunk holds no vector at {path!r}")
    return [float(x) for x in node]


def _term(path: str, value: Any) -> dict[str, Any]:
    if isinstance(value, list):
        return {"terms": {path: value}}
    return {"term": {path: value}}
