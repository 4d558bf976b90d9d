"""The KnowledgeSearchPort: the one boundary through which candidates are recalled."""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, cast, runtime_checkable

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from connectors.embedder_port import EmbedderInfo
from core.chunk_identity import Identity, resolve_identity
from core.errors import KnowledgeSearchError

FilterValue = str | int | float | bool


class SearchRequest(BaseModel):
    """One request: a kNN `vector` or a lexical (BM25) `text`, how many hits, and equality
    filters on metadata. Exactly one of `vector` and `text` is set."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    vector: tuple[float, ...] | None = None
    text: str | None = None
    k: int = Field(ge=1)
    filters: dict[str, FilterValue | list[FilterValue]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_kind(self) -> SearchRequest:
        if (self.vector is None) == (self.text is None):
            raise ValueError("a search request needs exactly one of `vector` and `text`")
        return self


class SearchHit(BaseModel):
    """One hit as the backend reports it. A kNN hit's `score` is on the (1 + cosine) / 2
    scale; a lexical hit's is the backend's BM25 score (positive, unbounded)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str | None
    score: float
    content: str
    metadata: dict[str, Any] = Field(default_factory=dict)


SearchOutcome = list[SearchHit] | KnowledgeSearchError


ContentRef = tuple[str, int]
"""Where a hit's content is, for a port that reads it late: the store version the hit came
from, and its row there."""


class ChunkHit(NamedTuple):
    """One hit as the pipeline sees it: its id and score, its identity resolved from its
    metadata, and its content, or (`content` None) where to read it once it is known to be
    needed (`ref`, see `LateContentPort`)."""

    id: str | None
    score: float
    identity: Identity
    content: str | None = None
    ref: ContentRef | None = None

    @classmethod
    def of(cls, hit: SearchHit) -> ChunkHit:
        """A port's `SearchHit` (content and metadata given)."""
        return cls(hit.id, hit.score, resolve_identity(hit.metadata), hit.content)


@dataclass(frozen=True)
class ChunkHits:
    """One request's hits, best first, as columns (one list per field of `ChunkHit`): what
    flows from a port into the pipeline, without an object per hit."""

    ids: Sequence[str | None]
    scores: Sequence[float]
    identities: Sequence[Identity]
    contents: Sequence[str | None]
    refs: Sequence[ContentRef | None]

    def __len__(self) -> int:
        return len(self.ids)

    def __iter__(self) -> Iterator[ChunkHit]:
        """The hits one by one."""
        return map(ChunkHit, self.ids, self.scores, self.identities, self.contents, self.refs)

    def part(self, start: int, end: int) -> ChunkHits:
        """The hits from `start` to `end` (not included)."""
        return ChunkHits(self.ids[start:end], self.scores[start:end],
                         self.identities[start:end], self.contents[start:end],
                         self.refs[start:end])

    @classmethod
    def of(cls, hits: Sequence[SearchHit]) -> ChunkHits:
        """A port's `SearchHit`s (contents and metadata given)."""
        return cls([h.id for h in hits], [h.score for h in hits],
                   [resolve_identity(h.metadata) for h in hits], [h.content for h in hits],
                   [None] * len(hits))


ChunkOutcome = ChunkHits | KnowledgeSearchError


@runtime_checkable
class KnowledgeSearchPort(Protocol):
    """Answers batches of kNN and lexical (BM25) requests.

    Contract:
    - `search` returns exactly one outcome per request, in request order: the hits, best
      first, at most `k` of them, or the `KnowledgeSearchError` that failed that request
      alone (a wrong dimension, a rejected filter, a sub-request that kept failing).
    - `search` raises `KnowledgeSearchError` (usually `SearchUnavailableError`) only when the
      whole batch failed, after whatever retries the adapter does.
    - A filter value that is a list matches any of its items; several filters all must match.
    - A lexical request returns only chunks that match at least one of its terms.
    - `dimension` is the vector length the store holds; `embedder` is what the store records
      about the embedder that built it (None when it records nothing).
    - `close` releases connections and files; the port is not used after it.
    - A port may also have `metadata_keys` (a frozenset): the metadata keys its chunks carry,
      so that a run can warn of a filter that can match nothing.
    """

    @property
    def dimension(self) -> int: ...

    @property
    def embedder(self) -> EmbedderInfo | None: ...

    def search(self, requests: Sequence[SearchRequest]) -> list[SearchOutcome]: ...

    def close(self) -> None: ...


PortFactory = Callable[[], KnowledgeSearchPort]
"""A picklable callable that opens a port; DoFns call it in `setup`, never pickling a client."""


@runtime_checkable
class ColumnPort(KnowledgeSearchPort, Protocol):
    """A port that answers in columns (`ChunkHits`), its hits' identities resolved, without an
    object per hit.

    Contract, besides `KnowledgeSearchPort`'s: `search_chunks` answers as `search` does; a hit's
    content is given, or (a `LateContentPort`) None with a ref saying where it is.
    """

    def search_chunks(self, requests: Sequence[SearchRequest]) -> list[ChunkOutcome]: ...


@runtime_checkable
class LateContentPort(ColumnPort, Protocol):
    """A port that answers without reading contents, and reads them only for the hits that
    survive post-processing (late materialization).

    Contract, besides `ColumnPort`'s: `contents(refs)` returns the content of each ref, in
    order; a ref of another version of the store than the one this port reads is read from
    that version, while it exists. Raises `KnowledgeSearchError` when a ref cannot be read.
    """

    def contents(self, refs: Sequence[ContentRef]) -> list[str]: ...


@runtime_checkable
class ParallelPort(ColumnPort, Protocol):
    """A port that may be searched from several threads at once: Recall then searches that
    many batches at a time, on worker threads, while its own thread answers the batches
    before (a port without these methods is searched one batch at a time, on Recall's thread).

    Contract: `parallel_searches()` is how many `search_chunks` calls may run at once (below
    2: one at a time); `on_search_thread()` is called once on each thread before its first
    search (the embedded store has faiss use one core there).
    """

    def parallel_searches(self) -> int: ...

    def on_search_thread(self) -> None: ...


@runtime_checkable
class ContinuablePort(ColumnPort, Protocol):
    """A port that can search a few named chunks exactly: what a run continued from the
    previous night's candidates asks of the store (see `stages.continuation`).

    Contract, besides `ColumnPort`'s: `search_among(requests, among, above, shared)` answers
    each kNN or BM25 request exactly, among the chunks whose ids `among[i]` or `shared` (the
    same for every request) name, that match its filters (ids the store does not hold are
    passed over),
    keeping the hits that score strictly above `above[i]`, at most `k`, best first: the same
    ids, scores and order a search of the whole store gives those chunks. `vectors_of(ids)`
    gives the unit float32 vectors of the chunks `ids` names that the store holds, one row
    each in the order named, as `search_among` scores them before it scores exactly.
    `scores_of(vectors, ids)` gives, for each unit query vector (`core.vectors.unit_rows`),
    the exact scores of the chunks `ids[i]` names, in the order named, as `search_among`
    scores them; `hits_of(ids, scores)` gives the hits of named chunks with the scores given
    (identities and references as `search_among` gives them). Both raise
    `KnowledgeSearchError` for an id the store does not hold.
    """

    def vectors_of(self, ids: Sequence[str]) -> np.ndarray: ...

    def scores_of(self, vectors: np.ndarray, ids: Sequence[Sequence[str]]
                  ) -> list[np.ndarray]: ...

    def hits_of(self, ids: Sequence[Sequence[str]], scores: Sequence[Sequence[float]]
                ) -> list[ChunkHits]: ...

    def search_among(self, requests: Sequence[SearchRequest], among: Sequence[Sequence[str]],
                     above: Sequence[float], shared: Sequence[str] = ()
                     ) -> list[ChunkOutcome]: ...


@runtime_checkable
class AuditablePort(Protocol):
    """A port whose index may be approximate and that can also search exactly:
    `exact_ids(vectors, k)` gives each unit query vector's exact top `k` ids over the whole
    store, best first (what an audit of a continued list compares it with)."""

    def exact_ids(self, vectors: np.ndarray, k: int) -> list[list[str]]: ...


def can(port: object, method: str) -> bool:
    """Whether `port` has `method` (`search_chunks`, `contents`): asked once per port type, since
    a protocol's `isinstance` costs more than a search of one query."""
    return _can(cast(Hashable, type(port)), method)


@functools.cache
def _can(port_type: Hashable, method: str) -> bool:
    return callable(getattr(port_type, method, None))
