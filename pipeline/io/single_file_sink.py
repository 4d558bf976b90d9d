"""Writes a PCollection to one file without holding it in memory.

Beam's file sinks give one file only through `num_shards=1`, which groups every element under
one key: a runner then holds the whole output at once (on the DirectRunner, all of it in
memory). Here each bundle streams into a part file of its own, and one last step, which sees
only the list of parts, appends them into the requested file and deletes them. A retried
bundle's part is never listed, and is deleted with the rest.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO, Protocol

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from connectors.ownership import owned_suffix, remove_stale
from pipeline.io.local_paths import is_local

_COPY_BYTES = 8 * 1024 * 1024
_PENDING_BYTES = 1024 * 1024
PARTS = ".parts-"
"""The part folder beside the file, named after its owner (see `connectors.ownership`)."""


class PartFormat(Protocol):
    """How elements become a part file, and how parts become the one file."""

    def open_part(self, handle: BinaryIO) -> PartWriter: ...

    def merge(self, parts: list[str], out: BinaryIO) -> None: ...

    part_is_whole: bool
    """Whether one part alone is the file, byte for byte (it is renamed, not copied)."""


class PartWriter(Protocol):
    def write(self, element: Any) -> None: ...

    def write_all(self, elements: Sequence[Any]) -> None: ...

    def close(self) -> None: ...


class TextLines:
    """Elements are lines of text (without their newline)."""

    part_is_whole = True

    def open_part(self, handle: BinaryIO) -> PartWriter:
        return _TextPart(handle)

    def merge(self, parts: list[str], out: BinaryIO) -> None:
        for part in parts:
            with FileSystems.open(part) as source:
                while chunk := source.read(_COPY_BYTES):
                    out.write(chunk)


class _TextPart:
    """Lines gathered and handed to the file a megabyte at a time, not by a write call per
    line and a system call per 8 KiB of the file's buffer (docs/benchmarks.md)."""

    def __init__(self, handle: BinaryIO) -> None:
        self._handle = handle
        self._pending: list[bytes] = []
        self._pending_bytes = 0

    def write(self, element: str | bytes) -> None:
        if isinstance(element, str):
            element = element.encode("utf-8")
        self._pending.append(element)
        self._pending_bytes += len(element)
        if self._pending_bytes >= _PENDING_BYTES:
            self._write_pending()

    def _write_pending(self) -> None:
        if self._pending:
            self._pending.append(b"")
            self._handle.write(b"\n".join(self._pending))
            self._pending, self._pending_bytes = [], 0

    def write_all(self, elements: Sequence[str | bytes]) -> None:
        self._write_pending()
        if elements:  # one write of every line: a part of results copied as they stood
            self._handle.write(b"\n".join([e.encode("utf-8") if isinstance(e, str) else e
                                            for e in elements]) + b"\n")

    def close(self) -> None:
        self._write_pending()
        self._handle.close()


class ParquetRows:
    """Elements are rows (dicts) of `schema`, written in row groups of `group_rows`."""

    part_is_whole = False

    def __init__(self, schema: pa.Schema, group_rows: int = 1000) -> None:
        self._schema = schema
        self._group_rows = group_rows

    def open_part(self, handle: BinaryIO) -> PartWriter:
        return _ParquetPart(handle, self._schema, self._group_rows)

    def merge(self, parts: list[str], out: BinaryIO) -> None:
        with pq.ParquetWriter(out, self._schema) as writer:
            for part in parts:
                with FileSystems.open(part) as source:
                    table = pq.ParquetFile(source)
                    for group in range(table.num_row_groups):
                        writer.write_table(table.read_row_group(group))


class _ParquetPart:
    def __init__(self, handle: BinaryIO, schema: pa.Schema, group_rows: int) -> None:
        self._handle = handle
        self._schema = schema
        self._writer = pq.ParquetWriter(handle, schema)
        self._rows: list[dict[str, Any]] = []
        self._group_rows = group_rows

    def write(self, element: dict[str, Any]) -> None:
        self._rows.append(element)
        if len(self._rows) >= self._group_rows:
            self._flush()

    def write_all(self, elements: Sequence[dict[str, Any]]) -> None:
        for element in elements:
            self.write(element)

    def close(self) -> None:
        self._flush()
        self._writer.close()
        self._handle.close()

    def _flush(self) -> None:
        if self._rows:
            self._writer.write_table(pa.Table.from_pylist(self._rows, schema=self._schema))
            self._rows = []


class _WritePartsDoFn(beam.DoFn):
    def __init__(self, parts_dir: str, part_format: PartFormat) -> None:
        self._dir = parts_dir
        self._format = part_format
        self._writer: PartWriter | None = None
        self._path = ""

    def start_bundle(self) -> None:
        self._writer = None

    def process(self, element: Any) -> None:
        if self._writer is None:
            self._path = FileSystems.join(self._dir, f"part-{uuid.uuid4().hex}")
            self._writer = self._format.open_part(FileSystems.create(self._path))
        self._writer.write(element)

    def finish_bundle(self) -> Iterator[WindowedValue]:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
            yield WindowedValue(self._path, MIN_TIMESTAMP, (GlobalWindow(),))


def write_parts(parts_dir: str, part_format: PartFormat) -> beam.ParDo:
    """The step that writes its elements into parts in `parts_dir`, one per bundle, and
    outputs each part's path (see `WriteToSingleFile`'s `parts`)."""
    return beam.ParDo(_WritePartsDoFn(parts_dir, part_format))


def write_part(parts_dir: str, part_format: PartFormat, elements: Iterable[Any]) -> str:
    """Writes `elements` into a part of their own (see `WriteToSingleFile`'s `parts`)."""
    path = FileSystems.join(parts_dir, f"part-{uuid.uuid4().hex}")
    writer = part_format.open_part(FileSystems.create(path))
    writer.write_all(list(elements))
    writer.close()
    return path


def _merge_parts(_impulse: bytes, parts: list[str], path: str, parts_dir: str,
                 part_format: PartFormat) -> str:
    """Merges the parts into a file in the parts folder, then renames it over `path`: the file
    appears whole or not at all, and a failed or killed run leaves the previous one."""
    if len(parts) == 1 and part_format.part_is_whole:
        merged = parts[0]
    else:
        merged = FileSystems.join(parts_dir, "merged")
        with FileSystems.create(merged) as out:
            part_format.merge(sorted(parts), out)
    FileSystems.rename([merged], [path])
    if FileSystems.exists(parts_dir):
        FileSystems.delete([parts_dir])
    return path


def parts_folder(path: str) -> str:
    """The folder this process writes `path`'s parts into, after removing what killed runs
    of this path left behind."""
    if is_local(path):
        remove_stale(Path(path).parent, Path(path).name + PARTS)
    return f"{path}{PARTS}{owned_suffix()}"


class WriteToSingleFile(beam.PTransform[beam.PCollection[Any], beam.PCollection[str]]):
    """Writes every element into the one file `path` (replaced whole, at the end, if there),
    streaming; an empty input gives an empty file. Returns the path, once written.
    `parts`, when given, are part files that other steps wrote into `parts_dir` (see
    `write_part`), merged with the rest.

    Usage::

        lines | WriteToSingleFile("out.jsonl", TextLines())
    """

    def __init__(self, path: str, part_format: PartFormat, parts_dir: str | None = None,
                 parts: beam.PCollection[str] | None = None) -> None:
        super().__init__()
        self._path = path
        self._format = part_format
        self._parts_dir = parts_dir or parts_folder(path)
        self._parts = parts

    def expand(self, elements: beam.PCollection[Any]) -> beam.PCollection[str]:
        parts = elements | "WriteParts" >> beam.ParDo(_WritePartsDoFn(self._parts_dir,
                                                                      self._format))
        if self._parts is not None:
            parts = (parts, self._parts) | "AllParts" >> beam.Flatten()
        # One merge, once every part is written: the parts as a side input of a single
        # element (three steps; a global combine into a list takes eleven to build and run).
        return (elements.pipeline
                | "Once" >> beam.Impulse()
                | "MergeParts" >> beam.Map(_merge_parts, beam.pvalue.AsList(parts), self._path,
                                           self._parts_dir, self._format))
