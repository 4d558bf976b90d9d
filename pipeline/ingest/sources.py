"""What ingestion reads: chunk-record JSONL lines, or the chunks of a folder of documents."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import ValidationError

from connectors.chunk_record import ChunkRecord
from connectors.errors import InvalidInputError
from connectors.input_limits import MAX_LINE_BYTES, loads
from pipeline.ingest.chunking import chunk_text
from pipeline.io.line_blocks import decode_line, read_numbered_lines
from pipeline.io.records import OverlongLine, Unreadable, UnreadableRest, unreadable_reason
from pipeline.io.validation_messages import failures

DOC_SUFFIXES = (".txt", ".md", ".markdown", ".rst")
_WORD = re.compile(r"[A-Za-z0-9]")
DocumentChunk = tuple[str, int, str]
"""(doc id, chunk index, text)."""


def parse_chunk_line(path: str, number: int, line: str | bytes | Unreadable) -> ChunkRecord:
    """One chunk record line; errors name `path:number` and the field."""
    if isinstance(line, OverlongLine | UnreadableRest):
        raise InvalidInputError(f"{path}:{number}", "...",
                                unreadable_reason(line, MAX_LINE_BYTES))
    try:
        data = loads(decode_line(line))
    except ValueError as error:
        raise InvalidInputError(f"{path}:{number}", line[:80], f"is not a chunk record: {error}"
                                ) from None
    if not isinstance(data, dict):
        raise InvalidInputError(f"{path}:{number}", line, "must be a JSON object")
    try:
        return ChunkRecord.model_validate(data)
    except ValidationError as error:
        field, value, message = failures(error)[0]
        raise InvalidInputError(f"{path}:{number} {field}", value, message) from None


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


def document_paths(root: str | Path) -> list[Path]:
    """The text/Markdown files under `root`, sorted.

    Raises:
        InvalidInputError: `root` is not a directory, or holds no such file.
    """
    base = Path(root)
    if not base.is_dir():
        raise InvalidInputError("--docs", str(root), "is not a directory")
    paths = sorted(p for p in base.rglob("*") if p.suffix.lower() in DOC_SUFFIXES)
    if not paths:
        wanted = ", ".join(DOC_SUFFIXES)
        raise InvalidInputError("--docs", str(root), f"holds no document to index ({wanted})")
    return paths


def chunks_of(root: str | Path, path: str | Path, max_chars: int) -> list[DocumentChunk]:
    """(doc id = path relative to `root`, chunk index, text) for one document."""
    doc_id = Path(path).relative_to(root).as_posix()
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    chunks = [c for c in chunk_text(text, max_chars) if _WORD.search(c)]
    return [(doc_id, index, chunk) for index, chunk in enumerate(chunks)]
