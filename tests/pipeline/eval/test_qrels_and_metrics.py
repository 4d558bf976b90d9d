"""Judgments in, numbers out: qrels parsing and the metrics of a run."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import InvalidInputError
from pipeline.eval.metrics import ranked_ids, score_run
from pipeline.eval.qrels import Qrels, read_qrels
from stages.models import ChunkEvidence


def _block(key: str, doc: str | None = None) -> ChunkEvidence:
    return ChunkEvidence(evidence_key=key, doc_id=doc, chunk_index=None, source=doc or key,
                         content="", score=1.0, hit_reasons=())


def test_trec_qrels_with_document_ids_are_document_level(tmp_path: Path) -> None:
    path = tmp_path / "q.tsv"
    path.write_text("# comment\nq1 0 json.md 2\nq1 0 re.md 1\n\nq2 0 csv.md 1\n")
    qrels = read_qrels(path)
    assert qrels.level == "document"
    assert qrels.judgments == {"q1": {"json.md": 2, "re.md": 1}, "q2": {"csv.md": 1}}


def test_jsonl_qrels_with_evidence_keys_are_chunk_level(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text('{"query_id": "q1", "id": "json.md#chunk-2", "relevance": 1}\n'
                    '{"query_id": "q1", "id": "vector:abc"}\n')
    assert read_qrels(path) == Qrels({"q1": {"json.md#chunk-2": 1, "vector:abc": 1}}, "chunk")


@pytest.mark.parametrize(("text", "message"), [
    ("q1 json.md 1\n", r"q.tsv:1.*TREC qrels"),
    ("q1 0 json.md#chunk-0 1\nq1 0 json.md 1\n", "mixes evidence keys"),
    ("# only a comment\n", "holds no judgment"),
])
def test_bad_qrels_are_named(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "q.tsv"
    path.write_text(text)
    with pytest.raises(InvalidInputError, match=message):
        read_qrels(path)


def test_document_level_ranks_each_document_once_at_its_best_rank() -> None:
    evidence = [_block("a#chunk-1", "a"), _block("b#chunk-0", "b"), _block("a#chunk-0", "a")]
    assert ranked_ids(evidence, "document") == ["a", "b"]
    assert ranked_ids(evidence, "chunk") == ["a#chunk-1", "b#chunk-0", "a#chunk-0"]


def test_a_perfect_run_scores_one_and_a_missing_query_counts_as_zero() -> None:
    qrels = Qrels({"q1": {"a": 1}, "q2": {"b": 1}}, "document")
    scores = score_run({"q1": [_block("a#chunk-0", "a"), _block("c#chunk-0", "c")]}, qrels, 10)
    assert (scores.ndcg, scores.recall, scores.mrr) == (0.5, 0.5, 0.5)
    assert (scores.answered, scores.judged) == (1, 2)


def test_mrr_is_the_reciprocal_rank_of_the_first_relevant_block() -> None:
    qrels = Qrels({"q1": {"c": 1}}, "document")
    run = {"q1": [_block("a#chunk-0", "a"), _block("b#chunk-0", "b"), _block("c#chunk-0", "c")]}
    assert score_run(run, qrels, 10).mrr == pytest.approx(1 / 3)
    assert score_run(run, qrels, 2).mrr == 0.0


def test_spread_counts_documents_and_the_top_documents_share() -> None:
    qrels = Qrels({"q1": {"a": 1}}, "document")
    run = {"q1": [_block("a#chunk-0", "a"), _block("a#chunk-1", "a"), _block("b#chunk-0", "b"),
                  _block("a#chunk-2", "a")]}
    scores = score_run(run, qrels, 10)
    assert scores.distinct_documents == 2.0 and scores.top_document_share == 0.75
