"""Semantic and hybrid recall end to end, with the real MiniLM model, on both backends."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from elasticsearch import Elasticsearch

from pipeline.cli.main import main

pytestmark = pytest.mark.slow  # the model, loaded

QUESTIONS = {"json": "How do I turn a JSON string into Python objects?",
             "heap": "Keep the smallest item first while pushing and popping",
             "tmp": "scratch folder that is removed afterwards"}
TOPICS = {
    "json.md": ["# json\n\nDeserialize a str containing a JSON document to a Python object.",
                "Serialize an object to a JSON formatted str."],
    "heapq.md": ["# heapq\n\nHeap queue algorithm: push onto the heap, pop the smallest item."],
    "tempfile.md": ["# tempfile\n\nCreate a temporary directory; it is deleted on cleanup."],
    "csv.md": ["# csv\n\nRead and write comma separated values."],
}


def _common(minilm: str) -> list[str]:
    return ["--set", "embedder.kind=sentence-transformers", "--set", f"embedder.model={minilm}",
            "--set", "chunking.max-chars=120", "--set", "rag.retrieve-k=6",
            "--set", "rag.return-n=4"]


def _elasticsearch(minilm: str, url: str, index: str) -> list[str]:
    return [*_common(minilm), "--set", "search.backend=elasticsearch",
            "--set", f"search.elasticsearch.hosts=[{url}]",
            "--set", f"search.elasticsearch.index={index}",
            "--set", "search.elasticsearch.index-options={type: flat}"]


@pytest.fixture(params=["embedded", pytest.param("elasticsearch", marks=pytest.mark.live_es)])
def backend(request: pytest.FixtureRequest, tmp_path: Path, minilm: str) -> list[str]:
    if request.param == "embedded":
        return [*_common(minilm), "--set", f"search.embedded.path={tmp_path / 'store'}"]
    return _elasticsearch(minilm, request.getfixturevalue("es_url"),
                          request.getfixturevalue("es_index"))


def _index(tmp_path: Path, settings: list[str]) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, paragraphs in TOPICS.items():
        (docs / name).write_text("\n\n".join(paragraphs))
    assert main(["index", "--docs", str(docs), *settings]) == 0


def _run(tmp_path: Path, settings: list[str], *extra: str) -> dict[str, list[dict]]:
    queries = tmp_path / "queries.jsonl"
    queries.write_text("".join(json.dumps({"id": k, "text": q}) + "\n"
                               for k, q in QUESTIONS.items()))
    out = tmp_path / "out.jsonl"
    assert main(["run", "--queries", str(queries), "--out", str(out), *settings, *extra]) == 0
    return {r["query_id"]: r["evidence"] for r in map(json.loads, out.read_text().splitlines())}


def test_semantic_recall_answers_paraphrased_questions(tmp_path: Path,
                                                       backend: list[str]) -> None:
    _index(tmp_path, backend)
    evidence = _run(tmp_path, backend)
    assert {q: blocks[0]["doc_id"] for q, blocks in evidence.items()} == {
        "json": "json.md", "heap": "heapq.md", "tmp": "tempfile.md"}
    assert all(b["hit_reasons"] == ["knn:text"] for blocks in evidence.values() for b in blocks)


def test_hybrid_recall_fuses_bm25_and_knn_by_evidence_key(tmp_path: Path,
                                                          backend: list[str]) -> None:
    _index(tmp_path, backend)
    evidence = _run(tmp_path, backend, "--set", "rag.recall.mode=hybrid")
    top = evidence["json"][0]
    assert top["evidence_key"] == "json.md#chunk-0"
    assert top["hit_reasons"] == ["knn:text", "bm25:text"] or top["hit_reasons"] == [
        "bm25:text", "knn:text"]
    ranks = {r["reason"]: r["rank"] for r in top["retrievers"]}
    assert set(ranks) == {"knn:text", "bm25:text"}
    assert top["score"] == pytest.approx(sum(1 / (60 + rank) for rank in ranks.values()))
    keys = [b["evidence_key"] for blocks in evidence.values() for b in blocks]
    assert len(keys) == len({(q, b["evidence_key"]) for q, bs in evidence.items() for b in bs})


@pytest.mark.torch
def test_a_store_built_by_torch_answers_onnx_queries_with_the_same_evidence(
        tmp_path: Path, backend: list[str]) -> None:
    """One model, two backends: a store indexed by torch is accepted by an onnx run (and its
    evidence is torch's, to the order)."""
    torch = [*backend, "--set", "embedder.backend=torch"]
    _index(tmp_path, torch)
    by_torch = _run(tmp_path, torch)
    by_onnx = _run(tmp_path, [*backend, "--set", "embedder.backend=onnx"])
    assert {q: [b["evidence_key"] for b in blocks] for q, blocks in by_onnx.items()} == {
        q: [b["evidence_key"] for b in blocks] for q, blocks in by_torch.items()}
    for query, blocks in by_onnx.items():
        assert [b["score"] for b in blocks] == pytest.approx(
            [b["score"] for b in by_torch[query]], abs=0.01)


def test_lexical_recall_needs_no_model(tmp_path: Path, backend: list[str]) -> None:
    _index(tmp_path, backend)
    evidence = _run(tmp_path, backend, "--set", "rag.recall.mode=lexical",
                    "--set", "embedder.model=/nowhere")
    assert evidence["json"][0]["hit_reasons"] == ["bm25:text"]


def test_a_run_with_another_embedder_is_refused_naming_both(
        tmp_path: Path, backend: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    _index(tmp_path, backend)
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"id": "q", "text": "parse json"}\n')
    code = main(["run", "--queries", str(queries), "--out", str(tmp_path / "o.jsonl"), *backend,
                 "--set", "embedder.kind=hashing", "--set", "embedder.dim=384"])
    assert code == 2
    err = capsys.readouterr().err
    assert re.search(r"built with sentence-transformers all-MiniLM-L6-v2 \(384 dims, backend "
                     r"onnx, weights [0-9a-f]{16}\)", err)
    assert "configured embedder is hashing (384 dims)" in err


@pytest.mark.live_es
def test_the_index_records_its_embedder_in_meta(tmp_path: Path, minilm: str, es_url: str,
                                                 es_client: Elasticsearch, es_index: str) -> None:
    _index(tmp_path, _elasticsearch(minilm, es_url, es_index))
    mapping = es_client.indices.get_mapping(index=es_index).body[es_index]["mappings"]
    assert mapping["_meta"]["rag_evidence"]["embedder"]["model"] == "all-MiniLM-L6-v2"
