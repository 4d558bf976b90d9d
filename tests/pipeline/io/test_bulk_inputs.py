"""Bulk inputs: repeated query ids, Parquet queries and results."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.cli.main import main
from tests.builders import chunk_records, unit_vectors
from tests.pipeline.cli_runs import DIM, lines_of, run_cli

VECTORS = unit_vectors(40, dim=DIM)


def test_a_repeated_query_id_is_a_dead_letter_naming_the_first_line(
        store_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = [json.dumps({"id": "q1", "vector": VECTORS[0].tolist()}),
             json.dumps({"id": "q2", "vector": VECTORS[1].tolist()}),
             json.dumps({"id": "q1", "vector": VECTORS[2].tolist()}),
             "",
             json.dumps({"id": "q1", "text": "content 3"})]
    results, dead, code = run_cli(store_config, tmp_path, lines)
    assert code == 0
    by_id = {r["query_id"]: r for r in results}
    assert sorted(by_id) == ["q1", "q2"]
    assert by_id["q1"]["evidence"][0]["evidence_key"] == "doc0#chunk-0"
    assert [(d["line_number"], d["query_id"], d["error"]) for d in dead] == [
        (n, "q1", "id 'q1' is already used by line 1; query ids must be unique (the first "
                  "line keeps it)") for n in (3, 5)]
    assert dead[0]["input"]["vector"] == pytest.approx(VECTORS[2].tolist())
    assert "inputs = outputs + dead letters: 4 = 2 + 2 (balanced)" in capsys.readouterr().out


def test_an_invalid_first_line_still_owns_its_id(store_config: Path, tmp_path: Path) -> None:
    lines = [json.dumps({"id": "q1", "vector": "oops"}),
             json.dumps({"id": "q1", "vector": VECTORS[0].tolist()})]
    results, dead, _ = run_cli(store_config, tmp_path, lines)
    assert results == []
    assert [(d["line_number"], "already used by line 1" in d["error"]) for d in dead] == [
        (1, False), (2, True)]


def _queries_table(rows: list[dict]) -> pa.Table:
    schema = pa.schema([("id", pa.string()), ("text", pa.string()),
                        ("vector", pa.list_(pa.float32()))])
    return pa.Table.from_pylist(rows, schema=schema)


def test_parquet_queries_in_and_parquet_results_out(store_config: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"id": f"v{i}", "vector": VECTORS[i].tolist()} for i in range(5)]
    rows += [{"id": "t", "text": "content 7"}, {"id": "neither"},
             {"id": "short", "vector": [1.0, 0.0]}]
    queries = tmp_path / "q.parquet"
    pq.write_table(_queries_table(rows), queries, row_group_size=3)
    out, dead = tmp_path / "out.parquet", tmp_path / "dead.jsonl"
    assert main(["run", "--config", str(store_config), "--queries", str(queries),
                 "--out", str(out), "--dead-letter", str(dead)]) == 0
    results = {r["query_id"]: r for r in pq.read_table(out).to_pylist()}
    assert sorted(results) == ["t", "v0", "v1", "v2", "v3", "v4"]
    assert results["v3"]["evidence"][0]["evidence_key"] == "doc0#chunk-3"
    assert results["v3"]["projected"][0]["document_id"] == "doc0#chunk-3"
    assert [(d["line_number"], d["query_id"]) for d in lines_of(dead)] == [(7, "neither"),
                                                                         (8, "short")]
    assert "inputs = outputs + dead letters: 8 = 6 + 2 (balanced)" in capsys.readouterr().out


def test_parquet_results_hold_what_jsonl_results_hold(store_config: Path,
                                                      tmp_path: Path) -> None:
    lines = [json.dumps({"id": f"q{i}", "vector": VECTORS[i].tolist()}) for i in range(6)]
    jsonl_results, _, _ = run_cli(store_config, tmp_path, lines)
    out = tmp_path / "out.parquet"
    assert main(["run", "--config", str(store_config), "--queries",
                 str(tmp_path / "queries.jsonl"), "--out", str(out)]) == 0
    parquet_results = pq.read_table(out).to_pylist()
    assert sorted(parquet_results, key=lambda r: r["query_id"]) == sorted(
        jsonl_results, key=lambda r: r["query_id"])


def test_an_hnsw_store_is_built_by_index_with_its_recall_and_expected_by_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chunks = tmp_path / "chunks.jsonl"
    chunks.write_text("".join(r.model_dump_json() + "\n"
                              for r in chunk_records(unit_vectors(300, dim=DIM), 3)))
    store = ["--set", f"search.embedded.path={tmp_path / 'store'}", "--set", f"embedder.dim={DIM}"]
    assert main(["index", "--chunks", str(chunks), *store,
                 "--set", "search.embedded.index=hnsw"]) == 0
    assert "hnsw index (m=32, ef-construction=200, ef-search=auto, measured at 16): recall@20 " in (
        capsys.readouterr().out)
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"id": "q", "vector": unit_vectors(300, dim=DIM)[4].tolist()}))
    out = tmp_path / "out.jsonl"
    assert main(["run", "--queries", str(queries), "--out", str(out), *store]) == 2
    assert "search.embedded.index='flat': the store at" in capsys.readouterr().err
    assert main(["run", "--queries", str(queries), "--out", str(out), *store,
                 "--set", "search.embedded.index=hnsw"]) == 0
    assert lines_of(out)[0]["evidence"][0]["evidence_key"] == "doc1#chunk-1"
