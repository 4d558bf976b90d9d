"""RrfFusion: Reciprocal Rank Fusion keyed by evidence key."""

from __future__ import annotations

import pytest

from stages.models import RetrieverHit
from stages.steps.fusion import RrfSettings, fuse_reciprocal_rank
from tests.builders import normalized, recalled


def _hits() -> list:
    return normalized([
        recalled("a", 0.9, "knn text A", "knn:text", 0, docId="A", chunkIndex=0),
        recalled("b", 0.8, "knn text B", "knn:text", 1, docId="B", chunkIndex=0),
        recalled("b2", 7.5, "bm25 text B", "bm25:text", 2, docId="B", chunkIndex=0),
        recalled("c", 3.1, "bm25 text C", "bm25:text", 3, docId="C", chunkIndex=0),
    ])


def _ranked(hits: list) -> list:
    # ranks as Recall sets them: position within each sub-query's list
    return [h._replace(retrievers=(h.retrievers[0]._replace(rank=rank),))
            for h, rank in zip(hits, [1, 2, 1, 2], strict=True)]


def test_a_chunk_found_both_ways_is_one_candidate_with_both_reasons() -> None:
    fused = {c.evidence_key: c for c in fuse_reciprocal_rank(_ranked(_hits()), RrfSettings())}
    assert set(fused) == {"A#chunk-0", "B#chunk-0", "C#chunk-0"}
    both = fused["B#chunk-0"]
    assert set(both.hit_reasons) == {"knn:text", "bm25:text"}
    assert set(both.retrievers) == {RetrieverHit(reason="knn:text", rank=2, score=0.8),
                                    RetrieverHit(reason="bm25:text", rank=1, score=7.5)}


def test_the_fused_score_is_the_sum_of_reciprocal_ranks() -> None:
    fused = {c.evidence_key: c.score for c in fuse_reciprocal_rank(_ranked(_hits()),
                                                                   RrfSettings(k=60))}
    assert fused["B#chunk-0"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["A#chunk-0"] == pytest.approx(1 / 61)
    assert fused["C#chunk-0"] == pytest.approx(1 / 62)


def test_weights_scale_each_retriever_family() -> None:
    rrf = RrfSettings(k=60, weights={"bm25": 0.5})
    fused = {c.evidence_key: c.score for c in fuse_reciprocal_rank(_ranked(_hits()), rrf)}
    assert fused["B#chunk-0"] == pytest.approx(1 / 62 + 0.5 / 61)
    assert fused["C#chunk-0"] == pytest.approx(0.5 / 62)


def test_the_content_comes_from_the_retriever_that_ranked_the_chunk_best() -> None:
    fused = {c.evidence_key: c for c in fuse_reciprocal_rank(_ranked(_hits()), RrfSettings())}
    assert fused["B#chunk-0"].content == "bm25 text B"


def test_different_chunks_of_one_document_stay_separate() -> None:
    hits = normalized([
        recalled("x", 0.9, reason="knn:text", order=0, docId="D", chunkIndex=0),
        recalled("y", 5.0, reason="bm25:text", order=1, docId="D", chunkIndex=1)])
    assert len(fuse_reciprocal_rank(hits, RrfSettings())) == 2
