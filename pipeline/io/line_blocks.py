"""Reading one big text file in parallel while keeping exact line numbers.

The file is cut into byte blocks, and a line belongs to the block in which it starts. The
blocks are shuffled to the workers, each counts the lines that start in it (a byte scan), and
each then reads its lines, numbering them from the count of the lines before it. A
compressed file cannot be cut and is read as one block.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import zlib
from collections.abc import Iterator, Sequence
from typing import BinaryIO

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from core.input_limits import MAX_LINE_BYTES
from pipeline.io.records import NumberedLine, OverlongLine, UnreadableRest

BOM = b"\xef\xbb\xbf"
BLOCK_BYTES = 64 * 1024 * 1024
_SCAN_BYTES = 8 * 1024 * 1024
READ_BUFFER_BYTES = 1024 * 1024
"""Files are read through a buffer this large: with the 8 KiB default, a line of 384 floats
(~8 KB) costs a read call of its own (docs/benchmarks.md). Not what a decompressor gives: a
buffer filled from a truncated stream would lose the lines before the error."""

_DECOMPRESSORS = {CompressionTypes.GZIP: gzip.GzipFile, CompressionTypes.BZIP2: bz2.BZ2File,
                  CompressionTypes.LZMA: lzma.LZMAFile}
"""Python's own readers, which raise on a truncated or corrupt file where Beam's stop quietly."""
Block = tuple[str, int, int]
"""(path, first byte, end byte); end -1: the whole (compressed) file."""
LineStarts = tuple[int, int]
"""(a block's first byte, how many lines start in it)."""


def read_numbered_lines(path: str) -> Iterator[NumberedLine]:
    """(line number, bytes) for each non-blank line of `path` (any Beam filesystem); a UTF-8
    byte-order mark opening the file is dropped. A compressed file that ends early or does not
    decode ends with an `UnreadableRest` naming the file and the last line read."""
    kind = CompressionTypes.detect_compression_type(path)
    if kind not in _DECOMPRESSORS:
        uncompressed = kind == CompressionTypes.UNCOMPRESSED
        with _open_raw(path) if uncompressed else FileSystems.open(path) as handle:
            yield from _numbered(handle, 1, first=True)
        return
    number = 0
    with _open_raw(path) as raw, _DECOMPRESSORS[kind](fileobj=raw) as handle:
        try:
            for number, line in _numbered(handle, 1, first=True):
                yield number, line
        except (EOFError, OSError, zlib.error, lzma.LZMAError) as error:
            yield number + 1, UnreadableRest(
                f"{path} is truncated or corrupt after line {number} ({kind} error: {error}); "
                "the lines before it were read")


def count_lines(path: str) -> int:
    """How many non-blank lines `path` holds (as `read_numbered_lines` reads them)."""
    return sum(1 for _, line in read_numbered_lines(path) if not isinstance(line, UnreadableRest))


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


def _blocks_of_file(_impulse: bytes, path: str, block_bytes: int) -> Iterator[Block]:
    return file_blocks(path, block_bytes)


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
    for raw in iter(lambda: handle.readline(MAX_LINE_BYTES + 1), b""):
        if limit is not None and consumed >= limit:
            return
        consumed += len(raw)
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            skipped = _skip_rest_of_line(handle)
            consumed += skipped
            yield number, OverlongLine(len(raw) + skipped)
        else:
            line = raw.removeprefix(BOM).strip() if first else raw.strip()
            if line:
                yield number, line
        first = False
        number += 1


def _skip_rest_of_line(handle: BinaryIO) -> int:
    """Reads past the rest of a line, a bounded piece at a time; returns how many bytes."""
    skipped = 0
    while piece := handle.readline(_SCAN_BYTES):
        skipped += len(piece)
        if piece.endswith(b"\n"):
            break
    return skipped


def _open_raw(path: str) -> BinaryIO:
    return _buffered(FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED))


def _buffered(stream: BinaryIO) -> BinaryIO:
    return io.BufferedReader(stream, READ_BUFFER_BYTES)  # type: ignore[type-var]


class ReadNumberedLines(beam.PTransform[beam.pvalue.PBegin, beam.PCollection[NumberedLine]]):
    """Reads a text file as (line number, bytes), split into blocks that a runner spreads over
    its workers; line numbers are exact whatever the split.

    Usage::

        lines = pipeline | ReadNumberedLines("queries.jsonl")
    """

    def __init__(self, path: str, block_bytes: int = BLOCK_BYTES) -> None:
        super().__init__()
        self._path = path
        self._block_bytes = block_bytes

    def expand(self, begin: beam.pvalue.PBegin) -> beam.PCollection[NumberedLine]:
        blocks = (begin
                  | "Start" >> beam.Impulse()
                  | "Blocks" >> beam.FlatMap(_blocks_of_file, self._path, self._block_bytes)
                  | "SpreadBlocks" >> beam.Reshuffle())
        starts = blocks | "CountLineStarts" >> beam.Map(count_line_starts)
        return blocks | "ReadBlocks" >> beam.FlatMap(read_block,
                                                     beam.pvalue.AsList(starts))
