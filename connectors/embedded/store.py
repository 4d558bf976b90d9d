"""The embedded store: kNN (faiss, exact or HNSW) over a memory-mapped float32 matrix, and BM25.

On disk a store is a directory of versions (see `versions`); each holds `vectors.npy` (unit
rows, float32), `records.jsonl` (id, content, metadata per row, same order) with
`records.offsets.npy` (where each line starts), `chunks.arrow` (id, document and fingerprint
per row), `bm25/` (the lexical index), `hnsw.faiss` when built with `index: hnsw`, and
`manifest.json` (dimension, count, index kind, the embedder that built it), written last. An
open store reads one version until it is closed, whatever `index` commits meanwhile.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from connectors.embedded.layout import (
    HNSW_FILE,
    LEXICAL_DIR,
    OFFSETS_FILE,
    RECORDS_FILE,
    VECTORS_FILE,
    IndexKind,
    Manifest,
)
from connectors.embedded.lexical import LexicalIndex
from connectors.embedded.metadata_filter import FilterIndex
from connectors.embedded.records_file import RecordFile, Records
from connectors.embedded.top_k import top_rows
from connectors.embedded.vector_search import (
    DEFAULT_HNSW,
    HnswGraph,
    HnswParams,
    exact_neighbours,
    subset_neighbours,
)
from connectors.embedded.versions import VersionLease
from connectors.embedder_port import EmbedderInfo
from connectors.errors import (
    ConfigError,
    DimensionMismatchError,
    KnowledgeSearchError,
    StoreNotFoundError,
)
from connectors.search_port import SearchHit, SearchOutcome, SearchRequest
from connectors.vectors import NO_DIRECTION, unit_rows

_BLOCK_ROWS = 256


class EmbeddedStore:
    """kNN by faiss in blocks of queries (exact, or an HNSW graph); BM25 for text.

    kNN scores are (1 + cosine) / 2, the scale Elasticsearch reports for cosine similarity;
    lexical scores are BM25 (Lucene's variant, as Elasticsearch's). A filtered kNN request is
    always exact, over the matching rows. Records are read from disk by row, per hit.

    >>> store = EmbeddedStore.open("data/store")          # doctest: +SKIP
    >>> store.search([SearchRequest(vector=(1.0, 0.0), k=3)])  # doctest: +SKIP
    """

    def __init__(self, vectors: np.ndarray, records: Records,
                 lexical: LexicalIndex | None = None, embedder: EmbedderInfo | None = None,
                 graph: HnswGraph | None = None, lease: VersionLease | None = None) -> None:
        self._lease = lease
        self._vectors = vectors
        self._records = records
        self._lexical = lexical or LexicalIndex(None, len(records))
        self._embedder = embedder
        self._graph = graph
        self._filters = FilterIndex(records.metadata)
        self._closed = False

    @classmethod
    def open(cls, path: str | Path, index: IndexKind | None = None,
             hnsw: HnswParams = DEFAULT_HNSW) -> EmbeddedStore:
        """Opens the current version of a store directory (or the version folder `path`),
        holding it until `close`, memory-mapping its vectors and records; checks its parts
        agree. `index`, when given, is the kind the config expects the store to have.

        Raises:
            StoreNotFoundError: no store there, or its files disagree (named).
            ConfigError: the store was built with another index kind than `index`.
        """
        lease = VersionLease.take(Path(path))
        try:
            return cls._open_version(Path(path), lease, index, hnsw)
        except BaseException:
            lease.release()
            raise

    @classmethod
    def _open_version(cls, path: Path, lease: VersionLease, index: IndexKind | None,
                      hnsw: HnswParams) -> EmbeddedStore:
        root = lease.folder
        manifest = Manifest.read(root)
        if index is not None and index != manifest.index:
            raise ConfigError("search.embedded.index", index,
                              f"the store at {str(path)!r} was built with index "
                              f"{manifest.index!r}; set that, or rebuild it with `index`")
        vectors = np.load(root / VECTORS_FILE, mmap_mode="r")
        records = RecordFile.open(root / RECORDS_FILE, root / OFFSETS_FILE)
        _check_parts(root, manifest, vectors, records)
        lexical = LexicalIndex(root / LEXICAL_DIR if manifest.lexical else None, len(records))
        graph = None
        if manifest.index == "hnsw":
            if not (root / HNSW_FILE).is_file():
                raise _disagree(root, f"the manifest names an HNSW index but {HNSW_FILE} "
                                      "is missing")
            graph = HnswGraph.load(root / HNSW_FILE, hnsw.ef_search)
        return cls(vectors, records, lexical, manifest.embedder, graph, lease)

    @property
    def dimension(self) -> int:
        return int(self._vectors.shape[1])

    @property
    def embedder(self) -> EmbedderInfo | None:
        return self._embedder

    def __len__(self) -> int:
        return len(self._records)

    def search(self, requests: Sequence[SearchRequest]) -> list[SearchOutcome]:
        if self._closed:
            raise KnowledgeSearchError("the embedded store was closed; open it again to search")
        outcomes: list[SearchOutcome] = [[] for _ in requests]
        if not self._records:
            return outcomes
        dense = [i for i, r in enumerate(requests)
                 if r.vector is not None and self._check(r, outcomes, i)]
        for start in range(0, len(dense), _BLOCK_ROWS):
            self._search_block(requests, dense[start:start + _BLOCK_ROWS], outcomes)
        for i, request in enumerate(requests):
            if request.text is not None:
                outcomes[i] = self._lexical_top_k(request)
        return outcomes

    @property
    def version(self) -> str | None:
        """The folder of the version this store reads (None for a store held in memory)."""
        return str(self._lease.folder) if self._lease is not None else None

    def close(self) -> None:
        """Stops searching, and lets a later `index` remove the version this store read."""
        self._closed = True
        if self._lease is not None:
            self._lease.release()

    def _check(self, request: SearchRequest, outcomes: list[SearchOutcome], i: int) -> bool:
        assert request.vector is not None
        error: KnowledgeSearchError | None = None
        if len(request.vector) != self.dimension:
            mismatch = DimensionMismatchError("vector", len(request.vector), self.dimension)
            error = KnowledgeSearchError(str(mismatch))
        if error is not None:
            outcomes[i] = error
        return error is None

    def _search_block(self, requests: Sequence[SearchRequest], block: list[int],
                      outcomes: list[SearchOutcome]) -> None:
        queries, usable = unit_rows([requests[i].vector or () for i in block])
        for unusable in np.flatnonzero(~usable).tolist():
            outcomes[block[unusable]] = KnowledgeSearchError(
                f"vector {NO_DIRECTION}: cosine similarity is undefined")
        block = [i for row, i in enumerate(block) if usable[row]]
        queries = queries[usable]
        plain = [row for row, i in enumerate(block) if not requests[i].filters]
        if plain:
            ks = [requests[block[row]].k for row in plain]
            search = self._graph.neighbours if self._graph else self._exact
            for row, (top, scores) in zip(plain, search(queries[plain], ks), strict=True):
                outcomes[block[row]] = self._hits(top, scores, cosine=True)
        for row, i in enumerate(block):
            if requests[i].filters:
                matching = self._filters.matching_rows(requests[i].filters)
                assert matching is not None
                top, scores = subset_neighbours(self._vectors, queries[row], matching,
                                                requests[i].k)
                outcomes[i] = self._hits(top, scores, cosine=True)

    def _exact(self, queries: np.ndarray, ks: list[int]) -> list[tuple[np.ndarray, np.ndarray]]:
        return exact_neighbours(self._vectors, queries, ks)

    def _lexical_top_k(self, request: SearchRequest) -> list[SearchHit]:
        assert request.text is not None
        scores = self._lexical.scores(request.text)
        top, best = self._filtered_top_k(scores, request)
        matching = best > 0
        return self._hits(top[matching], best[matching])

    def _filtered_top_k(self, scores: np.ndarray, request: SearchRequest
                        ) -> tuple[np.ndarray, np.ndarray]:
        rows = self._filters.matching_rows(request.filters)
        if rows is None:
            ((top, best),) = top_rows(scores[np.newaxis, :], request.k)
            return top, best
        ((top, best),) = top_rows(scores[rows][np.newaxis, :], request.k)
        return rows[top], best

    def _hits(self, rows: np.ndarray, scores: np.ndarray, cosine: bool = False
              ) -> list[SearchHit]:
        """Hits for `rows`; cosine similarities are reported as (1 + cosine) / 2."""
        return [self._hit(int(row), (1.0 + float(s)) / 2.0 if cosine else float(s))
                for row, s in zip(rows, scores, strict=True)]

    def _hit(self, row: int, score: float) -> SearchHit:
        record = self._records.record(row)
        # the store wrote these records itself: validating them again per hit costs more
        # than the search
        return SearchHit.model_construct(id=record["id"], score=score,
                                         content=record["content"], metadata=record["metadata"])


def _check_parts(root: Path, manifest: Manifest, vectors: np.ndarray,
                 records: RecordFile) -> None:
    found = (vectors.shape[0] if vectors.ndim == 2 else -1, len(records),
             vectors.shape[1] if vectors.ndim == 2 else -1)
    if found != (manifest.count, manifest.count, manifest.dimension):
        raise _disagree(root, f"manifest says {manifest.count} rows of {manifest.dimension} "
                              f"dims, {VECTORS_FILE} holds {found[0]} rows of {found[2]} dims, "
                              f"{RECORDS_FILE} {found[1]} records")
    problem = records.problem()
    if problem is not None:
        raise _disagree(root, f"{RECORDS_FILE}: {problem}")


def _disagree(root: Path, what: str) -> StoreNotFoundError:
    return StoreNotFoundError(f"search.embedded.path={str(root)!r}: the store's files disagree: "
                              f"{what}; rebuild it with `rag-evidence index`")
