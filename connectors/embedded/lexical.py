"""BM25 over the store's chunk contents, with bm25s; built by `index`, kept in the store."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import bm25s

STOPWORDS = "en"


def bm25s_module() -> ModuleType:
    """The bm25s module, imported at its first use: with scipy it is slow to import, which a
    job of vector queries never needs. bm25s sets its logger to DEBUG when imported; the level the
    application chose is put back."""
    logger = logging.getLogger("bm25s")
    level = logger.level
    import bm25s as module

    logger.setLevel(level)
    return module


def tokens(texts: Sequence[str]) -> list[list[str]]:
    """Lower-cased word tokens without English stop words, as the index was built."""
    return bm25s_module().tokenize(list(texts), return_ids=False, stopwords=STOPWORDS,
                          show_progress=False)


def build_lexical_index(contents: Sequence[str], directory: Path) -> bool:
    """Indexes `contents` (row order) with BM25 (Lucene's variant) and saves it; False when
    no content has a single word to index."""
    if not any(tokens(contents)):
        return False
    library = bm25s_module()
    retriever = library.BM25()
    retriever.index(library.tokenize(list(contents), stopwords=STOPWORDS, show_progress=False),
                    show_progress=False)
    retriever.save(str(directory), show_progress=False)
    return True


class LexicalIndex:
    """A saved BM25 index, memory-mapped, loaded by the first text search (its vocabulary is
    a dict in memory: a job of vector queries never pays for it); `None` directory means an
    empty index."""

    def __init__(self, directory: Path | None, rows: int) -> None:
        self._rows = rows
        self._directory = directory
        self._retriever: bm25s.BM25 | None = None

    @classmethod
    def held(cls, retriever: bm25s.BM25, rows: int) -> LexicalIndex:
        """An index already in memory (not saved)."""
        index = cls(None, rows)
        index._retriever = retriever
        return index

    def scores(self, text: str) -> np.ndarray:
        """BM25 score of every row for `text`; zero where no term matches."""
        (query_tokens,) = tokens([text])
        if not query_tokens or (self._directory is None and self._retriever is None):
            return np.zeros(self._rows, dtype=np.float32)
        if self._retriever is None:
            self._retriever = bm25s_module().BM25.load(str(self._directory), mmap=True,
                                              show_progress=False)
        return np.asarray(self._retriever.get_scores(query_tokens), dtype=np.float32)
