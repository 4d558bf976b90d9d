"""The one ingestion job: documents or chunk lines, embedded once, written through a target."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest

from connectors.embedded.layout import RECORDS_FILE, Manifest
from connectors.embedded.store import EmbeddedStore
from connectors.embedded.versions import current_version
from core.errors import InvalidInputError
from pipeline.config.loader import load_settings
from pipeline.config.settings import Settings
from pipeline.ingest.job import run_index
from tests.builders import FailingEmbedder, chunk_records, unit_vectors


def _docs(root: Path, topics: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in topics.items():
        (root / name).write_text(text)
    return root


def _settings(store: Path, *extra: str) -> Settings:
    return load_settings(overrides=[f"search.embedded.path={store}", "embedder.dim=32",
                                    "chunking.max-chars=60", *extra])


def test_documents_are_chunked_embedded_and_the_embedder_recorded(tmp_path: Path) -> None:
    docs = _docs(tmp_path / "docs", {"b.md": "Second document has words enough to fill a chunk.\n\n"
                                             "More words here in its own chunk.",
                                     "a.md": "First document about json."})
    summary = run_index(_settings(tmp_path / "store"), docs=str(docs))
    assert (summary.indexed, summary.failed, summary.created) == (3, 0, True)
    manifest = Manifest.read(current_version(tmp_path / "store"))
    assert manifest.embedder is not None and manifest.embedder.kind == "hashing"
    assert manifest.embedder.dimension == 32 and manifest.lexical
    lines = (current_version(tmp_path / "store") / RECORDS_FILE).read_text().splitlines()
    records = [json.loads(x) for x in lines]
    assert [r["id"] for r in records] == ["a.md#chunk-0", "b.md#chunk-0", "b.md#chunk-1"]
    assert records[2]["metadata"] == {"docId": "b.md", "chunkIndex": 1, "source": "b.md"}


def test_rows_are_in_natural_id_order_whatever_the_workers_order(tmp_path: Path) -> None:
    docs = _docs(tmp_path / "docs", {"a.md": "\n\n".join(f"Paragraph number {i} of the text."
                                                         for i in range(12))})
    run_index(_settings(tmp_path / "store"), docs=str(docs),
              beam_args=["--direct_num_workers=2", "--direct_running_mode=multi_threading"])
    lines = (current_version(tmp_path / "store") / RECORDS_FILE).read_text().splitlines()
    ids = [json.loads(line)["id"] for line in lines]
    assert ids == [f"a.md#chunk-{i}" for i in range(12)]


def test_a_failed_index_leaves_the_old_store_working(tmp_path: Path) -> None:
    store = tmp_path / "store"
    run_index(_settings(store), docs=str(_docs(tmp_path / "docs", {"a.md": "Old words."})))
    chunks = tmp_path / "dupes.jsonl"
    record = chunk_records(unit_vectors(1, dim=32))[0].model_dump_json()
    chunks.write_text(f"{record}\n{record}\n")
    with pytest.raises(InvalidInputError, match=rf"doc0#chunk-0.*appears twice, at {chunks}:1, "
                                                rf"{chunks}:2"):
        run_index(_settings(store), chunks=str(chunks), rebuild=True)
    reopened = EmbeddedStore.open(store)
    assert len(reopened) == 1
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".store")]


def test_an_empty_documents_folder_is_an_error_and_replaces_nothing(tmp_path: Path) -> None:
    store = tmp_path / "store"
    run_index(_settings(store), docs=str(_docs(tmp_path / "docs", {"a.md": "Old words."})))
    (tmp_path / "empty").mkdir()
    with pytest.raises(InvalidInputError, match="holds no document to index"):
        run_index(_settings(store), docs=str(tmp_path / "empty"))
    assert len(EmbeddedStore.open(store)) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs", "empty", "store"]


def _index_with_one_failure(tmp_path: Path, lines: list[str]) -> tuple[Path, dict]:
    """Indexes chunk `lines`; checks that all but one went in, returns that one failure."""
    chunks = tmp_path / "chunks.jsonl"
    chunks.write_text("".join(line + "\n" for line in lines))
    failures = tmp_path / "failures.jsonl"
    summary = run_index(_settings(tmp_path / "store"), chunks=str(chunks),
                        failures_path=str(failures))
    assert (summary.indexed, summary.failed) == (len(lines) - 1, 1)
    (failure,) = [json.loads(x) for x in failures.read_text().splitlines()]
    return chunks, failure


def test_bad_chunk_lines_are_failures_by_file_and_line_and_the_rest_is_indexed(
        tmp_path: Path) -> None:
    good = [r.model_dump_json() for r in chunk_records(unit_vectors(2, dim=4))]
    chunks, failure = _index_with_one_failure(tmp_path, [good[0], "not json", good[1]])
    assert failure["id"] == f"{chunks}:2"
    assert Manifest.read(current_version(tmp_path / "store")).embedder is None


def test_a_chunk_of_another_dimension_fails_alone_naming_both_sizes(tmp_path: Path) -> None:
    records = chunk_records(unit_vectors(2, dim=4)) + chunk_records(unit_vectors(1, dim=3))
    records[2] = records[2].model_copy(update={"id": "odd#chunk-0"})
    chunks, failure = _index_with_one_failure(tmp_path, [r.model_dump_json() for r in records])
    assert failure["id"] == f"{chunks}:3"
    assert "vector of 'odd#chunk-0' has 3 dimensions but the store expects 4" in failure["error"]


def test_an_unexpected_error_is_the_failure_of_its_chunks_and_the_rest_is_indexed(
        tmp_path: Path) -> None:
    docs = _docs(tmp_path / "docs", {"a.md": "Reading files.", "b.md": "boom goes the model.",
                                     "c.md": "Writing files."})
    failures = tmp_path / "failures.jsonl"
    summary = run_index(_settings(tmp_path / "store", "embedder.batch-size=1"), docs=str(docs),
                        failures_path=str(failures),
                        embedder_factory=partial(FailingEmbedder, 32))
    assert (summary.indexed, summary.failed) == (2, 1)
    (failure,) = [json.loads(x) for x in failures.read_text().splitlines()]
    assert failure["id"] == "b.md#chunk-0"
    assert failure["error"].startswith("unexpected error: RuntimeError")
    assert EmbeddedStore.open(tmp_path / "store").dimension == 32


@pytest.mark.parametrize(("bad", "error"), [
    ('{"id": "z#chunk-0", "vector": [0, 0, 0, 0], "content": "z"}',
     "vector=[0, 0, 0, 0]: is zero in float32"),
    ("oops", "is not a JSON line (Expecting value"),
])
def test_a_chunk_failure_names_its_line_once_in_plain_words(
        tmp_path: Path, bad: str, error: str) -> None:
    good = [r.model_dump_json() for r in chunk_records(unit_vectors(2, dim=4))]
    chunks, failure = _index_with_one_failure(tmp_path, [good[0], bad, good[1]])
    assert failure["id"] == f"{chunks}:2"
    assert failure["error"].startswith(error)
    assert str(chunks) not in failure["error"] and "Value error" not in failure["error"]
