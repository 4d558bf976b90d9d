"""What ingestion reads: chunk-record JSONL lines, or the chunks of a folder of documents."""

from __future__ import annotations

from pydantic import ValidationError

from connectors.chunk_record import ChunkRecord
from core.errors import InputLineError, InvalidInputError
from core.input_limits import MAX_LINE_BYTES, loads
from pipeline.io.line_blocks import decode_line, read_numbered_lines
from pipeline.io.records import OverlongLine, Unreadable, UnreadableRest, unreadable_reason
from pipeline.io.validation_messages import failures


def parse_chunk_line(path: str, number: int, line: str | bytes | Unreadable) -> ChunkRecord:
    """One chunk record line.

    Raises:
        InputLineError: naming `path:number` once, then the field and what is wrong.
    """
    where = f"{path}:{number}"
    if isinstance(line, OverlongLine | UnreadableRest):
        raise InputLineError(where, unreadable_reason(line, MAX_LINE_BYTES))
    try:
        data = loads(decode_line(line))
    except ValueError as error:
        raise InputLineError(where, f"is not a JSON line ({error})") from None
    if not isinstance(data, dict):
        raise InputLineError(where, "must be a JSON object")
    try:
        return ChunkRecord.model_validate(data)
    except ValidationError as error:
        field, value, message = failures(error)[0]
        raise InputLineError(where, f"{field}={_short(value)}: {message}", field, value
                             ) from None


def _short(value: object, limit: int = 60) -> str:
    shown = repr(value)
    return shown if len(shown) <= limit else shown[:limit - 3] + "..."


def first_dimension(chunks: str) -> int:
    """The vector length of the first valid chunk record of `chunks`.

    Raises:
        InvalidInputError: the file holds no valid chunk record.
    """
    for number, line in read_numbered_lines(chunks):
        try:
            return len(parse_chunk_line(chunks, number, line).vector)
        except InvalidInputError:
            continue
    raise InvalidInputError("--chunks", chunks, "holds no valid chunk record")


def duplicated_id(chunks: str | None) -> str:
    """The first id that a second line of `chunks` repeats (read again only to name it)."""
    if chunks is None:
        return "?"
    seen: set[str] = set()
    for number, line in read_numbered_lines(chunks):
        try:
            record_id = parse_chunk_line(chunks, number, line).id
        except InvalidInputError:
            continue
        if record_id in seen:
            return record_id
        seen.add(record_id)
    return "?"


def lines_with_id(chunks: str, record_id: str) -> list[str]:
    """`file:line` of each chunk line whose id is `record_id` (to explain a duplicate)."""
    found = []
    for number, line in read_numbered_lines(chunks):
        try:
            if parse_chunk_line(chunks, number, line).id == record_id:
                found.append(f"{chunks}:{number}")
        except InvalidInputError:
            continue
    return found
