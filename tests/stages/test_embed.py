"""The Embed step: batched, one model per worker process, never loaded when not needed."""

from __future__ import annotations

from collections.abc import Sequence

import apache_beam as beam
import numpy as np
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from connectors.embedder_port import Purpose
from connectors.embedders.hashing import HashingEmbedder
from core.errors import ConfigError
from stages.embed import embed_queries
from stages.models import DeadLetter, EmbeddedQuery, Query
from stages.support.shared_embedder import SharedEmbedder
from stages.transforms.embed import EmbedQueries

DIM = 8
LOADS: list[int] = []
CALLS: list[int] = []


class CountingEmbedder(HashingEmbedder):
    """Records how many texts each call embeds (a fake at the lowest layer, same port)."""

    def embed(self, texts: Sequence[str], purpose: Purpose = "query") -> np.ndarray:
        CALLS.append(len(texts))
        return super().embed(texts, purpose)


def load_counting_embedder() -> CountingEmbedder:
    LOADS.append(1)
    return CountingEmbedder(DIM)


def test_only_queries_without_vectors_are_embedded() -> None:
    queries = [Query(id="t", text="open a file"), Query(id="v", vector=(1.0,) * DIM, text="x")]
    text, given = embed_queries(queries, HashingEmbedder(DIM))
    assert isinstance(text, EmbeddedQuery) and text.text_vector is not None
    assert isinstance(given, EmbeddedQuery) and given.text_vector is None


def test_a_text_with_no_words_fails_alone_at_the_embed_stage() -> None:
    ok, empty = embed_queries([Query(id="ok", text="open a file"), Query(id="e", text="how is it")],
                              HashingEmbedder(DIM))
    assert isinstance(ok, EmbeddedQuery)
    assert isinstance(empty, DeadLetter) and empty.stage == "embed" and "no words" in empty.error


def test_a_refusal_dead_letters_text_queries_and_lets_vector_queries_through() -> None:
    refusal = ConfigError("embedder.model", "missing", "not here")
    text, given = embed_queries([Query(id="t", text="open a file"),
                                 Query(id="v", vector=(1.0,) * DIM)], refusal)
    assert isinstance(text, DeadLetter) and "embedder.model='missing'" in text.error
    assert isinstance(given, EmbeddedQuery)


def _run(queries: list[Query], batch_size: int) -> None:
    with TestPipeline() as p:
        out = p | beam.Create(queries) | EmbedQueries(
            SharedEmbedder(load_counting_embedder, "counting"), batch_size=batch_size)
        assert_that(out.queries | beam.Map(lambda q: q.query.id),
                    equal_to([q.id for q in queries]))


def test_the_model_is_loaded_once_and_fed_whole_batches() -> None:
    LOADS.clear()
    CALLS.clear()
    _run([Query(id=f"q{i}", text=f"question number {i}") for i in range(50)], batch_size=16)
    assert len(LOADS) == 1
    assert sum(CALLS) == 50 and sorted(CALLS, reverse=True)[:3] == [16, 16, 16]


def test_a_run_of_vector_queries_never_loads_the_model() -> None:
    LOADS.clear()
    _run([Query(id=f"q{i}", vector=(1.0,) * DIM) for i in range(5)], batch_size=4)
    assert LOADS == []
