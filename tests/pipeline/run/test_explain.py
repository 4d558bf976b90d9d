"""`rag-evidence explain`: one query through every stage of a run, as tables or as JSON, with
the same answer as `run` gives it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pipeline.cli.main import main

DOCS = {"csv.md": ["# csv", "Read rows of a CSV file as dictionaries with DictReader.",
                   "Write rows of a CSV file with a writer and a dialect.",
                   "Quote fields of a CSV file that hold the delimiter."],
        "json.md": ["# json", "Parse JSON text into dictionaries with json.loads."],
        "heapq.md": ["# heapq", "Push and pop items of a heap queue."]}


@pytest.fixture
def store(tmp_path: Path) -> list[str]:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, paragraphs in DOCS.items():
        (docs / name).write_text("\n\n".join(paragraphs))
    settings = ["--set", f"search.embedded.path={tmp_path / 'store'}", "--set",
                "chunking.max-chars=60", "--set", "rag.return-n=3", "--set",
                "rag.max-chunks-per-document=1"]
    assert main(["index", "--docs", str(docs), *settings]) == 0
    return settings


def test_explain_prints_each_stage_as_a_table(store: list[str],
                                              capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["explain", "--query", "read a csv file as dictionaries", *store]) == 0
    text = capsys.readouterr().out
    for title in ("retriever knn:text: its ranked hits", "merged as duplicates",
                  "removed by the per-document cap", "kept by TopN (3)",
                  "projected for the Agent (3)"):
        assert title in text
    assert re.search(r"^  rank +doc_id +evidence_key +score$", text, re.MULTILINE)
    assert re.search(r"^  2 +csv\.md +csv\.md#chunk-\d", text, re.MULTILINE)


def test_explain_as_json_says_what_the_cap_removed_and_gives_runs_answer(
        store: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["explain", "--query", "read a csv file as dictionaries", "--json",
                 *store]) == 0
    explained = json.loads(capsys.readouterr().out)
    hits = explained["retrievers"]["knn:text"]
    assert [h["rank"] for h in hits] == list(range(1, len(hits) + 1))
    csv_chunks = [h["evidence_key"] for h in hits if h["doc_id"] == "csv.md"]
    assert {c["evidence_key"] for c in explained["capped"]} == set(csv_chunks[1:])
    kept = [k["evidence_key"] for k in explained["kept"]]
    queries, out = tmp_path / "q.jsonl", tmp_path / "out.jsonl"
    queries.write_text(json.dumps({"id": "q", "text": "read a csv file as dictionaries"}) + "\n")
    assert main(["run", "--queries", str(queries), "--out", str(out), *store]) == 0
    (result,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert [b["evidence_key"] for b in result["evidence"]] == kept
    assert explained["result"]["projected"] == result["projected"]


def test_explain_with_filters_searches_only_what_they_match(
        store: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["explain", "--query", "parse text", "--filters", '{"docId": "json.md"}',
                 "--json", *store]) == 0
    explained = json.loads(capsys.readouterr().out)
    assert {h["doc_id"] for h in explained["retrievers"]["knn:text"]} == {"json.md"}


def test_filters_that_are_no_json_object_are_a_one_line_error(
        store: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "--query", "x", "--filters", "[1]", *store]) == 2
    assert "--filters='[1]': must be a JSON object" in capsys.readouterr().err


def test_explain_of_lexical_recall_embeds_nothing_and_finds_by_words(
        store: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["explain", "--query", "heap queues", "--json", *store,
                 "--set", "rag.recall.mode=lexical"]) == 0
    explained = json.loads(capsys.readouterr().out)
    (retriever,) = explained["retrievers"]
    assert retriever.startswith("bm25")
    assert explained["result"]["evidence"][0]["evidence_key"].startswith("heapq.md#")


def test_explain_as_json_has_every_steps_field_empty_where_the_step_did_not_run(
        store: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["explain", "--query", "read a csv file", "--json", *store]) == 0
    explained = json.loads(capsys.readouterr().out)
    fields = [k for k in explained if k not in ("query", "retrievers", "result")]
    assert fields == ["fused", "merged", "capped", "below_min_score", "diversified_away",
                      "reranked", "kept"]
    assert explained["fused"] == explained["below_min_score"] == [] and explained["kept"]
