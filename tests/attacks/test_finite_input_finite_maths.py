"""Any finite non-zero vector behaves as its direction; one without a direction is
that query's (or that chunk's) own failure, never its batch's."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from connectors.elasticsearch.config import ElasticsearchConfig
from connectors.elasticsearch.port import ElasticsearchPort
from connectors.embedded.parts import EmbeddedPartWriter
from connectors.search_port import SearchRequest
from core.errors import ConfigError, KnowledgeSearchError
from core.vectors import unit, unit_rows
from pipeline.config.loader import load_settings
from tests.builders import chunk_records, embedded_store, unit_vectors
from tests.pipeline.cli_runs import DIM, run_cli

SCALES = [1e-23, 1e-30, 1e20, 1e30]


@pytest.mark.parametrize("scale", SCALES)
def test_a_tiny_or_huge_vector_has_the_direction_of_its_unit_vector(scale: float) -> None:
    direction = unit_vectors(1, dim=384)[0]
    assert np.allclose(unit((direction * scale).tolist()), direction, atol=1e-6)


def test_a_row_without_direction_is_flagged_alone() -> None:
    rows, usable = unit_rows([[0.0, 0.0], [1e-30, 1e-30], [float("inf"), 1.0]])
    assert usable.tolist() == [False, True, False]
    assert np.allclose(rows[1], [2 ** -0.5] * 2)


@pytest.mark.parametrize("scale", SCALES)
def test_a_scaled_query_is_answered_as_its_direction(tmp_path: Path, scale: float) -> None:
    vectors = unit_vectors(20, dim=DIM)
    store = embedded_store(tmp_path / "store", chunk_records(vectors))()
    plain, scaled = store.search([SearchRequest(vector=tuple(vectors[3].tolist()), k=3),
                                  SearchRequest(vector=tuple((vectors[3] * scale).tolist()), k=3)])
    assert isinstance(plain, list) and isinstance(scaled, list)
    assert [h.id for h in scaled] == [h.id for h in plain]
    assert [h.score for h in scaled] == pytest.approx([h.score for h in plain], abs=1e-5)


def test_a_query_without_direction_fails_alone_in_its_batch(tmp_path: Path) -> None:
    vectors = unit_vectors(5, dim=DIM)
    store = embedded_store(tmp_path / "store", chunk_records(vectors))()
    good, bad = store.search([SearchRequest(vector=tuple(vectors[0].tolist()), k=2),
                              SearchRequest(vector=(0.0,) * DIM, k=2)])
    assert isinstance(good, list) and isinstance(bad, KnowledgeSearchError)


def test_a_tiny_chunk_is_stored_as_its_direction(tmp_path: Path) -> None:
    (record,) = chunk_records(unit_vectors(1, dim=DIM))
    tiny = record.model_copy(update={"vector": tuple(v * 1e-30 for v in record.vector)})
    (tmp_path / "stage").mkdir()
    report = EmbeddedPartWriter(tmp_path / "stage", DIM, None).write([tiny])
    assert (report.indexed, report.failures) == (1, [])
    (stored,) = np.load(next((tmp_path / "stage").glob("*.npy")))
    assert np.allclose(stored, record.vector, atol=1e-6)


def test_tiny_and_huge_queries_get_real_scores_in_a_run(store_config: Path,
                                                        tmp_path: Path) -> None:
    direction = [1.0] + [0.5] * (DIM - 1)
    lines = [json.dumps({"id": f"s{i}", "vector": [x * scale for x in direction]})
             for i, scale in enumerate([1.0, *SCALES])]
    results, dead, code = run_cli(store_config, tmp_path, lines)
    assert (len(results), dead, code) == (5, [], 0)
    scores = {r["query_id"]: [b["score"] for b in r["evidence"]] for r in results}
    for i in range(1, 5):
        assert scores[f"s{i}"] == pytest.approx(scores["s0"], abs=1e-5)


@pytest.mark.parametrize("weight", ["-1", ".inf", ".nan"])
def test_a_negative_or_non_finite_fusion_weight_is_a_config_error(weight: str) -> None:
    with pytest.raises(ConfigError, match="rag.recall.weights.bm25"):
        load_settings(overrides=[f"rag.recall.weights.bm25={weight}"])


@pytest.mark.live_es
@pytest.mark.parametrize("scale", [1e-23, 1e20])
def test_elasticsearch_answers_a_scaled_query_as_its_direction(
        es_chunks: tuple[ElasticsearchConfig, np.ndarray], scale: float) -> None:
    config, vectors = es_chunks
    port = ElasticsearchPort.open(config)
    plain, scaled = port.search([SearchRequest(vector=tuple(vectors[2].tolist()), k=3),
                                 SearchRequest(vector=tuple((vectors[2] * scale).tolist()), k=3)])
    port.close()
    assert isinstance(plain, list) and isinstance(scaled, list)
    assert [h.id for h in scaled] == [h.id for h in plain]
    assert [h.score for h in scaled] == pytest.approx([h.score for h in plain], abs=1e-4)
