"""One output file from many bundles and workers, streamed through part files."""

from __future__ import annotations

import tempfile
from pathlib import Path

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.io import single_file_sink
from pipeline.io.single_file_sink import ParquetRows, TextLines, WriteToSingleFile, write_part

MULTI = ["--direct_running_mode=multi_processing", "--direct_num_workers=2"]


@pytest.mark.slow
@pytest.mark.parametrize("options", [[], MULTI], ids=["in-memory", "multi-processing"])
def test_every_line_lands_once_in_the_one_file_and_no_part_is_left(
        tmp_path: Path, options: list[str]) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text("old contents\n")
    with beam.Pipeline(options=PipelineOptions(options)) as pipeline:
        _ = (pipeline | beam.Create([f"line {i}" for i in range(5000)]) | beam.Reshuffle()
             | WriteToSingleFile(str(out), TextLines()))
    assert sorted(out.read_text().splitlines()) == sorted(f"line {i}" for i in range(5000))
    assert [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]


def test_no_element_gives_an_empty_file(tmp_path: Path) -> None:
    out = tmp_path / "empty.jsonl"
    with beam.Pipeline() as pipeline:
        _ = pipeline | beam.Create([]) | WriteToSingleFile(str(out), TextLines())
    assert out.read_bytes() == b""


def test_parquet_parts_merge_into_one_readable_file(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.string()), ("n", pa.int64())])
    out = tmp_path / "out.parquet"
    with beam.Pipeline() as pipeline:
        _ = (pipeline | beam.Create([{"id": f"r{i}", "n": i} for i in range(2500)])
             | beam.Reshuffle() | WriteToSingleFile(str(out), ParquetRows(schema, group_rows=300)))
    rows = pq.read_table(out).to_pylist()
    assert sorted(r["n"] for r in rows) == list(range(2500))
    assert pq.ParquetFile(out).schema_arrow == schema


@settings(max_examples=30, deadline=None)
@given(st.lists(st.one_of(st.text(alphabet=st.characters(blacklist_characters="\n\r",
                                                          blacklist_categories=["Cs"])),
                          st.binary().filter(lambda b: b"\n" not in b)), max_size=12))
def test_a_part_written_at_once_holds_each_line_as_one_by_one(lines: list[str | bytes]
                                                              ) -> None:
    with tempfile.TemporaryDirectory() as folder:
        at_once = Path(write_part(folder, TextLines(), lines)).read_bytes()
        one_by_one = b"".join((line.encode() if isinstance(line, str) else line) + b"\n"
                              for line in lines)
    assert at_once == one_by_one


_LINE = st.binary(max_size=40).filter(lambda b: b"\n" not in b)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(_LINE, st.lists(_LINE, max_size=5)), max_size=30))
def test_lines_written_one_by_one_and_at_once_land_in_order(writes: list[bytes | list[bytes]]
                                                             ) -> None:
    # a part gathers lines and hands them on in pieces (here every 64 bytes): whatever the
    # mix of single lines and batches, the part holds each line once, in the order given
    expected = b"".join(line + b"\n" for w in writes for line in (w if isinstance(w, list)
                                                                   else [w]))
    with tempfile.TemporaryDirectory() as folder, pytest.MonkeyPatch.context() as patch:
        patch.setattr(single_file_sink, "_PENDING_BYTES", 64)
        path = Path(folder) / "part"
        part = TextLines().open_part(path.open("wb"))
        for w in writes:
            part.write_all(w) if isinstance(w, list) else part.write(w)
        part.close()
        assert path.read_bytes() == expected


def test_a_lone_part_becomes_the_file_by_rename(tmp_path: Path) -> None:
    # one bundle, one part: the part itself is renamed over the file (no copy of a bulk
    # run's output at its end)
    out = tmp_path / "out.jsonl"
    seen: list[tuple[str, int]] = []
    real_rename = single_file_sink.FileSystems.rename

    def rename(sources: list[str], destinations: list[str]) -> None:
        seen.extend((Path(s).name[:5], Path(s).stat().st_ino) for s in sources)
        real_rename(sources, destinations)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(single_file_sink.FileSystems, "rename", rename)
        with beam.Pipeline() as pipeline:
            _ = pipeline | beam.Create(["a", "b"]) | WriteToSingleFile(str(out), TextLines())
    assert out.read_bytes() == b"a\nb\n"
    assert seen == [("part-", out.stat().st_ino)]
    assert [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]
