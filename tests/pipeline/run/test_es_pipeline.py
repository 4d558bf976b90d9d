"""The whole job against Elasticsearch: re-index, answer, write evidence, on several runners."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from elasticsearch import Elasticsearch

from pipeline.cli.main import main
from tests.fault_proxy import FaultProxy

pytestmark = pytest.mark.live_es

QUESTIONS = ["parse json text", "sort a list with a key", "open files in a folder",
             "random numbers from a seed", "split a string on commas", "count words"]


def _docs(root: Path) -> Path:
    docs = root / "docs"
    (docs / "guide").mkdir(parents=True)
    topics = {
        "guide/json.md": ["Parse JSON text with json.loads.", "Write JSON with json.dumps."],
        "guide/sorting.md": ["Sort a list in place with list.sort and a key function.",
                             "sorted returns a new list; a key picks what to compare.",
                             "Reverse the order with reverse=True."],
        "files.md": ["Open files with open and a folder with pathlib.", "Glob a folder."],
        "random.txt": ["Random numbers come from random.random; seed it to repeat."],
        "strings.md": ["Split a string on commas with str.split.", "Count words with split."],
    }
    for name, paragraphs in topics.items():
        (docs / name).write_text("\n\n".join(paragraphs))
    return docs


def _es_settings(url: str, index: str) -> list[str]:
    return ["--set", "search.backend=elasticsearch",
            "--set", f"search.elasticsearch.hosts=[{url}]",
            "--set", f"search.elasticsearch.index={index}",
            "--set", "search.elasticsearch.index-options={type: flat}",
            "--set", "search.elasticsearch.initial-backoff=0.01",
            "--set", "embedder.dim=64", "--set", "chunking.max-chars=60",
            "--set", "rag.retrieve-k=6", "--set", "rag.return-n=4"]


def _run(tmp: Path, settings: list[str], *extra: str, out: str | None = None
         ) -> tuple[int, list[dict], list[dict]]:
    queries = tmp / "queries.jsonl"
    queries.write_text("".join(json.dumps({"id": f"q{i}", "text": q}) + "\n"
                               for i, q in enumerate(QUESTIONS)) + "{broken\n")
    out = out or str(tmp / "out.jsonl")
    dead = tmp / "dead.jsonl"
    code = main(["run", "--queries", str(queries), "--out", out, "--dead-letter", str(dead),
                 *settings, *extra])
    results = [] if out.startswith("es://") else _read(Path(out))
    return code, results, _read(dead)


def _read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().split("\n") if line.strip()]


def _by_query(results: list[dict]) -> dict[str, tuple[list[float], list[str]]]:
    """Per query: all scores, and the keys of the blocks that share a word with the query.

    Blocks at score 0.5 (cosine 0: no shared word) tie with every other such chunk, and the two
    backends may pick different ones of those.
    """
    return {r["query_id"]: ([round(b["score"], 4) for b in r["evidence"]],
                            [b["evidence_key"] for b in r["evidence"] if b["score"] > 0.5001])
            for r in results}


@pytest.fixture
def indexed(es_url: str, es_index: str, tmp_path: Path) -> tuple[list[str], Path]:
    docs = _docs(tmp_path)
    settings = _es_settings(es_url, es_index)
    assert main(["index", "--docs", str(docs), *settings]) == 0
    return settings, docs


def test_elasticsearch_and_embedded_backends_give_the_same_evidence(
        indexed: tuple[list[str], Path], tmp_path: Path) -> None:
    settings, docs = indexed
    code, es_results, dead = _run(tmp_path, settings)
    assert code == 0 and len(es_results) == len(QUESTIONS) and len(dead) == 1
    embedded = [*settings, "--set", "search.backend=embedded",
                "--set", f"search.embedded.path={tmp_path / 'store'}"]
    assert main(["index", "--docs", str(docs), *embedded]) == 0
    code, embedded_results, _ = _run(tmp_path, embedded)
    assert code == 0
    assert _by_query(es_results) == _by_query(embedded_results)
    sorting = {r["query_id"]: r for r in es_results}["q1"]["evidence"]
    assert [b["evidence_key"] for b in sorting[:2]] == [
        "guide/sorting.md#chunk-0", "guide/sorting.md#chunk-1"]


@pytest.mark.slow
@pytest.mark.parametrize("runner_options", [
    ["--runner", "PortableRunner", "--job_endpoint", "embed", "--environment_type", "LOOPBACK"],
    ["--runner", "DirectRunner", "--direct_running_mode", "multi_processing",
     "--direct_num_workers", "2"],
], ids=["portable-loopback", "direct-multiprocessing"])
def test_other_runners_give_the_in_memory_output(
        indexed: tuple[list[str], Path], tmp_path: Path, runner_options: list[str]) -> None:
    settings, _ = indexed
    _, expected, _ = _run(tmp_path / "a" if (tmp_path / "a").mkdir() is None else tmp_path,
                          settings)
    (tmp_path / "b").mkdir()
    code, results, dead = _run(tmp_path / "b", settings, *runner_options)
    assert code == 0 and len(dead) == 1
    assert sorted(results, key=lambda r: r["query_id"]) == sorted(
        expected, key=lambda r: r["query_id"])


def test_evidence_sink_writes_one_document_per_query_idempotently(
        indexed: tuple[list[str], Path], tmp_path: Path, es_client: Elasticsearch,
        es_index: str) -> None:
    settings, _ = indexed
    sink = f"{es_index}-evidence"
    try:
        for _ in range(2):
            code, _, dead = _run(tmp_path, settings, out=f"es://{sink}")
            assert code == 0 and len(dead) == 1
        es_client.indices.refresh(index=sink)
        assert es_client.count(index=sink)["count"] == len(QUESTIONS)
        stored = es_client.get(index=sink, id="q0")["_source"]
        assert stored["query_id"] == "q0"
        assert stored["evidence"][0]["evidence_key"] == "guide/json.md#chunk-0"
        manifest = json.loads((tmp_path / f"{sink}.manifest.json").read_text())
        assert manifest["results"] == {"location": f"es://{sink}"}
        assert not Path(f"{sink}.manifest.json").exists()  # beside the dead letters, not here
    finally:
        es_client.options(ignore_status=404).indices.delete(index=sink)


def test_a_cluster_that_keeps_failing_dead_letters_every_query(
        indexed: tuple[list[str], Path], tmp_path: Path, es_url: str) -> None:
    settings, _ = indexed
    with FaultProxy(es_url) as proxy:
        proxy.schedule = ["pass", "pass"] + ["503"] * 1000  # start-up checks pass, searches fail
        proxied = [*settings, "--set", f"search.elasticsearch.hosts=[{proxy.url}]",
                   "--set", "search.elasticsearch.max-attempts=2"]
        code, results, dead = _run(tmp_path, proxied)
    assert code == 0 and results == []
    assert len(dead) == len(QUESTIONS) + 1
    assert {d["stage"] for d in dead} == {"parse", "recall"}
    assert all("HTTP 503" in d["error"] for d in dead if d["stage"] == "recall")


def test_bad_chunk_lines_are_reported_by_line_and_the_rest_indexed(
        es_url: str, es_index: str, tmp_path: Path, es_client: Elasticsearch) -> None:
    chunks = tmp_path / "chunks.jsonl"
    good = {"id": "a#chunk-0", "vector": [1.0, 0.0], "content": "x",
            "metadata": {"docId": "a", "chunkIndex": 0}}
    chunks.write_text(json.dumps(good) + "\n" + '{"id": "b", "vector": [NaN, 1]}\n')
    failures = tmp_path / "failures.jsonl"
    code = main(["index", "--chunks", str(chunks), "--failures", str(failures),
                 *_es_settings(es_url, es_index)])
    assert code == 1
    assert es_client.count(index=es_index)["count"] == 1
    (failure,) = _read(failures)
    assert failure["id"].endswith("chunks.jsonl:2") and "vector" in failure["error"]


def test_results_the_sink_cannot_write_become_write_dead_letters(
        indexed: tuple[list[str], Path], tmp_path: Path, es_url: str, es_index: str) -> None:
    settings, _ = indexed
    with FaultProxy(es_url, by_path={"/_bulk": "drop"}) as proxy:
        proxied = [*settings, "--set", f"search.elasticsearch.hosts=[{proxy.url}]",
                   "--set", "search.elasticsearch.max-attempts=2"]
        code, _, dead = _run(tmp_path, proxied, out=f"es://{es_index}-evidence")
    assert code == 0
    written = [d for d in dead if d["stage"] == "write"]
    assert sorted(d["query_id"] for d in written) == sorted(f"q{i}" for i in range(len(QUESTIONS)))
    assert all("127.0.0.1" in d["error"] for d in written)


def test_an_index_whose_bulk_writes_keep_failing_lists_every_chunk_and_exits_1(
        es_url: str, es_index: str, tmp_path: Path) -> None:
    docs = _docs(tmp_path)
    failures = tmp_path / "failures.jsonl"
    with FaultProxy(es_url, by_path={"/_bulk": "503"}) as proxy:
        code = main(["index", "--docs", str(docs), "--failures", str(failures),
                     *_es_settings(proxy.url, es_index),
                     "--set", "search.elasticsearch.max-attempts=2"])
    assert code == 1
    failed = _read(failures)
    assert len({f["id"] for f in failed}) == len(failed) == 10
    assert all("HTTP 503" in f["error"] for f in failed)


@pytest.mark.parametrize("fault", ["503", "drop", "401"])
def test_a_lasting_fault_on_the_start_up_mapping_request_is_one_line_not_a_traceback(
        indexed: tuple[list[str], Path], tmp_path: Path, es_url: str, fault: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    settings, _ = indexed
    with FaultProxy(es_url, by_path={"/_mapping": fault}) as proxy:
        proxied = [*settings, "--set", f"search.elasticsearch.hosts=[{proxy.url}]",
                   "--set", "search.elasticsearch.max-attempts=2"]
        queries = tmp_path / "q.jsonl"
        queries.write_text('{"id": "q", "text": "parse json"}\n')
        code = main(["run", "--queries", str(queries), "--out", str(tmp_path / "o.jsonl"),
                     *proxied])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    (line,) = [x for x in err.splitlines() if x.startswith("rag-evidence: error:")]
    assert "mapping request" in line and proxy.url in line
