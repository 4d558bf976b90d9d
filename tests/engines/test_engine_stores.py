"""What the engines write and continue: `index` on each engine builds and updates the store the
local runner builds, and a night continued on each engine equals the local runner's and a full
run. (A file of its own, so that the engine tests spread over two workers.)"""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import yaml
from elasticsearch import Elasticsearch

from connectors.elasticsearch.store_version import DELETIONS_SUFFIX
from tests.engines.jobs import QUESTIONS, Job, cli, lines, results_of, run

pytestmark = [pytest.mark.engines, pytest.mark.slow]


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


WORDS = ["json", "document", "file", "lines", "expression", "list", "request", "date",
         "directory", "command", "digest", "copy"]
"""Words of `QUESTIONS`: the chunks' contents hold them, so that BM25 finds chunks."""


@pytest.fixture(scope="module", params=["dense", "hybrid", "elasticsearch"])
def continued_night(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
                    sdk_python: Path, sdk_env: dict[str, str]
                    ) -> Iterator[tuple[Path, Path, Path, Job, list[dict]]]:
    """A store of vector chunks with a few words each (the embedded store, dense or hybrid
    recall, or an Elasticsearch index, hybrid), a first night on it (the local runner) with its
    state, then 3% of the store changed: the config, the queries, PREV, the second night
    continued on the local runner, and the snapshots of that night continued and in full."""
    root = tmp_path_factory.mktemp(f"continued-{request.param}")
    rng = np.random.default_rng(8)
    vectors = rng.normal(size=(400, 16))
    words = rng.choice(WORDS, size=(404, 3))
    config = root / "config.yaml"
    mode = "hybrid" if request.param == "elasticsearch" else request.param
    index_name = f"night-{uuid.uuid4().hex[:10]}"
    if request.param == "elasticsearch":
        es_url = request.getfixturevalue("es_url")
        store = (f"  backend: elasticsearch\n  elasticsearch:\n    hosts: [{es_url}]\n"
                 f"    index: {index_name}\n")
    else:
        store = f"  embedded:\n    path: {root / 'store'}\n"
    config.write_text(f"search:\n{store}embedder:\n  dim: 16\nrag:\n  retrieve-k: 10\n"
                      f"  recall:\n    mode: {mode}\n")

    def index(rows: np.ndarray, name: str) -> None:
        chunks = root / name
        chunks.write_text("".join(json.dumps({
            "id": f"doc{n // 4}#chunk-{n % 4}", "vector": v.tolist(),
            "content": f"chunk {n} of {' '.join(words[n])}",
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
    words[:4] = rng.choice(WORDS, size=(4, 3))
    vectors[4:8] = np.nan  # deleted
    index(np.vstack([vectors, rng.normal(size=(4, 16))]), "chunks2.jsonl")  # and added
    continued = run(sdk_python, sdk_env, root / "local", config, queries, "--previous",
                    str(prev), "--snapshot", str(root / "local" / "all.jsonl"))
    run(sdk_python, sdk_env, root / "full", config, queries, "--previous", str(empty),
        "--snapshot", str(root / "full" / "all.jsonl"))
    snapshots = [results_of(root / name / "all.jsonl") for name in ("local", "full")]
    yield config, queries, prev, continued, snapshots
    if request.param == "elasticsearch":
        with Elasticsearch(request.getfixturevalue("es_url")) as client:
            client.options(ignore_status=404).indices.delete(
                index=f"{index_name},{index_name}{DELETIONS_SUFFIX}")


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
               "evidence_changed", "texts_embedded", "delta_chunks", "full_ran_out",
               "lexical_lists_continued")
    assert {n: job.summary["counts"][n] for n in counted} == {
        n: local.summary["counts"][n] for n in counted}
    counts = job.summary["counts"]
    assert counts["queries_continued"] + counts["full_ran_out"] == 40
    assert counts["queries_continued"] >= 30 and counts["texts_embedded"] == 0
    assert counts["delta_chunks"] == 12
    hybrid = yaml.safe_load(config.read_text())["rag"]["recall"]["mode"] == "hybrid"
    assert (counts["lexical_lists_continued"] > 0) is hybrid
