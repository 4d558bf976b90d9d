"""Builds a store from chunk-record JSONL or from a folder of text/Markdown documents."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path

from pydantic import ValidationError

from connectors.chunk_record import ChunkRecord
from connectors.embedder_port import EmbedderPort
from connectors.errors import InvalidInputError
from pipeline.chunking import chunk_text
from pipeline.validation_messages import failures

DOC_SUFFIXES = (".txt", ".md", ".markdown", ".rst")
_WORD = re.compile(r"[A-Za-z0-9]")


def read_chunk_records(path: str | Path) -> Iterator[ChunkRecord]:
    """Chunk records from JSONL, one per non-blank line.

    Raises:
        InvalidInputError: a line is not JSON or not a valid record; names the line and field.
    """
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if line.strip():
                yield parse_chunk_line(str(path), number, line)


def parse_chunk_line(path: str, number: int, line: str) -> ChunkRecord:
    """One chunk record line; errors name `path:number` and the field."""
    try:
        return ChunkRecord.model_validate_json(line)
    except ValidationError as error:
        field, value, message = failures(error)[0]
        raise InvalidInputError(f"{path}:{number} {field}", value, message) from None


def document_paths(root: str | Path) -> list[Path]:
    """The text/Markdown files under `root`, sorted.

    Raises:
        InvalidInputError: `root` is not a directory.
    """
    base = Path(root)
    if not base.is_dir():
        raise InvalidInputError("--docs", str(root), "is not a directory")
    return sorted(p for p in base.rglob("*") if p.suffix.lower() in DOC_SUFFIXES)


def chunks_of(root: str | Path, path: str | Path, max_chars: int) -> list[tuple[str, int, str]]:
    """(doc id = path relative to `root`, chunk index, text) for one document."""
    doc_id = Path(path).relative_to(root).as_posix()
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    chunks = [c for c in chunk_text(text, max_chars) if _WORD.search(c)]
    return [(doc_id, index, chunk) for index, chunk in enumerate(chunks)]


def document_chunks(root: str | Path, max_chars: int) -> Iterator[tuple[str, int, str]]:
    """Every chunk of every document under `root`."""
    for path in document_paths(root):
        yield from chunks_of(root, path, max_chars)


def embed_chunks(chunks: Iterator[tuple[str, int, str]], embedder: EmbedderPort,
                 batch_size: int = 256) -> Iterator[ChunkRecord]:
    """Chunk records with evidence-key ids and `docId`/`chunkIndex`/`source` metadata."""
    batch: list[tuple[str, int, str]] = []
    for chunk in chunks:
        batch.append(chunk)
        if len(batch) >= batch_size:
            yield from embed_batch(batch, embedder)
            batch = []
    yield from embed_batch(batch, embedder)


def embed_batch(batch: Sequence[tuple[str, int, str]], embedder: EmbedderPort
                ) -> list[ChunkRecord]:
    """Chunk records for a batch of chunks, embedded in one call."""
    if not batch:
        return []
    vectors = embedder.embed([text for _, _, text in batch])
    return [
        ChunkRecord(id=f"{doc_id}#chunk-{index}", vector=tuple(vector.tolist()), content=text,
                    metadata={"docId": doc_id, "chunkIndex": index, "source": doc_id})
        for (doc_id, index, text), vector in zip(batch, vectors, strict=True)
    ]

