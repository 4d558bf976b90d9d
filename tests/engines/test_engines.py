"""The same evidence on real engines: each job runs through the CLI on a Flink session cluster
and on a Spark standalone cluster (workers from Beam's SDK worker pool, other processes than
the launcher), and must give what the local runner gives for the same inputs: the results,
the dead letters, the balance and the counters, with no query searched twice."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from connectors.embedders.model_location import MINILM
from tests.engines.jobs import QUESTIONS, Job, cli, run

pytestmark = [pytest.mark.engines, pytest.mark.slow]

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


def test_the_workers_venv_holds_no_torch(sdk_python: Path, sdk_env: dict[str, str]) -> None:
    """The workers embed with the `semantic` extra's ONNX model: no PyTorch to ship."""
    done = subprocess.run([str(sdk_python), "-c", "import importlib.util as u; "
                           "print(u.find_spec('torch'), u.find_spec('onnxruntime') is not None)"],
                          env=sdk_env, capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["None", "True"]
