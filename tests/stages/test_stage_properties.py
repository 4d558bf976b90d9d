"""Properties every post-processing result must have, whatever the candidates."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from stages.models import Candidate
from stages.projection import ProjectionBudget
from stages.steps.dedup import dedup_by_evidence_key
from stages.steps.per_doc_cap import cap_chunks_per_document
from stages.steps.top_n import top_n
from tests.builders import candidate, chunk, projected

_scores = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


@st.composite
def candidate_lists(draw: st.DrawFn) -> list[Candidate]:
    items = draw(st.lists(st.tuples(st.sampled_from(["a", "b", "c", None]),
                                    st.integers(0, 4), _scores, st.sampled_from("xyz")),
                          max_size=30))
    result = []
    for order, (doc, index, score, reason) in enumerate(items):
        reasons = (f"knn:{reason}",)
        if doc is None:
            result.append(candidate(f"vector:{index}", score, order=order, reasons=reasons))
        else:
            result.append(chunk(doc, index, score, order=order, reasons=reasons))
    return result


def _post_process(cands: list[Candidate], cap: int, n: int) -> list[Candidate]:
    return top_n(cap_chunks_per_document(dedup_by_evidence_key(cands), cap), n)


@given(candidate_lists())
def test_dedup_leaves_no_key_twice_and_loses_no_key(cands: list[Candidate]) -> None:
    kept = dedup_by_evidence_key(cands)
    keys = [c.evidence_key for c in kept]
    assert len(keys) == len(set(keys)) and set(keys) == {c.evidence_key for c in cands}


@given(candidate_lists())
def test_dedup_keeps_each_keys_best_score_and_every_reason(cands: list[Candidate]) -> None:
    for kept in dedup_by_evidence_key(cands):
        group = [c for c in cands if c.evidence_key == kept.evidence_key]
        assert kept.score == max(c.score for c in group)
        assert set(kept.hit_reasons) == {r for c in group for r in c.hit_reasons}


@given(candidate_lists())
def test_dedup_is_idempotent(cands: list[Candidate]) -> None:
    once = dedup_by_evidence_key(cands)
    assert dedup_by_evidence_key(once) == once


@given(candidate_lists(), st.integers(1, 4), st.integers(1, 10))
def test_results_hold_the_cap_and_return_n_sorted_by_score(
        cands: list[Candidate], cap: int, n: int) -> None:
    final = _post_process(cands, cap, n)
    per_doc = Counter(c.doc_id for c in final if c.doc_id is not None)
    assert all(count <= cap for count in per_doc.values())
    assert len(final) <= n
    scores = [c.score for c in final]
    assert scores == sorted(scores, reverse=True)


@given(candidate_lists(), st.integers(1, 4))
def test_cap_keeps_the_top_chunks_of_each_document(cands: list[Candidate], cap: int) -> None:
    deduped = dedup_by_evidence_key(cands)
    kept = cap_chunks_per_document(deduped, cap)
    for doc in {c.doc_id for c in deduped if c.doc_id is not None}:
        ranked = [c for c in deduped if c.doc_id == doc]
        assert [c for c in kept if c.doc_id == doc] == ranked[:cap]


@settings(max_examples=50)
@given(candidate_lists(), st.integers(1, 6), st.integers(1, 200), st.integers(1, 50))
def test_projection_respects_every_budget_and_never_repeats_a_key(
        cands: list[Candidate], items: int, total: int, per_item: int) -> None:
    items_out = projected(_post_process(cands, 2, 10), ProjectionBudget(items, total, per_item))
    ids = [p.document_id for p in items_out]
    assert len(ids) == len(set(ids)) and len(ids) <= items
    assert sum(len(p.content) for p in items_out) <= total
    assert all(len(p.content) <= per_item for p in items_out)
