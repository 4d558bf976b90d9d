"""The BM25 bound on an Elasticsearch index (issue 47): after any change of the chunks, a
chunk whose words did not change scores at most its old score times `score_factor` of the
index's own statistics (`term_statistics`: the words as the index analyses them, their
document frequencies, the chunk count and mean length), for any query; so no unchanged chunk
a kept list left out ever scores above the list's bound times the factor."""

from __future__ import annotations

import uuid
from typing import NamedTuple

import numpy as np
import pytest
from elasticsearch import Elasticsearch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from connectors.elasticsearch.config import ElasticsearchConfig
from connectors.elasticsearch.index_admin import content_mapping
from connectors.elasticsearch.term_statistics import term_statistics
from connectors.embedded.lexical_bound import SCORE_MARGIN, score_factor

pytestmark = pytest.mark.live_es

WORDS = ["apple", "apples", "banana", "cherry", "date", "elder", "fig", "the"]
"""A few words, one a stop word and two of one stem, so that chunks share words often."""

chunk_texts = st.lists(st.sampled_from(WORDS), max_size=7).map(" ".join)


class Scored(NamedTuple):
    """A query's score of each chunk (0.0: not matched) and the factor from the index's
    statistics before and after a change."""

    before: dict[str, float]
    after: dict[str, float]
    factor: float


def _scores(client: Elasticsearch, index: str, query: str) -> dict[str, float]:
    found = client.search(index=index, query={"match": {"content": query}}, size=100,
                          source=False)
    return {hit["_id"]: float(hit["_score"]) for hit in found["hits"]["hits"]}


def _write(client: Elasticsearch, index: str, contents: dict[str, str], deleted: list[str]
           ) -> None:
    operations: list[dict] = []
    for chunk_id, content in contents.items():
        operations += [{"index": {"_index": index, "_id": chunk_id}}, {"content": content}]
    operations += [{"delete": {"_index": index, "_id": chunk_id}} for chunk_id in deleted]
    if operations:
        client.bulk(operations=operations, refresh=True)


def _scored(client: Elasticsearch, url: str, old: list[str], standing: list[int],
            added: list[str], query: str) -> Scored:
    index = f"bound-{uuid.uuid4().hex[:10]}"
    config = ElasticsearchConfig(hosts=(url,), index=index)
    client.indices.create(index=index, mappings={"properties": {
        "content": content_mapping(config.stemmer)}})
    try:
        _write(client, index, {f"c{n}": text for n, text in enumerate(old)}, [])
        before, old_terms = _scores(client, index, query), term_statistics(client, config,
                                                                            [query])
        gone = [f"c{n}" for n in range(len(old)) if n not in standing]
        _write(client, index, {f"new{n}": text for n, text in enumerate(added)}, gone)
        after, new_terms = _scores(client, index, query), term_statistics(client, config,
                                                                           [query])
    finally:
        client.options(ignore_status=404).indices.delete(index=index)
    factor = score_factor(old_terms.statistics, new_terms.statistics, new_terms.terms[query])
    return Scored(before, after, factor)


@settings(max_examples=40, deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture])
@given(old=st.lists(chunk_texts, min_size=2, max_size=10), drawn=st.data(),
       added=st.lists(chunk_texts, max_size=6),
       query=st.lists(st.sampled_from([*WORDS, "kiwi"]), min_size=1, max_size=4).map(" ".join))
def test_no_unchanged_chunk_outside_a_kept_list_scores_above_its_inflated_bound(
        es_url: str, es_client: Elasticsearch, old: list[str], drawn: st.DataObject,
        added: list[str], query: str) -> None:
    standing = drawn.draw(st.lists(st.sampled_from(range(len(old))), unique=True,
                                   min_size=1), label="standing")
    scored = _scored(es_client, es_url, old, standing, added, query)
    ranked = sorted(scored.before.values(), reverse=True)
    kept = drawn.draw(st.integers(0, len(ranked)), label="kept")
    bound = ranked[kept] if kept < len(ranked) else 0.0  # the first score left out
    for n in standing:
        chunk = f"c{n}"
        old_score, new_score = scored.before.get(chunk, 0.0), scored.after.get(chunk, 0.0)
        assert new_score <= old_score * scored.factor * (1 + SCORE_MARGIN) + 1e-30, (
            old[n], old_score, new_score, scored.factor)
        if old_score <= bound:  # left out of the kept list
            assert new_score <= bound * scored.factor * (1 + SCORE_MARGIN) + 1e-30


def test_a_word_grown_rarer_raises_the_factor_and_the_score(es_url: str,
                                                            es_client: Elasticsearch) -> None:
    scored = _scored(es_client, es_url, ["apple fig", "apple date", "apple", "cherry"],
                     [0, 3], ["date elder"], "apple")
    assert scored.factor > 1.0
    assert scored.after["c0"] > scored.before["c0"]
    assert np.isclose(scored.after["c0"], scored.before["c0"] * scored.factor, rtol=0.2)
