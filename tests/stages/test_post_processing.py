from __future__ import annotations

import pytest

from stages.models import QueryCandidates
from stages.projection import ProjectionBudget, assemble_result
from stages.steps.dedup import dedup_by_evidence_key
from stages.steps.per_doc_cap import cap_chunks_per_document, per_doc_cap
from stages.steps.top_n import top_n, top_n_step
from tests.builders import candidate, chunk


def test_dedup_breaks_score_ties_by_recall_order() -> None:
    first = chunk("d", 0, 0.5, order=0, content="first recalled")
    second = chunk("d", 0, 0.5, order=1, content="second recalled", reasons=("knn:vector",))
    (kept,) = dedup_by_evidence_key([second, first])
    assert kept.content == "first recalled"
    assert kept.hit_reasons == ("knn:text", "knn:vector")


def test_dedup_does_not_repeat_a_shared_reason() -> None:
    (kept,) = dedup_by_evidence_key([chunk("d", 0, 0.9), chunk("d", 0, 0.8)])
    assert kept.hit_reasons == ("knn:text",)


def test_dedup_never_merges_on_source_alone() -> None:
    a = candidate("vector:1", 0.9, source="same.md")
    b = candidate("vector:2", 0.8, source="same.md")
    assert len(dedup_by_evidence_key([a, b])) == 2


def test_cap_leaves_candidates_without_doc_id_uncapped() -> None:
    loose = [candidate(f"vector:{i}", 0.5) for i in range(5)]
    assert len(cap_chunks_per_document(loose, max_per_doc=1)) == 5


def test_cap_counts_each_document_separately() -> None:
    chunks = [chunk("a", 0, 0.9), chunk("b", 0, 0.8), chunk("a", 1, 0.7), chunk("b", 1, 0.6)]
    kept = cap_chunks_per_document(chunks, max_per_doc=1)
    assert [c.evidence_key for c in kept] == ["a#chunk-0", "b#chunk-0"]


@pytest.mark.parametrize("bad", [0, -3])
def test_cap_below_one_is_rejected_with_the_setting_name(bad: int) -> None:
    with pytest.raises(ValueError, match=rf"rag.max-chunks-per-document={bad}"):
        cap_chunks_per_document([], max_per_doc=bad)
    with pytest.raises(ValueError, match="max-chunks-per-document"):
        per_doc_cap(bad)


def test_top_n_keeps_the_best_in_rank_order() -> None:
    kept = top_n([chunk("a", i, s) for i, s in enumerate([0.1, 0.9, 0.5])], return_n=2)
    assert [c.score for c in kept] == [0.9, 0.5]
    with pytest.raises(ValueError, match=r"rag\.return-n=0"):
        top_n_step(0)


def test_evidence_blocks_are_ranked_from_one() -> None:
    final = QueryCandidates("q", (chunk("a", 0, 0.2), chunk("b", 0, 0.8)))
    blocks = assemble_result(final, ProjectionBudget()).evidence
    assert [(b.rank, b.evidence_key) for b in blocks] == [(1, "b#chunk-0"), (2, "a#chunk-0")]
