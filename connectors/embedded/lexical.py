"""BM25 over the store's chunk contents, with bm25s; built by `index`, kept in the store.

Words are lower-cased, stop words dropped and, unless the stemmer is `none`, stemmed (PyStemmer's
Snowball stemmers; `english` is Porter's, as Elasticsearch's `english` analyzer), so that
"tomato" finds "tomatoes". The stemmer a store was built with is in its manifest, and queries
are analysed with it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from connectors.embedded.lexical_bound import LexicalStatistics
from core.stemmer import DEFAULT_STEMMER, UNSTEMMED, StemmerName

if TYPE_CHECKING:
    import bm25s

_ALGORITHMS = {"english": "porter"}
"""PyStemmer's algorithm per language, where it is not the language's name."""
_STOPWORDS = {"english": "en", "danish": "da", "dutch": "nl", "french": "fr", "german": "de",
              "italian": "it", "norwegian": "no", "portuguese": "pt", "russian": "ru",
              "spanish": "es", "swedish": "sv", "turkish": "tr", "none": "en"}


def bm25s_module() -> ModuleType:
    """The bm25s module, imported at its first use: with scipy it is slow to import, which a
    job of vector queries never needs. bm25s sets its logger to DEBUG when imported; the level the
    application chose is put back."""
    logger = logging.getLogger("bm25s")
    level = logger.level
    import bm25s as module

    logger.setLevel(level)
    return module


@cache
def _stemmer(name: StemmerName) -> Any:
    """PyStemmer's stemmer of that language (bm25s calls its `stemWords`); None for `none`."""
    if name == UNSTEMMED:
        return None
    import Stemmer

    return Stemmer.Stemmer(_ALGORITHMS.get(name, name))


def tokens(texts: Sequence[str], stemmer: StemmerName = DEFAULT_STEMMER) -> list[list[str]]:
    """The words of each text as the index holds them: lower-cased, without stop words,
    stemmed with `stemmer`."""
    return bm25s_module().tokenize(list(texts), return_ids=False,
                                   stopwords=_STOPWORDS[stemmer], stemmer=_stemmer(stemmer),
                                   show_progress=False)


def indexed(contents: Sequence[str], stemmer: StemmerName = DEFAULT_STEMMER) -> bm25s.BM25 | None:
    """A BM25 index (Lucene's variant) of `contents` in row order; None when no content has a
    single word to index."""
    made = _indexed(contents, stemmer)
    return None if made is None else made[0]


def _indexed(contents: Sequence[str], stemmer: StemmerName
             ) -> tuple[bm25s.BM25, float] | None:
    """`indexed`, and the mean length of the chunks in words as analysed."""
    library = bm25s_module()
    tokenized = library.tokenize(list(contents), stopwords=_STOPWORDS[stemmer],
                                 stemmer=_stemmer(stemmer), show_progress=False)
    if not any(tokenized.ids):  # tokenized once: the check and the index share it
        return None
    retriever = library.BM25()
    retriever.index(tokenized, show_progress=False)
    return retriever, sum(map(len, tokenized.ids)) / len(tokenized.ids)


def build_lexical_index(contents: Sequence[str], directory: Path,
                        stemmer: StemmerName = DEFAULT_STEMMER) -> bool:
    """Indexes `contents` (see `indexed`) and saves it, with the mean length of its chunks
    (`STATISTICS_FILE`: bm25s keeps only what the scores became); False when there was
    nothing to index."""
    made = _indexed(contents, stemmer)
    if made is None:
        return False
    retriever, mean_length = made
    retriever.save(str(directory), show_progress=False)
    (directory / STATISTICS_FILE).write_text(json.dumps(
        {"chunks": len(contents), "mean_length": mean_length}), encoding="utf-8")
    return True


STATISTICS_FILE = "statistics.json"
"""In the lexical index's folder: how many chunks it holds and their mean length in words."""


class LexicalIndex:
    """A saved BM25 index, memory-mapped, loaded by the first text search (its vocabulary is
    a dict in memory: a job of vector queries never pays for it); `None` directory means an
    empty index. Queries are analysed with `stemmer`, the one the index was built with."""

    def __init__(self, directory: Path | None, rows: int,
                 stemmer: StemmerName = DEFAULT_STEMMER) -> None:
        self._rows = rows
        self._directory = directory
        self._stemmer = stemmer
        self._retriever: bm25s.BM25 | None = None

    @classmethod
    def held(cls, retriever: bm25s.BM25 | None, rows: int,
             stemmer: StemmerName = DEFAULT_STEMMER) -> LexicalIndex:
        """An index already in memory (not saved); None for an empty one."""
        index = cls(None, rows, stemmer)
        index._retriever = retriever
        return index

    def statistics(self) -> LexicalStatistics | None:
        """What its scores depend on beyond each chunk's words (see `lexical_bound`); None for
        an index built before they were recorded, or an empty one."""
        if self._directory is None or not (self._directory / STATISTICS_FILE).is_file():
            return None
        recorded = json.loads((self._directory / STATISTICS_FILE).read_text(encoding="utf-8"))
        retriever = self._loaded()
        held = np.diff(np.asarray(retriever.scores["indptr"]))  # chunks per term id
        frequencies = {term: int(held[at]) for term, at in retriever.vocab_dict.items()
                       if at < len(held) and held[at] > 0}
        return LexicalStatistics(int(recorded["chunks"]), float(recorded["mean_length"]),
                                 frequencies)

    def terms(self, text: str) -> list[str]:
        """The words of `text` as this index analyses a query."""
        return tokens([text], self._stemmer)[0]

    def _loaded(self) -> bm25s.BM25:
        if self._retriever is None:
            self._retriever = bm25s_module().BM25.load(str(self._directory), mmap=True,
                                              show_progress=False)
        return self._retriever

    def scores(self, text: str) -> np.ndarray:
        """BM25 score of every row for `text`; zero where no term matches."""
        (query_tokens,) = tokens([text], self._stemmer)
        if not query_tokens or (self._directory is None and self._retriever is None):
            return np.zeros(self._rows, dtype=np.float32)
        return np.asarray(self._loaded().get_scores(query_tokens), dtype=np.float32)
