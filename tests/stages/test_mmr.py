"""Mmr: maximal marginal relevance over the candidates' stored vectors (issue 48)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import RagEvidenceError
from core.params import OutOfBoundsError
from stages.models import Candidate, EmbeddedQuery, Query
from stages.ranking import ranked
from stages.steps.mmr import diversified, mmr_step
from tests.builders import chunk

QUERY = (1.0, 0.0, 0.0)


def _with(vectors: list[tuple[float, ...]], scores: list[float] | None = None
          ) -> list[Candidate]:
    """Candidates of doc{i} with vector i, scored as dense recall scores them."""
    out = []
    for i, vector in enumerate(vectors):
        unit = np.asarray(vector) / np.linalg.norm(vector)
        score = scores[i] if scores else (1 + float(unit @ np.asarray(QUERY))) / 2
        out.append(chunk(f"doc{i}", 0, score, order=i)._replace(vector=tuple(unit.tolist())))
    return out


def _query(*vectors: tuple[float, ...], text_vector: tuple[float, ...] | None = None
           ) -> EmbeddedQuery:
    if len(vectors) == 1:
        return EmbeddedQuery(Query(id="q", vector=vectors[0]), text_vector)
    return EmbeddedQuery(Query(id="q", vectors=vectors or None, text="t"), text_vector)


def test_a_near_duplicate_gives_way_to_a_less_relevant_but_different_chunk() -> None:
    # doc0 and doc1 are nearly the same chunk; doc2 is less relevant and points elsewhere
    pool = _with([(1.0, 0.1, 0.0), (1.0, 0.12, 0.0), (0.7, 0.0, 0.7)])
    kept = diversified(pool, _query(QUERY), lambda_=0.5, top=2)
    assert [c.doc_id for c in kept] == ["doc0", "doc2"]
    # by relevance alone, the near-duplicate stays
    kept = diversified(pool, _query(QUERY), lambda_=1.0, top=2)
    assert [c.doc_id for c in kept] == ["doc0", "doc1"]


def test_relevance_is_the_best_cosine_over_the_querys_vectors() -> None:
    pool = _with([(0.0, 1.0, 0.0), (1.0, 0.0, 0.0), (0.0, 0.0, 1.0)], scores=[0.3, 0.2, 0.1])
    kept = diversified(pool, _query((0.0, 0.0, 1.0), text_vector=(0.0, 1.0, 0.0)),
                       lambda_=1.0, top=2)
    assert {c.doc_id for c in kept} == {"doc0", "doc2"}


def test_the_kept_chunks_keep_their_scores_and_come_in_ranking_order() -> None:
    pool = _with([(1.0, 0.1, 0.0), (1.0, 0.12, 0.0), (0.7, 0.0, 0.7), (0.2, 1.0, 0.0)])
    kept = diversified(list(reversed(pool)), _query(QUERY), lambda_=0.3, top=3)
    assert kept == ranked(kept)
    assert all(c in pool for c in kept)


def test_a_candidate_without_its_vector_is_an_error_that_names_it() -> None:
    pool = _with([(1.0, 0.0, 0.0), (0.0, 1.0, 0.0)])
    pool[1] = pool[1]._replace(vector=None)
    with pytest.raises(RagEvidenceError, match="doc1#chunk-0 came without its vector"):
        diversified(pool, _query(QUERY), lambda_=0.5, top=1)


def test_its_bounds_are_checked_when_it_is_built() -> None:
    with pytest.raises(OutOfBoundsError, match="rag.mmr.lambda"):
        mmr_step(lambda_=1.5)
    with pytest.raises(OutOfBoundsError, match="rag.mmr.top"):
        mmr_step(top=0)


_vectors = st.lists(st.tuples(*[st.floats(-1, 1, allow_nan=False)] * 3).filter(
    lambda v: sum(x * x for x in v) > 1e-3), min_size=1, max_size=25)


@settings(max_examples=150, deadline=None)
@given(_vectors, st.floats(0, 1), st.integers(1, 30))
def test_it_keeps_top_of_its_candidates_first_the_most_relevant(
        vectors: list[tuple[float, ...]], lambda_: float, top: int) -> None:
    pool = _with(vectors)
    kept = diversified(pool, _query(QUERY), lambda_=lambda_, top=top)
    assert len(kept) == min(top, len(pool))
    assert len({c.evidence_key for c in kept}) == len(kept)
    assert all(c in pool for c in kept)
    assert kept == ranked(kept)
    relevance = [float(np.asarray(c.vector) @ np.asarray(QUERY)) for c in pool]
    best = pool[int(np.argmax(relevance))]
    assert best in kept
    if lambda_ == 1.0:  # relevance alone: the `top` most relevant, as dense recall ranks them
        assert {c.evidence_key for c in kept} == {
            c.evidence_key for c in ranked(pool)[:top]} or len(set(relevance)) < len(pool) or (
            len({c.score for c in pool}) < len(pool))  # recall scores that cannot tell them apart
