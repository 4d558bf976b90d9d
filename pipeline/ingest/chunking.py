"""Splits a text or Markdown document into chunks at natural boundaries, each with the heading
it falls under.

The split is LangChain's `RecursiveCharacterTextSplitter` (as Beam's own RAG chunking uses
it), trying in turn: before a heading, between paragraphs, between lines, between sentences,
between words; only a word longer than a chunk is cut inside. It then packs consecutive pieces
up to the size, so a chunk may hold several short sections (its heading is the one it starts
under). Consecutive chunks may share `overlap` characters.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

SEPARATORS = (r"\n(?=#{1,6} )", r"\n\s*\n", r"\n", r"(?<=[.!?])\s+", r"\s+", "")
"""Where a chunk may end, most natural first: before a Markdown heading, at a blank line, at
a line end, after a sentence, between words, anywhere."""

_ATX = re.compile(r"^(#{1,6})[ \t]+(?P<title>.+?)[ \t#]*$", re.MULTILINE)
_SETEXT = re.compile(r"^(?P<title>[^\n]*\S[^\n]*)\n(?:=+|-+)[ \t]*$", re.MULTILINE)


@dataclass(frozen=True)
class TextChunk:
    """A chunk's text, and the heading it falls under (None before the first heading)."""

    text: str
    heading: str | None


def chunk_text(text: str, max_chars: int, overlap: int = 0) -> list[TextChunk]:
    """`text` in chunks of at most `max_chars` characters, consecutive ones sharing up to
    `overlap` characters, each with the last heading at or before its start (Markdown `#`
    headings, and underlined ones as reStructuredText and Markdown write them)."""
    pieces = _splitter(max_chars, overlap).create_documents([text])
    headings = _headings(text)
    starts = [at for at, _ in headings]
    chunks = []
    for piece in pieces:
        end_of_first_line = piece.metadata["start_index"] + len(piece.page_content.split("\n")[0])
        found = bisect.bisect_right(starts, end_of_first_line) - 1
        chunks.append(TextChunk(piece.page_content, headings[found][1] if found >= 0 else None))
    return chunks


def _headings(text: str) -> list[tuple[int, str]]:
    """(where it starts, title) of each heading, in order."""
    found = [(m.start(), m.group("title").strip()) for m in _ATX.finditer(text)]
    found += [(m.start(), m.group("title").strip()) for m in _SETEXT.finditer(text)
              if not m.group("title").lstrip().startswith(("#", "-", "*", "="))]
    return sorted(found)


@cache
def _splitter(max_chars: int, overlap: int) -> Any:
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    return RecursiveCharacterTextSplitter(
        chunk_size=max_chars, chunk_overlap=overlap, separators=list(SEPARATORS),
        is_separator_regex=True, keep_separator="start", strip_whitespace=True,
        add_start_index=True)
