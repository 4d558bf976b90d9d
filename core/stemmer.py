"""The languages lexical recall stems in: one setting name for both backends."""

from __future__ import annotations

from typing import Literal, get_args

StemmerName = Literal["english", "danish", "dutch", "french", "german", "italian", "norwegian",
                      "portuguese", "russian", "spanish", "swedish", "turkish", "none"]
"""The languages that PyStemmer, bm25s's stop word lists and Elasticsearch's language analyzers
all know, or `none` (no stemming; English stop words on the embedded store, Elasticsearch's
`standard` analyzer)."""
STEMMER_NAMES: tuple[str, ...] = get_args(StemmerName)
DEFAULT_STEMMER: StemmerName = "english"
UNSTEMMED: StemmerName = "none"
