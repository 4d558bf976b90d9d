"""The embedded store: kNN (faiss, exact or HNSW) over a memory-mapped float32 matrix, and BM25.

On disk a store is a directory of versions (see `versions`); each holds `vectors.npy` (unit
rows, float32), `records.jsonl` (id, content, metadata per row, same order) with
`records.offsets.npy` (where each line starts), `chunks.arrow` (id, identity and fingerprint
per row), `bm25/` (the lexical index), `hnsw.faiss` when built with `index: hnsw`, and
`manifest.json` (dimension, count, index kind, the embedder that built it), written last. An
open store reads one version until it is closed, whatever `index` commits meanwhile.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from connectors.embedded.chunk_table import RecordIdentities, RowIdentities
from connectors.embedded.hnsw_audit import AuditedGraph
from connectors.embedded.layout import (
    HNSW_FILE,
    LEXICAL_DIR,
    IndexKind,
    Manifest,
)
from connectors.embedded.lexical import LexicalIndex
from connectors.embedded.metadata_filter import FilterIndex
from connectors.embedded.records_file import Records
from connectors.embedded.row_search import RowOutcome, RowSearch
from connectors.embedded.vector_search import (
    DEFAULT_HNSW,
    HnswGraph,
    HnswParams,
    one_core_per_search,
)
from connectors.embedded.version_parts import disagree, opened_parts
from connectors.embedded.versions import VersionLease
from connectors.embedder_port import EmbedderInfo
from connectors.events import EventHook, ignore_event
from connectors.search_port import (
    ChunkHits,
    ChunkOutcome,
    ContentRef,
    SearchHit,
    SearchOutcome,
    SearchRequest,
)
from core.errors import ConfigError, KnowledgeSearchError, StoreNotFoundError

MAX_PARALLEL_SEARCHES = 8
"""Exact searches at once at most: beyond a few, the pipeline's Python around them, on one
thread, sets the pace, and each batch in flight holds its queries."""


class EmbeddedStore:
    """kNN by faiss in blocks of queries (exact, or an HNSW graph); BM25 for text.

    kNN scores are (1 + cosine) / 2, the scale Elasticsearch reports for cosine similarity;
    lexical scores are BM25 (Lucene's variant, as Elasticsearch's). A filtered kNN request is
    always exact, over the matching rows. `search` reads each hit's record from disk;
    `search_chunks` reads only the hits' ids and identities (from `chunks.arrow`), and
    `contents` the records of the hits that are kept (a `LateContentPort`).

    Usage::

        store = EmbeddedStore.open("data/store")
        store.search([SearchRequest(vector=(1.0, 0.0), k=3)])
    """

    def __init__(self, vectors: np.ndarray, records: Records,
                 lexical: LexicalIndex | None = None, embedder: EmbedderInfo | None = None,
                 graph: AuditedGraph | None = None, lease: VersionLease | None = None,
                 identities: RowIdentities | None = None, version: str | None = None,
                 metadata_keys: Sequence[str] | None = None) -> None:
        self._lease = lease
        self._metadata_keys = None if metadata_keys is None else frozenset(metadata_keys)
        self._vectors = vectors
        self._records = records
        self._embedder = embedder
        self._identities = identities or RecordIdentities(records)
        self._parallel = 1 if graph else min(os.cpu_count() or 1, MAX_PARALLEL_SEARCHES)
        self._rows = RowSearch(vectors, FilterIndex(records.metadata),
                               lexical or LexicalIndex(None, len(records)),
                               graph.neighbours if graph else None)
        self._version = version or (str(lease.folder) if lease else f"memory:{id(self)}")
        self._others: dict[str, EmbeddedStore] = {}
        self._row_of_id: dict[str, int] | None = None
        self._shared: tuple[tuple[str, ...], np.ndarray] | None = None
        self._closed = False

    @classmethod
    def open(cls, path: str | Path, index: IndexKind | None = None,
             hnsw: HnswParams = DEFAULT_HNSW, on_event: EventHook = ignore_event
             ) -> EmbeddedStore:
        """Opens the current version of a store directory (or the version folder `path`),
        holding it until `close`, memory-mapping its vectors and records; checks its parts
        agree. `index`, when given, is the kind the config expects the store to have; an
        HNSW search reports its audit (see `hnsw_audit`) to `on_event`.

        Raises:
            StoreNotFoundError: no store there, or its files disagree (named).
            ConfigError: the store was built with another index kind than `index`.
        """
        lease = VersionLease.take(Path(path))
        try:
            return cls._open_version(Path(path), lease, index, hnsw, on_event)
        except BaseException:
            lease.release()
            raise

    @classmethod
    def _open_version(cls, path: Path, lease: VersionLease, index: IndexKind | None,
                      hnsw: HnswParams, on_event: EventHook) -> EmbeddedStore:
        root = lease.folder
        manifest = Manifest.read(root)
        if index is not None and index != manifest.index:
            raise ConfigError("search.embedded.index", index,
                              f"the store at {str(path)!r} was built with index "
                              f"{manifest.index!r}; set that, or rebuild it with `index`")
        vectors, records, identities = opened_parts(root, manifest)
        lexical = LexicalIndex(root / LEXICAL_DIR if manifest.lexical else None, len(records),
                               manifest.stemmer)
        graph = None
        if manifest.index == "hnsw":
            if not (root / HNSW_FILE).is_file():
                raise disagree(root, f"the manifest names an HNSW index but {HNSW_FILE} "
                                      "is missing")
            graph = AuditedGraph(HnswGraph.load(root / HNSW_FILE, hnsw.first_ef), vectors,
                                 hnsw, on_event)
        return cls(vectors, records, lexical, manifest.embedder, graph, lease, identities,
                   metadata_keys=manifest.metadata_keys)

    @property
    def dimension(self) -> int:
        return int(self._vectors.shape[1])

    @property
    def embedder(self) -> EmbedderInfo | None:
        return self._embedder

    @property
    def metadata_keys(self) -> frozenset[str] | None:
        """The metadata keys its chunks carry (None when the store does not record them)."""
        return self._metadata_keys

    @property
    def version(self) -> str:
        """Which version this store reads: its folder (for a store held in memory, the name
        it was given, or one of its own)."""
        return self._version

    def __len__(self) -> int:
        return len(self._records)

    def search(self, requests: Sequence[SearchRequest]) -> list[SearchOutcome]:
        return [outcome if isinstance(outcome, KnowledgeSearchError) else [
                    self._hit(int(row), float(score)) for row, score in zip(*outcome,
                                                                            strict=True)]
                for outcome in self._search_rows(requests)]

    def search_chunks(self, requests: Sequence[SearchRequest]) -> list[ChunkOutcome]:
        return self._as_chunks(self._search_rows(requests))

    def parallel_searches(self) -> int:
        """How many threads may call `search_chunks` at once, each having called
        `on_search_thread` first (see `ParallelPort`): one per core for exact search (at
        most `MAX_PARALLEL_SEARCHES`); one with an HNSW graph, whose audit keeps state from
        one search to the next."""
        return self._parallel

    def on_search_thread(self) -> None:
        """Prepares a thread that searches beside others: faiss uses one core there."""
        one_core_per_search()

    def search_among(self, requests: Sequence[SearchRequest], among: Sequence[Sequence[str]],
                     above: Sequence[float], shared: Sequence[str] = ()) -> list[ChunkOutcome]:
        """See `ContinuablePort`: ids this version does not hold are passed over."""
        if self._closed:
            raise KnowledgeSearchError("the embedded store was closed; open it again to search")
        return self._as_chunks(self._rows.search_among(
            requests, [self._rows_of(ids) for ids in among], above, self._shared_rows(shared)))

    def _shared_rows(self, shared: Sequence[str]) -> np.ndarray:
        """The rows of `shared`, kept for the next call: a continued run passes the same
        changed chunks with every batch."""
        if self._shared is None or self._shared[0] != shared:
            self._shared = (tuple(shared), self._rows_of(shared))
        return self._shared[1]

    def vectors_of(self, ids: Sequence[str]) -> np.ndarray:
        """See `ContinuablePort`."""
        if self._closed:
            raise KnowledgeSearchError("the embedded store was closed; open it again to search")
        return self._rows.vectors_of(self._rows_of(ids))

    def scores_of(self, vectors: np.ndarray, ids: Sequence[Sequence[str]]
                  ) -> list[np.ndarray]:
        """See `ContinuablePort`."""
        if self._closed:
            raise KnowledgeSearchError("the embedded store was closed; open it again to search")
        return self._rows.scores_of(vectors, [self._held_rows(named) for named in ids])

    def exact_ids(self, vectors: np.ndarray, k: int) -> list[list[str]]:
        """See `ContinuablePort`."""
        if self._closed:
            raise KnowledgeSearchError("the embedded store was closed; open it again to search")
        found = self._rows.exact_rows(vectors, k)
        ids, _ = self._identities.take(np.concatenate(found) if found else
                                       np.empty(0, np.int64))
        ends = np.cumsum([len(rows) for rows in found]).tolist()
        return [list(ids[start:end]) for start, end in zip([0, *ends[:-1]], ends, strict=True)]

    def hits_of(self, ids: Sequence[Sequence[str]], scores: Sequence[Sequence[float]]
                ) -> list[ChunkHits]:
        """See `ContinuablePort`."""
        if self._closed:
            raise KnowledgeSearchError("the embedded store was closed; open it again to search")
        if not ids:
            return []
        every = self._held_rows([i for named in ids for i in named])
        ends = np.cumsum([len(named) for named in ids])
        found = self._as_chunks([(r, np.asarray(s, dtype=np.float64)) for r, s in zip(
            np.split(every, ends[:-1]), scores, strict=True)])
        return [hits for hits in found if isinstance(hits, ChunkHits)]

    def _held_rows(self, ids: Sequence[str]) -> np.ndarray:
        rows = list(map(self._rows_by_id().get, ids))
        if None in rows:
            raise KnowledgeSearchError(f"the store holds no chunk {ids[rows.index(None)]!r}")
        return np.asarray(rows, dtype=np.int64)

    def _rows_of(self, ids: Sequence[str]) -> np.ndarray:
        get = self._rows_by_id().get
        return np.asarray([row for i in ids if (row := get(i)) is not None], dtype=np.int64)

    def _rows_by_id(self) -> dict[str, int]:
        if self._row_of_id is None:
            ids, _ = self._identities.take(np.arange(len(self._records)))
            self._row_of_id = {chunk_id: row for row, chunk_id in enumerate(ids)}
        return self._row_of_id

    def _as_chunks(self, outcomes: list[RowOutcome]) -> list[ChunkOutcome]:
        found = [o for o in outcomes if not isinstance(o, KnowledgeSearchError)]
        rows = np.concatenate([r for r, _ in found]) if found else np.empty(0, np.int64)
        ids, identities = self._identities.take(rows)
        scores = np.concatenate([s for _, s in found]).tolist() if found else []
        refs = [(self._version, row) for row in rows.tolist()]
        answered: list[ChunkOutcome] = []
        start = 0
        for outcome in outcomes:
            if isinstance(outcome, KnowledgeSearchError):
                answered.append(outcome)
                continue
            end = start + len(outcome[0])
            answered.append(ChunkHits(ids[start:end], scores[start:end], identities[start:end],
                                      [None] * (end - start), refs[start:end]))
            start = end
        return answered

    def contents(self, refs: Sequence[ContentRef]) -> list[str]:
        return [str(self._reader(version)._records.record(row)["content"])
                for version, row in refs]

    def close(self) -> None:
        """Stops searching, and lets a later `index` remove the version this store read."""
        self._closed = True
        for other in self._others.values():
            other.close()
        if self._lease is not None:
            self._lease.release()

    def _search_rows(self, requests: Sequence[SearchRequest]) -> list[RowOutcome]:
        if self._closed:
            raise KnowledgeSearchError("the embedded store was closed; open it again to search")
        return self._rows.search(requests)

    def _reader(self, version: str) -> EmbeddedStore:
        """This store, or another version of it that a hit came from (opened once)."""
        if version == self._version:
            return self
        if version not in self._others:
            try:
                self._others[version] = EmbeddedStore.open(version)
            except StoreNotFoundError as error:
                raise KnowledgeSearchError(f"the store version a hit came from is gone: "
                                           f"{error}") from None
        return self._others[version]

    def _hit(self, row: int, score: float) -> SearchHit:
        record = self._records.record(row)
        # the store wrote these records itself: validating them again per hit costs more
        # than the search
        return SearchHit.model_construct(id=record["id"], score=score,
                                         content=record["content"], metadata=record["metadata"])
