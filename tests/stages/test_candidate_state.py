"""What a run keeps of each query for the next (issue 32): a query's fingerprint, and each
sub-query's list with a bound on every chunk it left out."""

from __future__ import annotations

from connectors.search_port import ChunkHits
from core.chunk_identity import resolve_identity
from stages.candidate_state import (
    NO_BOUND,
    asked_width,
    kept_state,
    query_fingerprint,
    recalled_list,
)
from stages.models import EmbeddedQuery, Query, QueryHits


def _hits(*pairs: tuple[str | None, float]) -> ChunkHits:
    return ChunkHits([i for i, _ in pairs], [s for _, s in pairs],
                     [resolve_identity({}) for _ in pairs], [None] * len(pairs),
                     [None] * len(pairs))


def test_the_fingerprint_is_what_a_query_searches_with_not_its_id() -> None:
    base = Query(id="a", vector=(1.0, 0.5), filters={"lang": "en"})
    assert query_fingerprint(base) == query_fingerprint(base.model_copy(update={"id": "b"}))
    others = [base.model_copy(update={"vector": (1.0, 0.5000001)}),
              base.model_copy(update={"filters": {"lang": "de"}}),
              base.model_copy(update={"filters": {}}),
              Query(id="a", vectors=((1.0, 0.5),), filters={"lang": "en"}),
              Query(id="a", text="x", vector=(1.0, 0.5), filters={"lang": "en"}),
              Query(id="a", text="", vector=(1.0, 0.5), filters={"lang": "en"})]
    prints = {query_fingerprint(q) for q in others}
    assert len(prints) == len(others) and query_fingerprint(base) not in prints


def test_a_full_list_is_bounded_by_its_last_score_and_leaves_out_its_ties() -> None:
    made = recalled_list("knn:vector", _hits(("a", 0.9), ("b", 0.8), ("c", 0.7), ("d", 0.7)), 4)
    assert made is not None
    kept, held = made
    assert (kept.ids, kept.scores, kept.bound, held) == (("a", "b"), (0.9, 0.8), 0.7, 2)


def test_a_short_list_holds_everything_that_matches() -> None:
    made = recalled_list("knn:vector", _hits(("a", 0.9), ("b", 0.8)), 4)
    assert made is not None and made[0].bound == NO_BOUND and made[1] == 2


def test_a_list_with_a_hit_without_id_is_not_kept() -> None:
    assert recalled_list("knn:vector", _hits((None, 0.9)), 4) is None


def test_kept_state_cuts_each_sub_query_to_retrieve_k_and_keeps_empty_ones() -> None:
    query = Query(id="q", vectors=((1.0, 0.0), (0.0, 1.0)))
    wide = asked_width(2)
    first = [(f"a{n}", 1.0 - n / 100) for n in range(wide)]
    found = _hits(*first)
    hits = QueryHits("q", found, ["knn:vectors[0]"] * wide, list(range(1, wide + 1)))
    cut, state = kept_state(EmbeddedQuery(query), ["knn:vectors[0]", "knn:vectors[1]"], hits, 2)
    assert list(cut.found.ids) == ["a0", "a1"] and list(cut.ranks) == [1, 2]
    assert state is not None and [k.reason for k in state.lists] == [
        "knn:vectors[0]", "knn:vectors[1]"]
    assert len(state.lists[0].ids) == wide - 1 and state.lists[1].ids == ()
    assert state.lists[1].bound == NO_BOUND


def test_a_text_vector_not_exact_in_float32_is_not_kept() -> None:
    query = Query(id="q", text="words")
    hits = QueryHits("q", _hits(("a", 0.9)), ["knn:text"], [1])
    _, kept = kept_state(EmbeddedQuery(query, (0.5, 0.25)), ["knn:text"], hits, 2)
    _, rounded = kept_state(EmbeddedQuery(query, (0.1, 0.2)), ["knn:text"], hits, 2)
    assert kept is not None and rounded is None
