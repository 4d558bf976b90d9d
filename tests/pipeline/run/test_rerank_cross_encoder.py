"""Rerank with a real sentence-transformers CrossEncoder (issue 48): a tiny one with random
weights that the test builds and saves. It proves the plumbing (contents, the query's text, the
model loaded once per process, the manifest naming it), not quality."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from connectors.embedders.model_fingerprint import model_fingerprint
from connectors.rerankers import cross_encoder
from pipeline.cli.main import main
from tests.pipeline.cli_runs import index_store, lines_of

pytestmark = pytest.mark.torch


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.tiny_cross_encoder import build

    return build(tmp_path_factory.mktemp("cross-encoder") / "tiny")


def test_a_run_scores_its_evidence_with_the_model_and_the_manifest_names_it(
        model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from sentence_transformers import CrossEncoder

    config = index_store(tmp_path)
    texts = ["content 7", "content 12", "content 3"]
    queries = tmp_path / "q.jsonl"
    queries.write_text("".join(json.dumps({"id": f"q{i}", "text": t}) + "\n"
                               for i, t in enumerate(texts)))
    out = tmp_path / "out.jsonl"
    settings = ["--set", "rag.recall.mode=lexical", "--set", f"rag.rerank.model={model}",
                "--set", "rag.rerank.top=8", "--set", "rag.return-n=5"]
    cross_encoder._LOADED.clear()
    assert main(["run", "--config", str(config), "--queries", str(queries), "--out", str(out),
                 *settings]) == 0
    assert len(cross_encoder._LOADED) == 1  # once for the process, not per query
    reference = CrossEncoder(str(model), device="cpu")
    for result, text in zip(lines_of(out), texts, strict=True):
        evidence = result["evidence"]
        expected = reference.predict([(text, b["content"]) for b in evidence])
        assert [b["score"] for b in evidence] == pytest.approx(expected.tolist(), abs=1e-6)
        assert [b["score"] for b in evidence] == sorted((b["score"] for b in evidence),
                                                        reverse=True)
    manifest = json.loads(Path(f"{out}.manifest.json").read_text())
    (rerank,) = [s for s in manifest["chain"] if s["step"] == "Rerank"]
    assert rerank == {"step": "Rerank", "model": str(model.resolve()),
                      "fingerprint": model_fingerprint(model)}
    capsys.readouterr()
    assert main(["explain", "--config", str(config), "--query", texts[0], "--json",
                 *settings]) == 0
    explained = json.loads(capsys.readouterr().out)
    first = lines_of(out)[0]["evidence"]
    assert [r["evidence_key"] for r in explained["reranked"]][:5] == [
        b["evidence_key"] for b in first]


def test_eval_compares_a_reranked_config_and_its_funnel_has_the_step(
        model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = index_store(tmp_path)
    queries, qrels = tmp_path / "q.jsonl", tmp_path / "qrels.tsv"
    queries.write_text(json.dumps({"id": "q", "text": "content 7"}) + "\n")
    qrels.write_text("q 0 doc1#chunk-3 1\n")
    reranked = tmp_path / "reranked.yaml"
    reranked.write_text(config.read_text() + f"  rerank:\n    model: {model}\n    top: 8\n")
    capsys.readouterr()
    assert main(["eval", "--queries", str(queries), "--qrels", str(qrels), "--config",
                 str(config), "--compare", str(reranked), "--set",
                 "rag.recall.mode=lexical"]) == 0
    report = capsys.readouterr().out
    funnel = report[report.index("loss funnel"):].splitlines()
    assert "Rerank" in funnel[1].split()
