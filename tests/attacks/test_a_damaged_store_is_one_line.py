"""A store version whose files were cut or overwritten (a disk that filled, a bad copy) stops
`run` and `index` in one line naming the file, exit 2, deleting nothing; `index --rebuild`
builds it again."""

from __future__ import annotations

from pathlib import Path

import pytest

from connectors.embedded.layout import CHUNKS_FILE, OFFSETS_FILE, VECTORS_FILE
from connectors.embedded.versions import current_version
from pipeline.cli.main import main
from tests.builders import chunk_records, unit_vectors


@pytest.mark.parametrize("damaged", [CHUNKS_FILE, VECTORS_FILE, OFFSETS_FILE])
def test_a_cut_store_file_stops_run_and_index_in_one_line_and_rebuild_mends_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], damaged: str) -> None:
    store, chunks = tmp_path / "store", tmp_path / "chunks.jsonl"
    chunks.write_text("".join(r.model_dump_json() + "\n"
                              for r in chunk_records(unit_vectors(8, dim=8))))
    at = ["--set", f"search.embedded.path={store}"]
    assert main(["index", *at, "--chunks", str(chunks)]) == 0
    version = current_version(store)
    cut = version / damaged
    cut.write_bytes(cut.read_bytes()[:100])
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"id": "q1", "vector": [1, 0, 0, 0, 0, 0, 0, 0]}\n')
    capsys.readouterr()
    assert main(["run", *at, "--queries", str(queries), "--out", str(tmp_path / "o.jsonl")]) == 2
    assert main(["index", *at, "--chunks", str(chunks), "--cleanup", "full"]) == 2
    err = capsys.readouterr().err
    assert err.count(f"the embedded store's file {str(cut)!r} is damaged") == 2
    assert "Traceback" not in err and current_version(store) == version
    assert main(["index", *at, "--chunks", str(chunks), "--rebuild"]) == 0
    assert main(["run", *at, "--queries", str(queries), "--out", str(tmp_path / "o.jsonl")]) == 0
