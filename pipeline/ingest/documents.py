"""The documents of a `--docs` folder: which entries are documents, and reading one safely.

Every entry named like a document is one, so that a folder named `notes.md`, a FIFO or a
dangling link fails alone, by path, instead of crashing or hanging the job; nothing is opened
before it is known to be a regular file inside the folder.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Any, NamedTuple

from core.chunk_identity import identity_metadata
from core.errors import DocumentError, InvalidInputError
from pipeline.ingest.chunking import chunk_text

DOC_SUFFIXES = (".txt", ".md", ".markdown", ".rst")
HEADING = "heading"
"""The metadata key of the heading a chunk falls under."""
MAX_DOCUMENT_BYTES = 64 * 1024 * 1024
_WORD = re.compile(r"[A-Za-z0-9]")
class DocumentChunk(NamedTuple):
    """A chunk of a document: its document id, its index there, its text and the heading it
    falls under."""

    doc_id: str
    chunk_index: int
    text: str
    heading: str | None = None

    @property
    def metadata(self) -> dict[str, Any]:
        """What `index` stores of it: its identity, and its heading when it has one."""
        identity: dict[str, Any] = identity_metadata(self.doc_id, self.chunk_index)
        return identity | {HEADING: self.heading} if self.heading else identity


def document_paths(root: str | Path) -> list[Path]:
    """Every entry under `root` named like a document (files, links, folders alike), sorted;
    folders are not entered through links.

    Raises:
        InvalidInputError: `root` is not a directory, holds no such entry, or holds a folder
            that cannot be listed (its documents would count as deleted).
    """
    base = Path(root)
    if not base.is_dir():
        raise InvalidInputError("--docs", str(root), "is not a directory")
    paths = []
    for folder, folders, files in os.walk(base, onerror=_unlisted, followlinks=False):
        paths += [Path(folder) / name for name in [*files, *folders]
                  if Path(name).suffix.lower() in DOC_SUFFIXES]
    if not paths:
        wanted = ", ".join(DOC_SUFFIXES)
        raise InvalidInputError("--docs", str(root), f"holds no document to index ({wanted})")
    return sorted(paths)


def _unlisted(error: OSError) -> None:
    raise InvalidInputError("--docs", str(error.filename), f"cannot be listed ({error.strerror}"
                            "): its documents would count as deleted") from None


def read_document(root: str | Path, path: str | Path, follow_symlinks: bool = False) -> str:
    """The text of the document at `path`.

    Raises:
        DocumentError: naming the path: not a regular file (a folder, a FIFO, a device, a
            link to nothing), a link that leads outside `root` (unless `follow_symlinks`),
            larger than MAX_DOCUMENT_BYTES, binary (NUL bytes), or not UTF-8.
    """
    where = str(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise DocumentError(where, "is a symbolic link to nothing") from None
    if stat.S_ISDIR(mode):
        raise DocumentError(where, "is a folder named like a document")
    if not stat.S_ISREG(mode):
        raise DocumentError(where, "is not a regular file (a pipe or a device)")
    if not follow_symlinks and not Path(path).resolve().is_relative_to(Path(root).resolve()):
        raise DocumentError(where, "is a link that leads outside --docs (index "
                                "with --follow-symlinks to follow it)")
    with open(path, "rb") as handle:
        data = handle.read(MAX_DOCUMENT_BYTES + 1)
    if len(data) > MAX_DOCUMENT_BYTES:
        raise DocumentError(where, f"is larger than {MAX_DOCUMENT_BYTES} bytes")
    if b"\x00" in data:
        raise DocumentError(where, "is binary (it holds NUL bytes), not text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise DocumentError(where, f"is not UTF-8 text (byte 0x{data[error.start]:02x}"
                                f" at position {error.start})") from None


def is_utf8(name: str) -> bool:
    """Whether a name read from the file system is text (not bytes it could not decode)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown_name(name: str) -> str:
    """A file system name as text for messages and failure lines: bytes that are not UTF-8
    shown as `\\xNN`."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def document_id(root: str | Path, path: str | Path) -> str:
    """A document's id: its path relative to `root`."""
    return Path(path).relative_to(root).as_posix()


def chunks_of(root: str | Path, path: str | Path, max_chars: int, overlap: int = 0,
              follow_symlinks: bool = False, doc_id: str | None = None) -> list[DocumentChunk]:
    """The chunks of one document (`doc_id`, by default its `document_id`) that hold a word."""
    doc_id = doc_id if doc_id is not None else document_id(root, path)
    text = read_document(root, path, follow_symlinks)
    chunks = [c for c in chunk_text(text, max_chars, overlap) if _WORD.search(c.text)]
    return [DocumentChunk(doc_id, index, c.text, c.heading) for index, c in enumerate(chunks)]
