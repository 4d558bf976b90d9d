"""Small constructors for test data."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from connectors.chunk_record import ChunkRecord
from connectors.embedded.store import EmbeddedStore
from connectors.embedded.writer import write_store
from connectors.embedder_port import Purpose
from connectors.embedders.hashing import HashingEmbedder
from connectors.search_port import ChunkHit, PortFactory, SearchHit
from pipeline.testing import query_hits
from stages.identity import Report, candidates_of
from stages.models import Candidate, ProjectedItem, RecalledHit
from stages.projection import ProjectionBudget, projected_fields
from stages.ranking import ranked


def recalled(hit_id: str | None = "v1", score: float = 0.9, content: str = "text",
             reason: str = "knn:text", order: int = 0, **metadata: Any) -> RecalledHit:
    hit = SearchHit(id=hit_id, score=score, content=content, metadata=metadata)
    return RecalledHit(hit=ChunkHit.of(hit), reason=reason, recall_order=order)


def candidate(key: str, score: float, *, doc_id: str | None = None, chunk: int | None = None,
              order: int = 0, reasons: tuple[str, ...] = ("knn:text",), content: str = "",
              source: str | None = None) -> Candidate:
    return Candidate(evidence_key=key, doc_id=doc_id, chunk_index=chunk,
                     source=source or doc_id or key, content=content or f"content of {key}",
                     score=score, hit_reasons=reasons, recall_order=order)


def chunk(doc: str, index: int, score: float, order: int = 0, **kwargs: Any) -> Candidate:
    return candidate(f"{doc}#chunk-{index}", score, doc_id=doc, chunk=index, order=order, **kwargs)


def unit_vectors(count: int, dim: int = 8, seed: int = 7) -> np.ndarray:
    """`count` random unit vectors, reproducibly."""
    rows = np.random.default_rng(seed).normal(size=(count, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def chunk_records(vectors: np.ndarray, chunks_per_doc: int = 1) -> list[ChunkRecord]:
    """One record per vector: doc `doc{i // chunks_per_doc}`, chunk `i % chunks_per_doc`."""
    records = []
    for i, vector in enumerate(vectors):
        doc, index = f"doc{i // chunks_per_doc}", i % chunks_per_doc
        records.append(ChunkRecord(
            id=f"{doc}#chunk-{index}", vector=tuple(float(x) for x in vector),
            content=f"content {i}", metadata={"docId": doc, "chunkIndex": index,
                                              "source": f"{doc}.md", "parity": i % 2}))
    return records


def embedded_store(path: Path, records: list[ChunkRecord]) -> PortFactory:
    """Writes a real embedded store at `path` and returns the factory that opens it."""
    write_store(path, records)
    return partial(EmbeddedStore.open, path)


class FailingEmbedder(HashingEmbedder):
    """The port's own embedder, failing as no embedder should on a text holding `boom`."""

    def embed(self, texts: Sequence[str], purpose: Purpose = "query") -> np.ndarray:
        if any("boom" in text for text in texts):
            raise RuntimeError("the model fell over")
        return super().embed(texts, purpose)


def normalized(hits: Sequence[RecalledHit], report: Report | None = None) -> list[Candidate]:
    """IdentityNormalize over one query's hits, through the function the step calls."""
    if report is None:
        return candidates_of(query_hits("q", hits))
    return candidates_of(query_hits("q", hits), report)


def candidate_of(hit: RecalledHit, report: Report | None = None) -> Candidate:
    """One hit through IdentityNormalize."""
    (candidate,) = normalized([hit], report)
    return candidate


def projected(candidates: Sequence[Candidate], budget: ProjectionBudget) -> list[ProjectedItem]:
    """The Agent projection of one query's final candidates, as Project computes it."""
    return [ProjectedItem(**fields) for fields in projected_fields(ranked(candidates), budget)]
