"""A night on Elasticsearch continues from last night's state (issue 47): `index` writes a
store version on each chunk and records each deletion, the next run asks the index what
changed since the version its state kept, and searches the kept and changed chunks by an
`ids` filter, with the index's own scores. Its snapshot equals a full night's, line for line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from elasticsearch import Elasticsearch

from connectors.elasticsearch.index_admin import chunk_mapping
from connectors.elasticsearch.store_version import KEPT_FILE
from pipeline.config.loader import load_settings
from pipeline.run.continuation_plan import MAX_CHANGED_SHARE
from pipeline.run.state_files import STATE_SUFFIX
from tests.pipeline.run import nights
from tests.pipeline.run.nights import DOCS, PER_DOC

pytestmark = pytest.mark.live_es


@pytest.fixture
def es_config(tmp_path: Path, es_section: str) -> Path:
    """A config of a fresh index, and an empty PREV (the first night)."""
    config = tmp_path / "config.yaml"
    config.write_text(f"{es_section}embedder:\n  dim: {nights.DIM}\n"
                      f"rag:\n  retrieve-k: 10\n  return-n: 3\n")
    nights.write(tmp_path / "empty.jsonl", [])
    return config


@pytest.mark.parametrize("seed", [1, pytest.param(2, marks=pytest.mark.slow),
                                  pytest.param(3, marks=pytest.mark.slow)])
def test_a_continued_elasticsearch_night_equals_a_full_one_night_after_night(
        es_config: Path, tmp_path: Path, seed: int) -> None:
    rng = np.random.default_rng(seed)
    records = nights.random_records(rng, DOCS * PER_DOC, start=0)
    nights.index(es_config, nights.write(tmp_path / "chunks1.jsonl", records))
    standing = nights.standing_queries(rng, 60, "q")
    queries = nights.write(tmp_path / "q.jsonl", standing)
    first, night1 = nights.run(es_config, queries, tmp_path / "n1", tmp_path / "empty.jsonl")
    assert night1["results"] == 60 and night1["dead_letters"] == 0
    assert (Path(f"{first}{STATE_SUFFIX}") / KEPT_FILE).is_file()
    manifest = json.loads(Path(f"{first}.manifest.json").read_text())
    assert manifest["state"]["store_version"].endswith("@1")  # what `index` committed

    each = int(MAX_CHANGED_SHARE * len(records)) // 3
    for night in ("n2", "n3"):  # the second continues from a continued night's state
        records = nights.changed_records(rng, records, each)
        nights.index(es_config, nights.write(tmp_path / f"chunks-{night}.jsonl", records))
        continued, counts = nights.run(es_config, queries, tmp_path / night, first)
        full, _ = nights.run(es_config, queries, tmp_path / f"{night}-full",
                             tmp_path / "empty.jsonl")
        assert nights.by_id(continued) == nights.by_id(full)
        assert counts["delta_chunks"] == 3 * each
        assert counts["full_not_continuable"] == 0 and counts["full_continue_failed"] == 0
        assert counts["queries_continued"] + counts["full_ran_out"] == 60
        assert counts["queries_continued"] > 40 and counts["continued_unchanged"] > 0
        first = continued


def test_an_index_written_by_another_tool_meanwhile_is_answered_in_full_and_says_why(
        es_config: Path, tmp_path: Path, es_client: Elasticsearch) -> None:
    rng = np.random.default_rng(7)
    records = nights.random_records(rng, DOCS * PER_DOC, start=0)
    nights.index(es_config, nights.write(tmp_path / "chunks1.jsonl", records))
    queries = nights.write(tmp_path / "q.jsonl", nights.standing_queries(rng, 20, "q"))
    first, _ = nights.run(es_config, queries, tmp_path / "n1", tmp_path / "empty.jsonl")
    index = json.loads((Path(f"{first}{STATE_SUFFIX}") / KEPT_FILE).read_text())["index"]
    source = es_client.get(index=index, id=records[0].id)["_source"]
    source.pop("rag_evidence_version")
    es_client.index(index=index, id="other#chunk-0", document=source, refresh=True)

    continued, counts = nights.run(es_config, queries, tmp_path / "n2", first)
    assert counts["queries_continued"] == 0 and counts["full_not_continuable"] == 20
    manifest = json.loads(Path(f"{continued}.manifest.json").read_text())
    assert "1 chunks without a store version appeared" in (
        manifest["continuation"]["answered_in_full"])


def test_a_lexical_night_on_an_index_of_several_shards_is_answered_in_full_and_says_why(
        es_config: Path, tmp_path: Path, es_client: Elasticsearch) -> None:
    # each shard scores BM25 with its own statistics: one night's cannot bound the next
    es_config.write_text(es_config.read_text().replace(
        "rag:\n", "rag:\n  recall:\n    mode: hybrid\n"))
    settings = load_settings(es_config)
    es_client.indices.create(index=settings.search.elasticsearch.index,
                             settings={"number_of_shards": 2},
                             mappings=chunk_mapping(settings.search.elasticsearch, nights.DIM))
    rng = np.random.default_rng(3)
    nights.index(es_config, nights.write(tmp_path / "chunks1.jsonl",
                                         nights.random_records(rng, 40, start=0)))
    queries = nights.write(tmp_path / "q.jsonl", [{"id": "t", "text": "content 3"}])
    first, _ = nights.run(es_config, queries, tmp_path / "n1", tmp_path / "empty.jsonl")
    assert not Path(f"{first}{STATE_SUFFIX}").exists()
    continued, counts = nights.run(es_config, queries, tmp_path / "n2", first)
    manifest = json.loads(Path(f"{continued}.manifest.json").read_text())
    assert "has 2 shards" in manifest["continuation"]["answered_in_full"]
    assert counts["queries_continued"] == 0
