"""What the readers yield: numbered records, and what stands in for the parts they cannot read.

A record that cannot be read is still a record, so that the parser turns it into a dead letter
naming where it was, and the job goes on; nothing raises in a reader.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class OverlongLine:
    """A line longer than the input limit: it was skipped, never held in memory whole. It is
    one input, and becomes that input's dead letter."""

    length: int


@dataclass(frozen=True)
class UnreadableRest:
    """The rest of a file that could not be read (a truncated or corrupt compressed file, a
    Parquet row group that does not decode). It is not an input: its dead letter makes the
    run's count of dead letters exceed what the inputs explain, so the run is not reported ok."""

    reason: str


Unreadable = OverlongLine | UnreadableRest
NumberedLine = tuple[int, bytes | Unreadable]
"""A line as read: its number and its bytes, decoded by the parser (so that a line that is not
UTF-8 becomes a dead letter of its own, never a replacement character or a crash)."""
InputRecord = tuple[int, bytes | dict[str, Any] | Unreadable]
"""A query as read: its line (or Parquet row) number, and its bytes (or the row's columns)."""


def unreadable_reason(record: Unreadable, limit: int) -> str:
    if isinstance(record, OverlongLine):
        return f"line has more than {limit} bytes; longer lines are skipped unread"
    return record.reason
