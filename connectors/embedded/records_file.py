"""The store's chunk records, read by row on demand: `records.jsonl` and an offsets table.

`records.offsets.npy` holds count + 1 byte offsets: record `i` is the JSON line between
offsets `i` and `i + 1`. Opening maps both files, so a store of a million chunks opens in
milliseconds and keeps in memory only the records it is asked for.
"""

from __future__ import annotations

import json
import mmap
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, Protocol

import numpy as np
import orjson

from connectors.embedded.layout import mapped_array


class Records(Protocol):
    """What the store reads records through: a `RecordFile`, or records held in memory."""

    def __len__(self) -> int: ...

    def record(self, row: int) -> dict[str, Any]: ...

    def metadata(self) -> Iterator[dict[str, Any]]: ...


class RecordFile:
    """Records by row number, from a mapped JSONL file."""

    def __init__(self, records_path: Path, offsets: np.ndarray) -> None:
        self._offsets = np.asarray(offsets)  # a plain view: a memmap's indexing goes through Python
        self._size = records_path.stat().st_size
        self._data: mmap.mmap | bytes = b""
        if self._size:
            with open(records_path, "rb") as handle:
                self._data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)

    @classmethod
    def open(cls, records_path: Path, offsets_path: Path) -> RecordFile:
        """Maps the records; a store written before offsets existed has them computed here."""
        if offsets_path.is_file():
            return cls(records_path, mapped_array(offsets_path))
        with open(records_path, "rb") as handle:
            return cls(records_path, line_offsets(handle))

    def __len__(self) -> int:
        return max(len(self._offsets) - 1, 0)

    def problem(self) -> str | None:
        """What is wrong with the offsets for this file, or None."""
        if len(self._offsets) == 0:
            return "its offsets table is empty"
        if int(self._offsets[-1]) != self._size:
            return (f"its offsets end at byte {int(self._offsets[-1])} but the file has "
                    f"{self._size} bytes")
        return None

    def line(self, row: int) -> bytes:
        """Record `row`'s JSON line, newline included."""
        start, end = self._offsets[row:row + 2].tolist()
        return self._data[start:end]

    def record(self, row: int) -> dict[str, Any]:
        line = self.line(row)
        try:
            record: dict[str, Any] = orjson.loads(line)
        except orjson.JSONDecodeError:  # NaN or Infinity in metadata, which json wrote
            record = json.loads(line)
        return record

    def metadata(self) -> Iterator[dict[str, Any]]:
        """Every record's metadata, in row order (a scan: for building filter postings)."""
        for row in range(len(self)):
            yield self.record(row)["metadata"]


def line_offsets(lines: BinaryIO) -> np.ndarray:
    """Byte offsets of each line's start, and the end of the file, as int64."""
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    return np.asarray(offsets, dtype=np.int64)


def write_records(path: Path, lines: Iterable[bytes]) -> np.ndarray:
    """Writes JSON lines (each ending in a newline) and returns their offsets."""
    offsets = [0]
    with open(path, "wb") as out:
        for line in lines:
            out.write(line)
            offsets.append(offsets[-1] + len(line))
    return np.asarray(offsets, dtype=np.int64)
