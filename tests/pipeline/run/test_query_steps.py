"""Steps that see the query (issue 48): Mmr reads the candidates' stored vectors, Rerank their
contents and the query's text; the chain reads each before the first step that needs it, and
`run` and `explain` give the same answer."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from pipeline.cli.main import main
from pipeline.config.loader import load_settings
from pipeline.run import chain
from stages.steps.rerank import rerank_step
from tests.builders import chunk_records, unit_vectors
from tests.pipeline.cli_runs import DIM, lines_of, run_cli

MMR = ["--set", "rag.mmr.lambda=0.2", "--set", "rag.return-n=4",
       "--set", "rag.max-chunks-per-document=4"]


def _vector_line(seed: int = 3) -> str:
    return json.dumps({"id": "q", "vector": unit_vectors(1, dim=DIM, seed=seed)[0].tolist()})


def test_mmr_reads_vectors_before_it_and_contents_after_topn() -> None:
    names = chain.step_names(load_settings(overrides=["rag.mmr.lambda=0.5"]).rag)
    assert names[names.index("PerDocCap"):] == [
        "PerDocCap", "FetchVectors", "Mmr", "TopN", "FetchContent", "Project"]


def test_a_run_with_mmr_keeps_what_explain_says_and_differs_from_relevance_alone(
        store_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("plain", "mmr"):
        (tmp_path / name).mkdir()
    widen = ["--set", "rag.return-n=4", "--set", "rag.max-chunks-per-document=4"]
    plain, _, code = run_cli(store_config, tmp_path / "plain", [_vector_line()], *widen)
    assert code == 0
    diverse, dead, code = run_cli(store_config, tmp_path / "mmr", [_vector_line()], *MMR)
    assert code == 0 and dead == []
    kept = [b["evidence_key"] for b in diverse[0]["evidence"]]
    assert len(kept) == 4 and kept != [b["evidence_key"] for b in plain[0]["evidence"]]
    scores = [b["score"] for b in diverse[0]["evidence"]]
    assert scores == sorted(scores, reverse=True)  # Mmr changes which, not how they rank
    assert re.search(r"diversified_away: [1-9]", capsys.readouterr().out)
    manifest = json.loads(Path(f"{tmp_path / 'mmr' / 'out.jsonl'}.manifest.json").read_text())
    assert [s["step"] for s in manifest["chain"]] == ["KeyedDedup", "PerDocCap", "Mmr", "TopN"]


def test_explain_shows_what_mmr_removed_and_gives_the_runs_answer(
        store_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results, _, code = run_cli(store_config, tmp_path, [json.dumps(
        {"id": "q", "text": "content 7"})], *MMR)
    assert code == 0
    capsys.readouterr()
    assert main(["explain", "--config", str(store_config), "--query", "content 7", "--json",
                 *MMR]) == 0
    explained = json.loads(capsys.readouterr().out)
    assert explained["diversified_away"]
    assert ([row["evidence_key"] for row in explained["kept"]]
            == [b["evidence_key"] for b in results[0]["evidence"]])
    assert main(["explain", "--config", str(store_config), "--query", "content 7",
                 *MMR]) == 0
    assert "removed for diversity (MMR)" in capsys.readouterr().out


def test_mmr_with_lexical_recall_is_a_config_error_that_says_why(
        store_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = _run(store_config, tmp_path, "--set", "rag.recall.mode=lexical",
                "--set", "rag.mmr.lambda=0.5")
    assert code == 2
    assert "rag.mmr measures relevance by the query's vector" in capsys.readouterr().err


def _run(config: Path, tmp_path: Path, *extra: str) -> int:
    queries = tmp_path / "q.jsonl"
    queries.write_text(_vector_line() + "\n")
    return main(["run", "--config", str(config), "--queries", str(queries), "--out",
                 str(tmp_path / "out.jsonl"), *extra])


class WordOverlap:
    """A pair scorer at the lowest layer: the share of the query's words in the passage."""

    def __init__(self) -> None:
        self.passages: list[str] = []

    def score(self, text: str, passages: Sequence[str]) -> list[float]:
        self.passages += passages
        words = set(text.split())
        return [len(words & set(p.split())) / len(words) for p in passages]


@pytest.fixture
def overlap_rerank(monkeypatch: pytest.MonkeyPatch) -> None:
    """The chain's Rerank entry built with `WordOverlap` in place of a cross-encoder."""
    entries = [chain.ChainEntry("Rerank", lambda rag: rerank_step(WordOverlap(), top=50),
                                lambda rag: True) if e.name == "Rerank" else e
               for e in chain.CANDIDATE_STEPS]
    monkeypatch.setattr(chain, "CANDIDATE_STEPS", tuple(entries))


def test_rerank_reads_contents_before_it(overlap_rerank: None) -> None:
    names = chain.step_names(load_settings().rag)
    assert names[names.index("PerDocCap"):] == [
        "PerDocCap", "FetchContent", "Rerank", "TopN", "Project"]


def test_a_run_reranks_by_the_scorer_with_contents_and_the_querys_text(
        overlap_rerank: None, store_config: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    # lexical recall of every chunk ("content" is in each); "content 7" is one chunk's content
    line = json.dumps({"id": "q", "text": "content 7"})
    results, dead, code = run_cli(store_config, tmp_path, [line], "--set",
                                  "rag.recall.mode=lexical", "--set", "rag.return-n=3",
                                  "--set", "rag.retrieve-k=40",
                                  "--set", "rag.max-chunks-per-document=4")
    assert code == 0 and dead == []
    evidence = results[0]["evidence"]
    assert evidence[0]["content"] == "content 7" and evidence[0]["score"] == 1.0
    assert all(b["score"] == 0.5 for b in evidence[1:])  # "content" alone: half the words


def test_a_query_without_text_passes_rerank_unchanged_and_counted(
        overlap_rerank: None, store_config: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "plain").mkdir()
    (tmp_path / "reranked").mkdir()
    plain, _, _ = run_cli(store_config, tmp_path / "plain", [_vector_line()])
    capsys.readouterr()
    same, dead, code = run_cli(store_config, tmp_path / "reranked", [_vector_line()])
    assert code == 0 and dead == [] and same == plain
    assert re.search(r"not_reranked: 1", capsys.readouterr().out)


def test_a_rerank_model_folder_that_is_missing_is_a_config_error_naming_it(
        store_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = _run(store_config, tmp_path, "--set", f"rag.rerank.model={tmp_path / 'no-model'}")
    assert code == 2
    assert re.search(r"rag\.rerank\.model=.*no-model.*is no model folder",
                     capsys.readouterr().err)


def test_a_night_with_a_step_that_sees_the_query_is_answered_in_full_and_says_why(
        store_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "first").write_text("")
    for night, previous in (("1", "first"), ("2", "snap1.jsonl")):
        assert _run(store_config, tmp_path, *MMR, "--previous", str(tmp_path / previous),
                    "--snapshot", str(tmp_path / f"snap{night}.jsonl")) == 0
    why = "Mmr sees the query or the chunks' vectors, which a continued night does not carry"
    assert why in capsys.readouterr().out
    manifest = json.loads(Path(f"{tmp_path / 'out.jsonl'}.manifest.json").read_text())
    assert manifest["continuation"]["answered_in_full"].startswith(why)


@pytest.mark.live_es
def test_mmr_on_elasticsearch_keeps_what_it_keeps_on_the_embedded_store(
        es_section: str, tmp_path: Path) -> None:
    """Elasticsearch gives the candidates' vectors from `_source`: the same diverse set."""
    chunks = tmp_path / "chunks.jsonl"
    chunks.write_text("".join(r.model_dump_json() + "\n" for r in chunk_records(
        unit_vectors(40, dim=DIM), chunks_per_doc=4)))
    queries = tmp_path / "q.jsonl"
    queries.write_text("".join(json.dumps({"id": f"q{seed}", "vector": unit_vectors(
        1, dim=DIM, seed=seed)[0].tolist()}) + "\n" for seed in range(5)))
    evidence = {}
    for name, section in (("embedded", f"search:\n  embedded:\n    path: {tmp_path / 'store'}\n"),
                          ("elasticsearch", es_section)):
        config = tmp_path / f"{name}.yaml"
        config.write_text(section + f"embedder:\n  dim: {DIM}\nrag:\n  retrieve-k: 10\n")
        assert main(["index", "--config", str(config), "--chunks", str(chunks)]) == 0
        out = tmp_path / f"{name}.jsonl"
        assert main(["run", "--config", str(config), "--queries", str(queries), "--out",
                     str(out), *MMR]) == 0
        evidence[name] = [[(b["evidence_key"], round(b["score"], 5)) for b in r["evidence"]]
                          for r in lines_of(out)]
    assert evidence["elasticsearch"] == evidence["embedded"]
    assert all(len(keys) == 4 for keys in evidence["embedded"])
