"""The run's start-up checks: the embedder must be the store's, unless nothing is embedded."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest

from connectors.embedded.store import EmbeddedStore
from connectors.embedded.writer import write_store
from connectors.embedder_port import EmbedderInfo
from connectors.embedders.hashing import HashingEmbedder
from core.errors import DimensionMismatchError, EmbedderMismatchError
from pipeline.config.loader import load_settings
from pipeline.io.query_source import query_source
from pipeline.run import preflight as preflight_module
from pipeline.run.job import run_job
from pipeline.run.preflight import preflight
from tests.builders import chunk_records, unit_vectors

OTHER = EmbedderInfo("sentence-transformers", "other-model", 8)


def _store(path: Path, dim: int, embedder: EmbedderInfo | None) -> partial[EmbeddedStore]:
    write_store(path, chunk_records(unit_vectors(12, dim=dim)), embedder)
    return partial(EmbeddedStore.open, path)


def _queries(path: Path, *lines: dict) -> str:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return str(path)


def test_a_vector_only_run_needs_no_matching_embedder(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _store(store, 4, None)
    settings = load_settings(overrides=[f"search.embedded.path={store}"])  # hashing, 384 dims
    queries = _queries(tmp_path / "q.jsonl", {"id": "v", "vector": [1.0, 0.0, 0.0, 0.0]})
    summary = run_job(settings, queries_path=queries, out_path=str(tmp_path / "out.jsonl"),
                      dead_letter_path=str(tmp_path / "dead.jsonl"))
    assert summary.counts["results"] == 1 and summary.balanced


def test_text_queries_against_another_embedders_store_stop_the_run_naming_both(
        tmp_path: Path) -> None:
    port = _store(tmp_path / "store", 8, OTHER)
    queries = _queries(tmp_path / "q.jsonl", {"id": "t", "text": "open a file"})
    with pytest.raises(EmbedderMismatchError, match=r"built with sentence-transformers "
                                                    r"other-model.*configured embedder is hashing"
                                                    r".*rag-evidence index --rebuild"):
        preflight(port, partial(HashingEmbedder, 8), query_source(queries))


def test_a_store_without_a_record_is_checked_by_dimension(tmp_path: Path) -> None:
    port = _store(tmp_path / "store", 4, None)
    queries = _queries(tmp_path / "q.jsonl", {"id": "t", "text": "open a file"})
    with pytest.raises(DimensionMismatchError, match="embedder.dim has 384 dimensions but the "
                                                     "store expects 4"):
        preflight(port, partial(HashingEmbedder, 384), query_source(queries))


def test_the_same_embedder_passes(tmp_path: Path) -> None:
    port = _store(tmp_path / "store", 8, HashingEmbedder(8).info)
    queries = _queries(tmp_path / "q.jsonl", {"id": "t", "text": "open a file"})
    assert preflight(port, partial(HashingEmbedder, 8), query_source(queries)) is None


def test_lexical_runs_skip_the_embedder_check(tmp_path: Path) -> None:
    port = _store(tmp_path / "store", 8, OTHER)
    queries = query_source(_queries(tmp_path / "q.jsonl", {"id": "t", "text": "x"}))
    assert preflight(port, None, queries) is None


def test_text_queries_past_the_first_lines_become_dead_letters_naming_both(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(preflight_module, "PEEK_LINES", 1)
    store = tmp_path / "store"
    _store(store, 8, OTHER)
    settings = load_settings(overrides=[f"search.embedded.path={store}", "embedder.dim=8"])
    queries = _queries(tmp_path / "q.jsonl", {"id": "v", "vector": [1.0] * 8},
                       {"id": "t", "text": "open a file"})
    dead = tmp_path / "dead.jsonl"
    summary = run_job(settings, queries_path=queries, out_path=str(tmp_path / "out.jsonl"),
                      dead_letter_path=str(dead))
    (letter,) = [json.loads(line) for line in dead.read_text().splitlines()]
    assert (letter["query_id"], letter["stage"]) == ("t", "embed")
    assert "other-model" in letter["error"] and "hashing" in letter["error"]
    assert summary.counts["results"] == 1 and summary.balanced


def test_text_queries_over_a_store_that_records_no_embedder_get_a_warning_naming_ours(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    port = _store(tmp_path / "store", 8, None)
    text = _queries(tmp_path / "text.jsonl", {"id": "t", "text": "open a file"})
    vector = _queries(tmp_path / "vector.jsonl", {"id": "v", "vector": [1.0] + [0.0] * 7})
    with caplog.at_level("WARNING", logger="pipeline.run.preflight"):
        assert preflight(port, partial(HashingEmbedder, 8), query_source(vector)) is None
        assert _preflight_warnings(caplog) == []
        assert preflight(port, partial(HashingEmbedder, 8), query_source(text),
                         store="the embedded store") is None
    assert _preflight_warnings(caplog) == [
        "the embedded store does not record the embedder that built it (indexes written by "
        "LangChain, LlamaIndex or Haystack never do): text queries are embedded with "
        f"{HashingEmbedder(8).info.describe()}, which must be that one"]


def _preflight_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "pipeline.run.preflight"]


def test_another_embedders_store_is_refused_before_any_model_is_loaded(
        tmp_path: Path, minilm: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from connectors.embedders import sentence_transformer

    def never(*_: object, **__: object) -> None:
        raise AssertionError("the model was loaded before the refusal")

    monkeypatch.setattr(sentence_transformer.SentenceTransformerEmbedder, "__init__", never)
    store = tmp_path / "store"
    _store(store, 384, HashingEmbedder(384).info)
    settings = load_settings(overrides=[f"search.embedded.path={store}",
                                        "embedder.kind=sentence-transformers",
                                        f"embedder.model={minilm}"])
    queries = _queries(tmp_path / "q.jsonl", {"id": "t", "text": "open a file"})
    with pytest.raises(EmbedderMismatchError, match="all-MiniLM-L6-v2"):
        run_job(settings, queries_path=queries, out_path=str(tmp_path / "out.jsonl"))
