"""`eval`'s loss funnel (issue 33): a relevant chunk lost at each stage, built on purpose, is
reported at that stage; counts never increase; the last figure agrees with Recall@k."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from connectors.chunk_record import ChunkRecord
from connectors.embedded.writer import write_store
from pipeline.cli.main import main
from pipeline.config.loader import load_settings
from pipeline.eval.runner import EvalRow, evaluate

# cosine to the query (1, 0, 0, 0) of each chunk, best first
COSINES = {"docA#chunk-0": 0.99, "docA#chunk-1": 0.98, "docB#chunk-0": 0.97,
           "docC#chunk-0": 0.5, "docD#chunk-0": -0.9}
QUERY = [1.0, 0.0, 0.0, 0.0]

# config: (overrides, the relevant chunk it must lose, the stage that drops it)
LOST_ON_PURPOSE = {
    "recall": (["rag.retrieve-k=3"], "docD#chunk-0", "Recall"),
    "dedup": (["rag.dedup-key=source"], "docA#chunk-1", "KeyedDedup"),
    "cap": (["rag.max-chunks-per-document=1"], "docA#chunk-1", "PerDocCap"),
    "floor": (["rag.min-score=0.8"], "docC#chunk-0", "ScoreFloor"),
    "top-n": (["rag.return-n=2"], "docB#chunk-0", "TopN"),
    "budget": (["rag.return-n=3", "projection.max-items=1"], "docA#chunk-1", "Project"),
}


def _store(tmp_path: Path) -> Path:
    records = []
    for key, cosine in COSINES.items():
        doc, chunk = key.split("#chunk-")
        records.append(ChunkRecord(
            id=key, vector=(cosine, math.sqrt(1 - cosine ** 2), 0.0, 0.0), content=key,
            metadata={"docId": doc, "chunkIndex": int(chunk),
                      "source": "shared.md" if doc == "docA" else f"{doc}.md"}))
    write_store(tmp_path / "store", records)
    return tmp_path / "store"


def _files(tmp_path: Path, relevant: dict[str, list[str]]) -> tuple[str, str]:
    queries, qrels = tmp_path / "queries.jsonl", tmp_path / "qrels.tsv"
    queries.write_text("".join(json.dumps({"id": q, "vector": QUERY}) + "\n" for q in relevant))
    qrels.write_text("".join(f"{q} 0 {item} 1\n" for q, items in relevant.items()
                             for item in items))
    return str(queries), str(qrels)


def _rows(tmp_path: Path, configs: dict[str, list[str]], relevant: dict[str, list[str]],
          k: int = 10) -> list[EvalRow]:
    store = _store(tmp_path)
    queries, qrels = _files(tmp_path, relevant)
    return evaluate([(label, load_settings(overrides=[f"search.embedded.path={store}",
                                                      "embedder.dim=4", *overrides]))
                     for label, overrides in configs.items()], queries=queries, qrels=qrels, k=k)


def test_a_relevant_chunk_lost_on_purpose_is_reported_at_the_stage_that_dropped_it(
        tmp_path: Path) -> None:
    configs = {label: overrides for label, (overrides, _, _) in LOST_ON_PURPOSE.items()}
    relevant = {"q1": sorted({item for _, item, _ in LOST_ON_PURPOSE.values()})}
    rows = {row.label: row for row in _rows(tmp_path, configs, relevant)}
    for label, (_, item, stage) in LOST_ON_PURPOSE.items():
        funnel = rows[label].funnel
        assert funnel is not None
        lost = {loss.item: loss for loss in funnel.losses}
        assert lost[item].stage == stage, (label, lost)
        if stage == "Recall":
            assert lost[item].ranks == {}
        else:  # recalled: where the retriever ranked it
            assert list(lost[item].ranks.values()) == [list(COSINES).index(item) + 1]


def test_counts_never_increase_and_the_last_agrees_with_recall_at_k(tmp_path: Path) -> None:
    relevant = {"q1": ["docA#chunk-1", "docC#chunk-0"], "q2": ["docB#chunk-0", "docD#chunk-0"]}
    configs = {"wide": ["rag.return-n=4", "projection.max-items=10"],
               "narrow": ["rag.return-n=2", "rag.retrieve-k=4", "projection.max-items=10"]}
    for row in _rows(tmp_path, configs, relevant, k=4):
        funnel = row.funnel
        assert funnel is not None and funnel.relevant == 4
        counts = [funnel.relevant, *funnel.survivors.values()]
        assert counts == sorted(counts, reverse=True), (row.label, counts)
        # two relevant chunks per query: Recall@k is the share of them that reach the Agent
        assert counts[-1] / funnel.relevant == pytest.approx(row.scores.recall), row.label
        assert len(funnel.losses) == funnel.relevant - counts[-1]


def test_eval_prints_the_test_and_the_funnel_and_writes_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = _store(tmp_path)
    queries, qrels = _files(tmp_path, {"q1": ["docA#chunk-1", "docD#chunk-0"]})
    common = ["--set", f"search.embedded.path={store}", "--set", "embedder.dim=4"]
    config = tmp_path / "capped.yaml"
    config.write_text("rag:\n  max-chunks-per-document: 1\n")
    assert main(["eval", "--queries", queries, "--qrels", qrels, *common,
                 "--compare", str(config), "--json", str(tmp_path / "eval.json"),
                 "--losses", str(tmp_path / "losses.jsonl")]) == 0
    out = capsys.readouterr().out
    assert "loss funnel: relevant chunks" in out and "PerDocCap" in out and "p:" in out
    assert "ScoreFloor" not in out and "RrfFusion" not in out  # stages neither config runs
    first, capped = json.loads((tmp_path / "eval.json").read_text())
    # one query that moved can never be significant: every sign flip is as far from zero
    assert "p_value" not in first and capped["p_value"] == 1.0
    assert (capped["improved"], capped["worsened"], capped["tied"]) == (0, 1, 0)
    assert first["funnel"] == {"relevant": 2, "Recall": 2, "KeyedDedup": 2, "PerDocCap": 2,
                               "TopN": 2, "Project": 2}
    assert capped["funnel"]["PerDocCap"] == 1 and capped["funnel"]["Project"] == 1
    losses = [json.loads(line) for line in (tmp_path / "losses.jsonl").read_text().splitlines()]
    assert losses == [{"config": "capped", "query_id": "q1", "item": "docA#chunk-1",
                       "stage": "PerDocCap", "ranks": {"knn:vector": 2}}]


def test_lexical_recall_is_traced_without_an_embedder(tmp_path: Path) -> None:
    store = _store(tmp_path)
    queries, qrels = tmp_path / "queries.jsonl", tmp_path / "qrels.tsv"
    queries.write_text(json.dumps({"id": "q1", "text": "docB"}) + "\n")
    qrels.write_text("q1 0 docB#chunk-0 1\n")
    (row,) = evaluate([("lexical", load_settings(overrides=[
        f"search.embedded.path={store}", "embedder.dim=4", "rag.recall.mode=lexical"]))],
        queries=str(queries), qrels=str(qrels))
    assert row.funnel is not None and row.funnel.to_dict() == {
        "relevant": 1, "Recall": 1, "KeyedDedup": 1, "PerDocCap": 1, "TopN": 1, "Project": 1}
    assert row.scores.recall == 1.0
