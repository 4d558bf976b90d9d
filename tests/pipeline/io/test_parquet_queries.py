"""Parquet queries are read a batch of rows at a time, and the pass over the ids reads ids only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from pipeline.cli.main import main
from pipeline.io import parquet
from pipeline.io.parquet import ReadParquetQueries, read_row_group
from pipeline.io.records import InputRecord, UnreadableRest
from tests.builders import unit_vectors
from tests.pipeline.cli_runs import DIM, lines_of

VECTORS = unit_vectors(12, dim=DIM)


def _write(path: Path, ids: list[str], **options: object) -> None:
    table = pa.table({"id": ids, "vector": [VECTORS[i % len(VECTORS)].tolist()
                                            for i in range(len(ids))]})
    pq.write_table(table, path, **options)


def _rows(records: list[InputRecord]) -> list[tuple[int, dict[str, Any]]]:
    rows = [(number, raw) for number, raw in records if isinstance(raw, dict)]
    assert len(rows) == len(records)
    return rows


def test_a_row_group_read_in_batches_gives_every_row_with_its_number(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parquet, "BATCH_ROWS", 3)
    path = tmp_path / "q.parquet"
    _write(path, [f"q{i}" for i in range(10)], row_group_size=10)
    rows = _rows(list(read_row_group((str(path), 0, 5))))
    assert [(number, row["id"]) for number, row in rows] == [
        (5 + i, f"q{i}") for i in range(10)]
    assert rows[3][1]["vector"] == pytest.approx(VECTORS[3].tolist())


def test_the_pass_over_the_ids_reads_the_id_column_alone(tmp_path: Path) -> None:
    path, no_ids = tmp_path / "q.parquet", tmp_path / "no_ids.parquet"
    _write(path, ["a", "b", "c"], row_group_size=2)
    pq.write_table(pa.table({"text": ["x"]}), no_ids)
    with TestPipeline() as pipeline:
        ids = pipeline | "Ids" >> ReadParquetQueries(str(path), columns=["id"])
        none = pipeline | "NoIds" >> ReadParquetQueries(str(no_ids), columns=["id"])
        assert_that(ids, equal_to([(1, {"id": "a"}), (2, {"id": "b"}), (3, {"id": "c"})]),
                    label="OnlyIds")
        assert_that(none, equal_to([(1, {})]), label="NoColumn")


def test_a_group_failing_part_way_keeps_its_rows_before_and_names_the_first_row_not_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parquet, "BATCH_ROWS", 4)
    path, broken = tmp_path / "q.parquet", tmp_path / "broken.parquet"
    _write(path, [f"q{i}" for i in range(40)], row_group_size=40, data_page_size=64,
           compression="snappy", use_dictionary=False)
    data = path.read_bytes()
    vectors = pq.ParquetFile(path).metadata.row_group(0).column(1)
    for offset in range(vectors.data_page_offset,
                        vectors.data_page_offset + vectors.total_compressed_size, 7):
        broken.write_bytes(data[:offset] + b"\xff\xff\xff" + data[offset + 3:])
        records = list(read_row_group((str(broken), 0, 1)))
        if len(records) > 1 and isinstance(records[-1][1], UnreadableRest):
            break
    else:
        pytest.fail("no corruption of a later page made the group fail part way")
    *read, (number, rest) = records
    assert [(n, row["id"]) for n, row in _rows(read)] == [
        (n, f"q{n - 1}") for n in range(1, number)]
    assert number % 4 == 1  # a whole batch is read, or none of it
    assert isinstance(rest, UnreadableRest)
    assert f"row group 0 (rows from {number}) cannot be read" in rest.reason


def test_a_repeated_id_in_a_later_row_group_is_a_dead_letter_naming_the_first_row(
        store_config: Path, tmp_path: Path) -> None:
    queries, out, dead = tmp_path / "q.parquet", tmp_path / "out.jsonl", tmp_path / "dead.jsonl"
    _write(queries, ["q0", "q1", "q2", "q0", "q4"], row_group_size=2)
    assert main(["run", "--config", str(store_config), "--queries", str(queries),
                 "--out", str(out), "--dead-letter", str(dead)]) == 0
    assert sorted(r["query_id"] for r in lines_of(out)) == ["q0", "q1", "q2", "q4"]
    assert [(d["line_number"], d["query_id"], "already used by line 1" in d["error"])
            for d in lines_of(dead)] == [(4, "q0", True)]
