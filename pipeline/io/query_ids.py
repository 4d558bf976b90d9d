"""The id of a query record, read without parsing the query: what the passes over the ids
(repeated ids, shards) work from."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

import orjson

from core.input_limits import check_text, loads
from pipeline.io.line_blocks import decode_line
from pipeline.io.records import InputRecord, OverlongLine, UnreadableRest

DIGEST_BYTES = 16


def query_id_of(record: InputRecord) -> Iterator[tuple[str, int]]:
    """(id, line number) of a record that holds a string `id` within the input limits (the
    parser's own: `loads` and `check_text`); nothing for any other, which the parse pass
    dead-letters by itself."""
    number, raw = record
    if isinstance(raw, OverlongLine | UnreadableRest):
        return
    if isinstance(raw, dict):
        data: Any = raw
    else:
        try:
            data = _id_holder(raw)
        except ValueError:
            return
    if isinstance(data, dict) and isinstance(data.get("id"), str):
        try:
            yield check_text(data["id"]), number
        except ValueError:
            return


def _id_holder(raw: bytes | str) -> Any:
    """The line's JSON value: orjson's where it reads the line at all (a whole number too long
    for 64 bits, which it reads otherwise than the parser does, never changes an id), else the
    parser's own `loads`."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return loads(decode_line(raw))


def usable_id(value: Any) -> str | None:
    """`value` when it is an id a query may hold (a string within the input limits)."""
    if not isinstance(value, str):
        return None
    try:
        return check_text(value)
    except ValueError:
        return None


def line_digest(record: InputRecord) -> tuple[int, str | None, bytes | None]:
    """(line number, the line's id if it holds a usable one, the digest of its bytes; None
    for a part the reader could not read)."""
    number, raw = record
    if not isinstance(raw, bytes | str):
        return number, None, None
    found = next(query_id_of(record), None)
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    return number, None if found is None else found[0], hashlib.blake2b(
        data, digest_size=DIGEST_BYTES).digest()
