"""The CLI as a user runs it: index, then run, then read the files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from connectors.embedded.versions import current_version
from pipeline.cli.main import main
from tests.builders import unit_vectors
from tests.pipeline.cli_runs import DIM, lines_of, run_cli


def test_run_writes_one_result_per_query_and_dead_letters_the_rest(
    store_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    vector = unit_vectors(40, dim=DIM)[5].tolist()
    lines = [
        json.dumps({"id": "by-vector", "vector": vector}),
        json.dumps({"id": "by-text", "text": "content five"}),
        "not json at all",
        json.dumps({"id": "short", "vector": [1.0, 0.0]}),
    ]
    results, dead, code = run_cli(store_config, tmp_path, lines)
    assert code == 0
    by_id = {r["query_id"]: r for r in results}
    assert set(by_id) == {"by-vector", "by-text"}
    top = by_id["by-vector"]["evidence"][0]
    assert top["evidence_key"] == "doc1#chunk-1" and top["rank"] == 1
    assert set(top) == {
        "evidence_key",
        "doc_id",
        "chunk_index",
        "source",
        "content",
        "score",
        "rank",
        "hit_reasons",
        "retrievers",
    }
    assert top["retrievers"] == [{"reason": "knn:vector", "rank": 1, "score": top["score"]}]
    assert by_id["by-vector"]["projected"][0]["document_id"] == "doc1#chunk-1"
    assert len(by_id["by-vector"]["evidence"]) == 3
    by_stage = {d["stage"]: d for d in dead}
    assert by_stage["parse"]["line_number"] == 3
    assert (
        by_stage["recall"]["query_id"] == "short" and "2 dimensions" in by_stage["recall"]["error"]
    )
    assert by_stage["recall"]["line_number"] == 4
    assert "inputs = outputs + dead letters: 4 = 2 + 2 (balanced)" in capsys.readouterr().out


def test_a_chunk_found_by_two_sub_queries_is_one_block_with_both_reasons(
    store_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    vector = unit_vectors(40, dim=DIM)[9].tolist()
    line = json.dumps({"id": "rewrites", "vector": vector, "vectors": [vector]})
    results, dead, code = run_cli(store_config, tmp_path, [line])
    assert code == 0 and dead == []
    (result,) = results
    keys = [b["evidence_key"] for b in result["evidence"]]
    assert len(keys) == len(set(keys)) == 3
    assert result["evidence"][0]["evidence_key"] == "doc2#chunk-1"
    assert result["evidence"][0]["hit_reasons"] == ["knn:vector", "knn:vectors[0]"]
    assert "duplicates_merged: 10" in capsys.readouterr().out


def test_beam_options_pass_through_to_the_runner(store_config: Path, tmp_path: Path) -> None:
    lines = [json.dumps({"id": f"q{i}", "text": f"content {i}"}) for i in range(6)]
    results, dead, code = run_cli(
        store_config, tmp_path, lines, "--runner", "DirectRunner", "--direct_num_workers", "2"
    )
    assert code == 0 and len(results) == 6 and dead == []


@pytest.mark.parametrize(("args", "message"), [
    (["--runnr", "DirectRunner"],
     "config --runnr='DirectRunner': is not a Beam pipeline option (did you mean --runner?)"),
    (["--direct_num_worker=2"], "config --direct_num_worker='2': is not a Beam pipeline option "
                                "(did you mean --direct_num_workers?)"),
    (["--runner", "DaskRunner"], "config --runner='DaskRunner': is not supported: it sends every "
                                 "element of a multi-output step to every output"),
])
def test_unknown_beam_options_and_the_refused_runner_fail_before_running(
        store_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        args: list[str], message: str) -> None:
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"id": "q", "text": "x"}\n')
    code = main(["run", "--config", str(store_config), "--queries", str(queries),
                 "--out", str(tmp_path / "out.jsonl"), *args])
    assert code == 2 and not (tmp_path / "out.jsonl").exists()
    assert message in capsys.readouterr().err


def test_index_from_documents_uses_relative_paths_as_doc_ids(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "guide").mkdir(parents=True)
    (docs / "guide" / "intro.md").write_text("Alpha paragraph.\n\n" + "word " * 300)
    store = tmp_path / "store"
    assert (
        main(
            [
                "index",
                "--docs",
                str(docs),
                "--set",
                f"search.embedded.path={store}",
                "--set",
                "chunking.max-chars=200",
            ]
        )
        == 0
    )
    records = lines_of(current_version(store) / "records.jsonl")
    assert records[0]["id"] == "guide/intro.md#chunk-0"
    assert [r["metadata"]["chunkIndex"] for r in records] == list(range(len(records)))
    assert all(len(r["content"]) <= 200 for r in records)


def test_bad_config_is_a_clear_error_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["index", "--docs", str(tmp_path), "--set", "rag.retrun-n=2"])
    assert code == 2
    assert "did you mean 'rag.return-n'" in capsys.readouterr().err


def test_a_missing_query_file_is_named(
    store_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deep = tmp_path / ("a-folder-with-a-long-name-" * 4)  # a path cut short names no file
    deep.mkdir()
    missing = deep / "nope.jsonl"
    assert len(str(missing)) > 120
    args = ["--queries", str(missing), "--out", str(tmp_path / "o.jsonl")]
    assert main(["run", "--config", str(store_config), *args]) == 2
    assert f"--queries='{missing}': does not exist" in capsys.readouterr().err


def test_a_store_of_another_dimension_than_the_embedder_fails_fast(
    store_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"id": "q", "text": "x"}\n')
    args = ["--queries", str(queries), "--out", str(tmp_path / "o.jsonl"), "--set",
            "embedder.dim=16"]
    assert main(["run", "--config", str(store_config), *args]) == 2
    assert "embedder.dim has 16 dimensions but the store expects 8" in capsys.readouterr().err


@pytest.mark.slow
@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.one_of(
            st.builds(
                lambda i: json.dumps({"id": f"t{i}", "text": f"content {i}"}), st.integers(0, 50)
            ),
            st.text(max_size=20),
            st.builds(lambda n: json.dumps({"id": "v", "vector": [0.5] * n}), st.integers(0, 10)),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_every_input_line_ends_as_a_result_or_a_dead_letter(
    store_config: Path, tmp_path: Path, lines: list[str]
) -> None:
    lines = [line.replace("\n", " ").replace("\r", " ") for line in lines]
    results, dead, code = run_cli(store_config, tmp_path, lines)
    assert code == 0
    # blank means ASCII white space only, as in JSON: "\x1c" is a line, and a dead letter
    assert len(results) + len(dead) == sum(1 for line in lines if line.encode().strip())
