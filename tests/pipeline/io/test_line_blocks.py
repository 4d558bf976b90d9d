"""A big input file is read in blocks that a runner can spread over workers, with exact line
numbers whatever the split: the same lines, numbered the same, as one sequential read."""

from __future__ import annotations

import gzip
from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that, equal_to
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.io import line_blocks
from pipeline.io.line_blocks import (
    BOM,
    ReadNumberedLines,
    count_line_starts,
    file_blocks,
    read_block,
    read_numbered_lines,
)

_LINE = st.one_of(st.just(""), st.just("   "), st.text(
    alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\n\r"),
    max_size=40))


def _blockwise(path: str, block_bytes: int) -> list[tuple[int, bytes]]:
    blocks = list(file_blocks(path, block_bytes))
    starts = [count_line_starts(block) for block in blocks]
    return [line for block in reversed(blocks) for line in read_block(block, starts)]


@settings(max_examples=150, deadline=None)
@given(lines=st.lists(_LINE, max_size=30), block_bytes=st.integers(1, 64),
       bom=st.booleans(), final_newline=st.booleans())
def test_any_split_gives_the_lines_and_numbers_of_a_sequential_read(
        tmp_path_factory, lines: list[str], block_bytes: int, bom: bool,  # type: ignore[no-untyped-def]
        final_newline: bool) -> None:
    path = tmp_path_factory.mktemp("blocks") / "q.jsonl"
    data = "\n".join(lines).encode() + (b"\n" if final_newline and lines else b"")
    path.write_bytes((BOM if bom else b"") + data)
    expected = list(read_numbered_lines(str(path)))
    assert sorted(_blockwise(str(path), block_bytes)) == expected


def test_lines_are_numbered_in_the_whole_file_blank_lines_included(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_bytes(b'{"id": "a"}\n\n  \n{"id": "b"}\r\n' + b"x" * 50 + b"\nlast")
    assert sorted(_blockwise(str(path), 8)) == [
        (1, b'{"id": "a"}'), (4, b'{"id": "b"}'), (5, b"x" * 50), (6, b"last")]


def test_a_compressed_file_is_one_block_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl.gz"
    path.write_bytes(gzip.compress(b"one\n\ntwo\n"))
    assert list(file_blocks(str(path), 2)) == [(str(path), 0, -1)]
    assert _blockwise(str(path), 2) == [(1, b"one"), (3, b"two")]


def test_an_empty_file_has_no_block(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    assert list(file_blocks(str(path))) == []


def test_the_transform_reads_every_line_once_across_many_blocks(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text("".join(f'{{"id": "q{i}"}}\n' for i in range(500)))
    with beam.Pipeline() as pipeline:
        lines = pipeline | ReadNumberedLines(str(path), block_bytes=100)
        assert_that(lines, equal_to([(i + 1, f'{{"id": "q{i}"}}'.encode()) for i in range(500)]))


@pytest.mark.parametrize("buffer_bytes", [8, 13, 1024 * 1024])
def test_lines_longer_than_the_read_buffer_come_whole_and_numbered(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, buffer_bytes: int) -> None:
    monkeypatch.setattr(line_blocks, "READ_BUFFER_BYTES", buffer_bytes)
    lines = [f'{{"id": "q{i}", "pad": "{"x" * (i * 7 % 40)}"}}'.encode() for i in range(30)]
    path = tmp_path / "q.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    expected = [(number, line) for number, line in enumerate(lines, start=1)]
    assert list(read_numbered_lines(str(path))) == expected
    assert sorted(_blockwise(str(path), 64)) == expected
