"""Every scenario of shared/spec/rag-chunk-evidence-identity.md, by its own name."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from connectors.embedders.hashing import HashingEmbedder
from connectors.search_port import KnowledgeSearchPort
from pipeline.config.loader import load_settings
from pipeline.run.evidence_transform import EvidenceTransform
from stages.identity import candidates_of
from stages.models import EmbeddedQuery, Query, QueryCandidates, QueryHits
from stages.projection import ProjectionBudget, assemble_result
from stages.recall import recall_batch
from stages.steps.dedup import dedup_by_evidence_key
from stages.steps.per_doc_cap import cap_chunks_per_document
from tests.builders import (
    candidate_of,
    chunk,
    chunk_records,
    embedded_store,
    recalled,
    unit_vectors,
)


def test_identity_extracted_from_metadata() -> None:
    camel = candidate_of(recalled("v1", docId="docA", chunkIndex=2))
    snake = candidate_of(recalled("v1", doc_id="docA", chunk_index=2))
    for candidate in (camel, snake):
        assert (candidate.doc_id, candidate.chunk_index) == ("docA", 2)
        assert candidate.evidence_key == "docA#chunk-2"


def test_fallback_identity_without_chunk_index() -> None:
    candidate = candidate_of(recalled("vec-17", docId="docA"))
    assert candidate.evidence_key == "vector:vec-17"
    assert candidate.doc_id == "docA" and candidate.chunk_index is None


def test_same_document_different_chunks_are_kept() -> None:
    kept = dedup_by_evidence_key([chunk("docA", 0, 0.9), chunk("docA", 1, 0.8)])
    assert [c.evidence_key for c in kept] == ["docA#chunk-0", "docA#chunk-1"]
    capped = cap_chunks_per_document(kept, max_per_doc=1)
    assert [c.evidence_key for c in capped] == ["docA#chunk-0"]


def test_true_duplicate_keys_merge_without_replacing_higher_ranked_content() -> None:
    low = chunk("docA", 2, 0.6, order=0, reasons=("knn:vectors[0]",), content="low copy")
    high = chunk("docA", 2, 0.9, order=1, reasons=("knn:vectors[1]",), content="high copy")
    (merged,) = dedup_by_evidence_key([low, high])
    assert merged.content == "high copy"
    assert merged.score == 0.9
    assert merged.hit_reasons == ("knn:vectors[1]", "knn:vectors[0]")


def test_excess_chunks_from_one_document_are_dropped() -> None:
    chunks = [chunk("docA", i, score) for i, score in enumerate([0.5, 0.9, 0.7, 0.8])]
    kept = cap_chunks_per_document(chunks, max_per_doc=2)
    assert [c.evidence_key for c in kept] == ["docA#chunk-1", "docA#chunk-3"]
    assert load_settings().rag.max_chunks_per_document == 2


def test_retrieve_k_widens_recall_without_unbounded_return(tmp_path: Path) -> None:
    settings = load_settings(overrides=["rag.retrieve-k=20", "rag.return-n=5"])
    vectors = unit_vectors(40)
    open_store = embedded_store(tmp_path, chunk_records(vectors))
    query = Query(id="q1", vector=tuple(vectors[0].tolist()))
    (recalled_hits,) = recall_batch([EmbeddedQuery(query=query)], open_store(), 20)
    assert len(recalled_hits.hits) == 20  # type: ignore[union-attr]

    with TestPipeline() as p:
        outputs = (p | beam.Create([query])
                   | EvidenceTransform(settings, port_factory=open_store,
                                       embedder_factory=partial(HashingEmbedder, 8)))
        sizes = outputs.results | beam.Map(lambda r: len(r.evidence))
        assert_that(sizes, equal_to([5]))


def test_same_source_different_evidence_keys_both_project() -> None:
    final = QueryCandidates("q", (chunk("docA", 0, 0.9, source="guide.md"),
                                  chunk("docA", 1, 0.8, source="guide.md")))
    projected = assemble_result(final, ProjectionBudget(max_items=5)).projected
    assert [p.document_id for p in projected] == ["docA#chunk-0", "docA#chunk-1"]
    assert {p.source for p in projected} == {"guide.md"}


def test_projected_document_id_is_chunk_scoped() -> None:
    final = QueryCandidates("q", (chunk("docA", 2, 0.9, source="docA"),))
    (item,) = assemble_result(final, ProjectionBudget()).projected
    assert item.document_id == "docA#chunk-2"
    assert item.source == "docA"


def test_default_dense_adapter_hits_are_normalized_into_candidates_with_identity(
        tmp_path: Path) -> None:
    vectors = unit_vectors(6)
    port = embedded_store(tmp_path, chunk_records(vectors, chunks_per_doc=3))()
    assert isinstance(port, KnowledgeSearchPort)
    query = Query(id="q", vector=tuple(vectors[4].tolist()))
    (result,) = recall_batch([EmbeddedQuery(query=query)], port, 3)
    assert isinstance(result, QueryHits)
    candidates = candidates_of(result)
    assert candidates[0].evidence_key == "doc1#chunk-1"
    assert all(c.doc_id is not None and c.chunk_index is not None for c in candidates)
