"""The same evidence on real engines: each job runs through the CLI on a Flink session cluster
and on a Spark standalone cluster (workers from Beam's SDK worker pool, other processes than
the launcher), and must give what the local runner gives for the same inputs: the results,
the dead letters, the balance and the counters, with no query searched twice."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from connectors.embedders.model_location import MINILM
from tests.engines.jobs import Job, cli, lines, results_of, run

pytestmark = [pytest.mark.engines, pytest.mark.slow]

QUESTIONS = ["How do I parse a JSON document?", "read the lines of a file",
             "match a regular expression", "sort a list in place", "send an HTTP request",
             "format a date", "make a temporary directory", "copy a file",
             "run a command in a subprocess", "compute a SHA-256 digest"]
COUNTED = ("queries", "results", "dead_letters", "internal_errors", "candidates",
           "duplicates_merged", "capped", "search_requests", "texts_embedded")


@pytest.fixture(scope="module")
def semantic_store(tmp_path_factory: pytest.TempPathFactory, sdk_python: Path,
                   sdk_env: dict[str, str]) -> Path:
    """The standard library's docs indexed with all-MiniLM-L6-v2 (by the local runner);
    returns the config that reads it."""
    root = tmp_path_factory.mktemp("semantic")
    config = root / "config.yaml"
    config.write_text(f"search:\n  embedded:\n    path: {root / 'store'}\n"
                      f"embedder:\n  kind: sentence-transformers\n  model: {MINILM}\n")
    cli(sdk_python, sdk_env, root, "corpus", str(root / "docs"))
    cli(sdk_python, sdk_env, root, "index", "--config", str(config), "--docs",
        str(root / "docs"))
    return config


@pytest.fixture(scope="module")
def queries(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Text queries, vector queries and lines that must become dead letters: not JSON, a
    vector of the wrong dimension, an id already used."""
    vectors = np.random.default_rng(3).normal(size=(6, 384))
    lines = [json.dumps({"id": f"t{i}", "text": text}) for i, text in enumerate(QUESTIONS)]
    lines += [json.dumps({"id": f"v{i}", "vector": v.tolist()}) for i, v in enumerate(vectors)]
    lines += ["not json", json.dumps({"id": "short", "vector": [0.1, 0.2]}),
              json.dumps({"id": "t0", "text": "a repeated id"})]
    path = tmp_path_factory.mktemp("queries") / "queries.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory, sdk_python: Path, sdk_env: dict[str, str],
          semantic_store: Path, queries: Path) -> Job:
    """The local runner's run of `queries`: what every engine must give."""
    return run(sdk_python, sdk_env, tmp_path_factory.mktemp("local"), semantic_store, queries)


def test_a_text_and_vector_run_gives_the_local_runners_evidence_and_dead_letters(
        engine: list[str], tmp_path: Path, sdk_python: Path, sdk_env: dict[str, str],
        semantic_store: Path, queries: Path, local: Job) -> None:
    job = run(sdk_python, sdk_env, tmp_path, semantic_store, queries, *engine)
    assert len(local.results) == 16 and len(local.dead_letters) == 3
    assert job.results == local.results
    assert job.dead_letters == local.dead_letters
    assert "inputs = outputs + dead letters: 19 = 16 + 3 (balanced)" in job.output
    assert job.summary["from_metrics"] and job.summary["balanced"]
    assert job.manifest["runner"] == engine[engine.index("--runner") + 1]  # not the local one
    counts = {name: job.summary["counts"][name] for name in COUNTED}
    assert counts == {name: local.summary["counts"][name] for name in COUNTED}
    # one search per query that reached recall: no step ran twice for its two outputs
    assert counts["search_requests"] == 17 and counts["texts_embedded"] == 10


@pytest.mark.live_es
def test_an_elasticsearch_run_and_its_es_sink_give_the_local_runners_evidence(
        engine: list[str], tmp_path: Path, sdk_python: Path, sdk_env: dict[str, str],
        corpus: Path, queries: Path, es_url: str, es_client: Any, es_index: str) -> None:
    config = tmp_path / "es.yaml"
    config.write_text(
        f"search:\n  backend: elasticsearch\n  elasticsearch:\n    hosts: [{es_url}]\n"
        f"    index: {es_index}\n    index-options: {{type: flat}}\n"
        "embedder:\n  kind: hashing\n  dim: 384\n")
    cli(sdk_python, sdk_env, tmp_path, "index", "--config", str(config), "--docs", str(corpus))
    local = run(sdk_python, sdk_env, tmp_path / "local", config, queries)
    job = run(sdk_python, sdk_env, tmp_path / "engine", config, queries, *engine)
    assert len(local.results) == 16
    assert job.results == local.results and job.dead_letters == local.dead_letters
    assert job.summary["counts"]["search_requests"] == local.summary["counts"][
        "search_requests"] == 17

    sink = f"{es_index}-evidence"
    cli(sdk_python, sdk_env, tmp_path, "run", "--config", str(config), "--queries",
        str(queries), "--out", f"es://{sink}", "--dead-letter", str(tmp_path / "sink.dead"),
        *engine)
    try:
        es_client.indices.refresh(index=sink)
        stored = {hit["_id"]: hit["_source"] for hit in es_client.search(
            index=sink, size=100, query={"match_all": {}})["hits"]["hits"]}
        assert stored == local.results
    finally:
        es_client.options(ignore_status=404).indices.delete(index=sink)


def _store(config: Path) -> dict[str, tuple[dict, list[float]]]:
    """Each chunk of the embedded store `config` names: its record and its vector."""
    root = Path(yaml.safe_load(config.read_text())["search"]["embedded"]["path"])
    version = root / "versions" / (root / "CURRENT").read_text().strip()
    vectors = np.load(version / "vectors.npy")
    records = lines(version / "records.jsonl")
    return {r["id"]: (r, vectors[row].tolist()) for row, r in enumerate(records)}


def test_index_on_the_engine_builds_and_updates_the_local_runners_store(
        engine: list[str], tmp_path: Path, sdk_python: Path, sdk_env: dict[str, str],
        corpus: Path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(corpus, docs)
    configs = {}
    for name in ("local", "engine"):
        configs[name] = tmp_path / f"{name}.yaml"
        configs[name].write_text(f"search:\n  embedded:\n    path: {tmp_path / name}\n")

    def index(name: str, *beam: str) -> dict:
        summary = tmp_path / f"{name}.summary.json"
        cli(sdk_python, sdk_env, tmp_path, "index", "--config", str(configs[name]), "--docs",
            str(docs), "--summary", str(summary), *beam)
        counts: dict = json.loads(summary.read_text())
        return counts

    first = index("local"), index("engine", *engine)
    assert _store(configs["engine"]) == _store(configs["local"])
    assert len(_store(configs["local"])) == 168

    (docs / "json.md").write_text("# json\n\nA changed page about JSON.\n")
    (docs / "csv.md").unlink()
    second = index("local"), index("engine", *engine)
    assert _store(configs["engine"]) == _store(configs["local"])
    for local_summary, engine_summary in (first, second):
        assert _counts(engine_summary) == _counts(local_summary)
    assert _counts(second[1])["deleted"] > 0 and _counts(second[1])["updated"] == 1


def _counts(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if k in ("added", "updated", "unchanged",
                                                      "deleted", "failed", "texts_embedded")}


@pytest.fixture(scope="module")
def continued_night(tmp_path_factory: pytest.TempPathFactory, sdk_python: Path,
                    sdk_env: dict[str, str]) -> tuple[Path, Path, Path, Job, list[dict]]:
    """A store of vector chunks, a first night on it (the local runner) with its state, then
    3% of the store changed: the config, the queries, PREV, the second night continued on the
    local runner, and the snapshots of that night continued and in full."""
    root = tmp_path_factory.mktemp("continued")
    rng = np.random.default_rng(8)
    vectors = rng.normal(size=(400, 16))
    config = root / "config.yaml"
    config.write_text(f"search:\n  embedded:\n    path: {root / 'store'}\n"
                      "embedder:\n  dim: 16\nrag:\n  retrieve-k: 10\n")

    def index(rows: np.ndarray, name: str) -> None:
        chunks = root / name
        chunks.write_text("".join(json.dumps({
            "id": f"doc{n // 4}#chunk-{n % 4}", "vector": v.tolist(), "content": f"chunk {n}",
            "metadata": {"docId": f"doc{n // 4}", "chunkIndex": n % 4}}) + "\n"
            for n, v in enumerate(rows) if np.isfinite(v).all()))
        cli(sdk_python, sdk_env, root, "index", "--config", str(config), "--chunks", str(chunks),
            "--cleanup", "full")

    index(vectors, "chunks1.jsonl")
    queries = root / "queries.jsonl"
    queries.write_text("".join(json.dumps({"id": f"v{n}", "vector": v.tolist()}) + "\n"
                               for n, v in enumerate(rng.normal(size=(30, 16)))) + "".join(
        json.dumps({"id": f"t{n}", "text": text}) + "\n" for n, text in enumerate(QUESTIONS)))
    empty = root / "empty.jsonl"
    empty.write_text("")
    prev = root / "night1" / "all.jsonl"
    run(sdk_python, sdk_env, root / "night1", config, queries, "--previous", str(empty),
        "--snapshot", str(prev))
    vectors[:4] = rng.normal(size=(4, 16))  # rewritten
    vectors[4:8] = np.nan  # deleted
    index(np.vstack([vectors, rng.normal(size=(4, 16))]), "chunks2.jsonl")  # and added
    continued = run(sdk_python, sdk_env, root / "local", config, queries, "--previous",
                    str(prev), "--snapshot", str(root / "local" / "all.jsonl"))
    run(sdk_python, sdk_env, root / "full", config, queries, "--previous", str(empty),
        "--snapshot", str(root / "full" / "all.jsonl"))
    snapshots = [results_of(root / name / "all.jsonl") for name in ("local", "full")]
    return config, queries, prev, continued, snapshots


def test_a_continued_night_on_the_engine_equals_the_local_runners_and_a_full_run(
        engine: list[str], tmp_path: Path, sdk_python: Path, sdk_env: dict[str, str],
        continued_night: tuple[Path, Path, Path, Job, list[dict]]) -> None:
    config, queries, prev, local, (local_snapshot, full_snapshot) = continued_night
    job = run(sdk_python, sdk_env, tmp_path, config, queries, "--previous", str(prev),
              "--snapshot", str(tmp_path / "all.jsonl"), *engine)
    snapshot = results_of(tmp_path / "all.jsonl")
    assert len(snapshot) == 40 and snapshot == local_snapshot == full_snapshot
    assert job.results == local.results
    counted = ("queries_continued", "continued_unchanged", "evidence_unchanged",
               "evidence_changed", "texts_embedded", "delta_chunks")
    assert {n: job.summary["counts"][n] for n in counted} == {
        n: local.summary["counts"][n] for n in counted}
    assert job.summary["counts"]["queries_continued"] == 40
    assert job.summary["counts"]["texts_embedded"] == 0
    assert job.summary["counts"]["delta_chunks"] == 12


def test_the_workers_venv_holds_no_torch(sdk_python: Path, sdk_env: dict[str, str]) -> None:
    """The workers embed with the `semantic` extra's ONNX model: no PyTorch to ship."""
    done = subprocess.run([str(sdk_python), "-c", "import importlib.util as u; "
                           "print(u.find_spec('torch'), u.find_spec('onnxruntime') is not None)"],
                          env=sdk_env, capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["None", "True"]
