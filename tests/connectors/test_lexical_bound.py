"""The bound of `lexical_bound` against the store's real BM25 index: after any change of the
chunks, a chunk whose words did not change scores at most its old score times
`score_factor`, for any query, so that no unchanged chunk a kept list left out scores above
its bound times the factor; and the factor is no looser than it must be where the statistics
do not move."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import NamedTuple

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from connectors.embedded.lexical import LexicalIndex, build_lexical_index, indexed, tokens
from connectors.embedded.lexical_bound import SCORE_MARGIN, LexicalStatistics, score_factor

WORDS = ["apple", "banana", "cherry", "date", "elder", "fig", "grape", "the"]
"""A few words, one of them a stop word, so that chunks share words often."""
STEMMER = "none"

chunk_texts = st.lists(st.sampled_from(WORDS), max_size=7).map(" ".join)


def _scores(contents: list[str], query: str) -> np.ndarray:
    retriever = indexed(contents, STEMMER)
    return LexicalIndex.held(retriever, len(contents), STEMMER).scores(query)


def _statistics(contents: list[str]) -> LexicalStatistics:
    return LexicalStatistics.of(tokens(contents, STEMMER))


class Change(NamedTuple):
    """A store before and after a change, and a query's scores in each: `standing` are the
    old rows that stand, in the order the new store holds them first."""

    old: list[str]
    standing: list[int]
    before: np.ndarray
    after: np.ndarray
    factor: float


@st.composite
def changes(draw: st.DrawFn, min_chunks: int = 1) -> Change:
    old = draw(st.lists(chunk_texts, min_size=min_chunks, max_size=12))
    standing = draw(st.lists(st.sampled_from(range(len(old))), unique=True, min_size=1))
    # the others are deleted, or rewritten (added anew)
    new = [old[i] for i in standing] + draw(st.lists(chunk_texts, max_size=8))
    query = " ".join(draw(st.lists(st.sampled_from([*WORDS, "kiwi"]), min_size=1,
                                   max_size=4)))
    factor = score_factor(_statistics(old), _statistics(new), tokens([query], STEMMER)[0])
    return Change(old, standing, _scores(old, query), _scores(new, query), factor)


@settings(max_examples=150, deadline=None)
@given(change=changes())
def test_an_unchanged_chunk_scores_at_most_its_old_score_times_the_factor(
        change: Change) -> None:
    for at, row in enumerate(change.standing):
        assert change.after[at] <= change.before[row] * change.factor * (1 + SCORE_MARGIN) \
            + 1e-30, (change.old[row], change.before[row], change.after[at], change.factor)


@settings(max_examples=100, deadline=None)
@given(change=changes(min_chunks=2), drawn=st.data())
def test_no_unchanged_chunk_outside_a_kept_list_scores_above_its_inflated_bound(
        change: Change, drawn: st.DataObject) -> None:
    kept = drawn.draw(st.integers(1, len(change.old) - 1), label="kept")
    order = np.lexsort((np.arange(len(change.old)), -change.before))  # as a search ranks
    bound = float(change.before[order[kept]])  # the first score left out
    left_out = set(order[kept:].tolist())
    for at, row in enumerate(change.standing):
        if row in left_out:
            assert change.after[at] <= bound * change.factor * (1 + SCORE_MARGIN) + 1e-30, (
                change.old[row], bound, change.after[at], change.factor)


@given(old=st.lists(chunk_texts, min_size=1, max_size=12),
       query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join))
def test_a_store_that_did_not_change_gives_a_factor_of_one_or_nothing_to_bound(
        old: list[str], query: str) -> None:
    statistics = _statistics(old)
    terms = tokens([query], STEMMER)[0]
    factor = score_factor(statistics, statistics, terms)
    matches = any(t in statistics.frequencies for t in terms)
    assert factor == (1.0 if matches else 0.0)


def test_the_statistics_are_those_the_index_scores_with() -> None:
    contents = ["apple banana apple", "the of and", "banana cherry", "",
                "cherry cherry cherry apple"]
    statistics = _statistics(contents)
    assert (statistics.chunks, statistics.mean_length) == (5, 9 / 5)
    assert statistics.frequencies == {"apple": 2, "banana": 2, "cherry": 2}
    # apple twice in the first chunk, of 3 words, k1 1.5, b 0.75 (bm25s's defaults)
    apple = statistics.idf("apple") * 2 / (2 + 1.5 * (1 - 0.75 + 0.75 * 3 / (9 / 5)))
    assert np.isclose(_scores(contents, "apple")[0], apple, rtol=1e-6)


def test_a_store_grown_with_longer_chunks_and_rarer_terms_raises_the_factor() -> None:
    old = ["apple banana", "apple cherry", "date"]
    new = [*old, "fig grape fig grape fig grape", "elder elder elder elder"]
    factor = score_factor(_statistics(old), _statistics(new), ["apple"])
    assert factor > 1.0
    assert _scores(new, "apple")[0] > _scores(old, "apple")[0]  # the raise is real


@settings(max_examples=60, deadline=None)
@given(contents=st.lists(chunk_texts, min_size=1, max_size=12))
def test_a_saved_index_gives_the_statistics_of_its_chunks_as_analysed(
        contents: list[str]) -> None:
    # what a night keeps to bound the next night's scores, read off the index `index` saved
    with tempfile.TemporaryDirectory() as folder:
        if not build_lexical_index(contents, Path(folder), STEMMER):
            assert not any(tokens(contents, STEMMER))
            return
        saved = LexicalIndex(Path(folder), len(contents), STEMMER).statistics()
    expected = _statistics(contents)
    assert saved is not None
    assert (saved.chunks, saved.frequencies) == (expected.chunks, expected.frequencies)
    assert saved.mean_length == expected.mean_length


def test_an_index_saved_without_statistics_gives_none(tmp_path: Path) -> None:
    assert build_lexical_index(["apple fig"], tmp_path, STEMMER)
    (tmp_path / "statistics.json").unlink()
    assert LexicalIndex(tmp_path, 1, STEMMER).statistics() is None
