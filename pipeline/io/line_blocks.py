"""Reading one big text file in parallel while keeping exact line numbers.

The file is cut into byte blocks, and a line belongs to the block in which it starts. The
blocks are shuffled to the workers, each counts the lines that start in it (a byte scan), and
each then reads its lines, numbering them from the count of the lines before it. A
compressed file cannot be cut and is read as one block.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, BinaryIO

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

BOM = b"\xef\xbb\xbf"
BLOCK_BYTES = 64 * 1024 * 1024
_SCAN_BYTES = 8 * 1024 * 1024

NumberedLine = tuple[int, bytes]
"""A line as read: its number and its bytes, decoded by the parser (so that a line that is not
UTF-8 becomes a dead letter of its own, never a replacement character or a crash)."""
InputRecord = tuple[int, bytes | dict[str, Any]]
"""A query as read: its line (or Parquet row) number, and its bytes (or the row's columns)."""
Block = tuple[str, int, int]
"""(path, first byte, end byte); end -1: the whole (compressed) file."""
LineStarts = tuple[int, int]
"""(a block's first byte, how many lines start in it)."""


def read_numbered_lines(path: str) -> Iterator[NumberedLine]:
    """(line number, bytes) for each non-blank line of `path` (any Beam filesystem); a UTF-8
    byte-order mark opening the file is dropped."""
    with FileSystems.open(path) as handle:
        yield from _numbered(handle, 1, first=True)


def count_lines(path: str) -> int:
    """How many non-blank lines `path` holds."""
    with FileSystems.open(path) as handle:
        return sum(1 for line in iter(handle.readline, b"") if line.strip())


def decode_line(line: str | bytes) -> str:
    """The text of a line; raises ValueError naming the first byte that is not UTF-8."""
    if isinstance(line, str):
        return line
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"line is not valid UTF-8 (byte 0x{line[error.start]:02x} at "
                         f"position {error.start})") from None


def file_blocks(path: str, block_bytes: int = BLOCK_BYTES) -> Iterator[Block]:
    """The blocks of `path`: one for a compressed file, none for an empty one."""
    if CompressionTypes.detect_compression_type(path) != CompressionTypes.UNCOMPRESSED:
        yield path, 0, -1
        return
    size = FileSystems.match([path])[0].metadata_list[0].size_in_bytes
    for start in range(0, size, block_bytes):
        yield path, start, min(start + block_bytes, size)


def count_line_starts(block: Block) -> LineStarts:
    """How many lines start in `block`: a line starts at byte 0 and after each newline."""
    path, start, end = block
    if end < 0:
        return start, 0
    scan_from = max(start - 1, 0)
    remaining, newlines = end - 1 - scan_from, 0
    with _open_raw(path) as handle:
        handle.seek(scan_from)
        while remaining > 0:
            data = handle.read(min(_SCAN_BYTES, remaining))
            if not data:
                break
            newlines += data.count(b"\n")
            remaining -= len(data)
    return start, newlines + (1 if start == 0 else 0)


def read_block(block: Block, line_starts: Sequence[LineStarts]) -> Iterator[NumberedLine]:
    """The non-blank lines that start in `block`, numbered within the whole file."""
    path, start, end = block
    if end < 0:
        yield from read_numbered_lines(path)
        return
    first_number = 1 + sum(count for block_start, count in line_starts if block_start < start)
    with _open_raw(path) as handle:
        position = start
        if start > 0:
            handle.seek(start - 1)
            if handle.read(1) != b"\n":
                position += len(handle.readline())
        yield from _numbered(handle, first_number, first=start == 0, limit=end - position)


def _numbered(handle: BinaryIO, number: int, *, first: bool, limit: int | None = None
              ) -> Iterator[NumberedLine]:
    """Lines from `handle`, numbered from `number`, until one starts `limit` bytes on."""
    consumed = 0
    for raw in iter(handle.readline, b""):
        if limit is not None and consumed >= limit:
            return
        consumed += len(raw)
        line = raw.removeprefix(BOM).strip() if first else raw.strip()
        first = False
        if line:
            yield number, line
        number += 1


def _open_raw(path: str) -> BinaryIO:
    return FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)


class ReadNumberedLines(beam.PTransform[beam.pvalue.PBegin, beam.PCollection[NumberedLine]]):
    """Reads a text file as (line number, bytes), split into blocks that a runner spreads over
    its workers; line numbers are exact whatever the split.

    >>> lines = pipeline | ReadNumberedLines("queries.jsonl")  # doctest: +SKIP
    """

    def __init__(self, path: str, block_bytes: int = BLOCK_BYTES) -> None:
        super().__init__()
        self._path = path
        self._block_bytes = block_bytes

    def expand(self, begin: beam.pvalue.PBegin) -> beam.PCollection[NumberedLine]:
        blocks = (begin
                  | "File" >> beam.Create([self._path])
                  | "Blocks" >> beam.FlatMap(file_blocks, self._block_bytes)
                  | "SpreadBlocks" >> beam.Reshuffle())
        starts = blocks | "CountLineStarts" >> beam.Map(count_line_starts)
        return blocks | "ReadBlocks" >> beam.FlatMap(read_block,
                                                     beam.pvalue.AsList(starts))
