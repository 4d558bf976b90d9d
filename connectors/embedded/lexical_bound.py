"""How far a change of the store can raise the BM25 score of a chunk whose words did not change:
what lets a lexical list kept by one night bound, the next night, the chunks it left out.

The store's lexical index is bm25s with Lucene's variant (see `lexical.indexed`): a chunk d
scores, for each query term t it holds,

    idf(t) * tf / (tf + k1 * (1 - b + b * len(d) / avgdl))
    idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))

with N the chunks of the index (those without a word too), avgdl their mean length in words
and df the chunks that hold t. A change of the store moves N, avgdl and df, and with them
every chunk's score, but by a bounded factor: for k1 >= 0 and 0 <= b <= 1 the second part grows
with avgdl, at most by `max(1, avgdl_new / avgdl_old)`, and the first is known for every term
from both nights' statistics. So an unchanged chunk scores tonight at most

    old score * max over the query's terms of (idf_new / idf_old)
              * max(1, avgdl_new / avgdl_old)

(`score_factor`), a term the old index did not hold adding nothing (no unchanged chunk holds
it). The index keeps each term's score in float32 and sums them so: compare with
`SCORE_MARGIN` to spare. `tests/connectors/test_lexical_bound.py` holds the claim against the
real index.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from core.stemmer import StemmerName

SCORE_MARGIN = 1e-5
"""Relative: more than a float32 score of a few terms moves by the rounding of its parts."""


@dataclass(frozen=True)
class LexicalStatistics:
    """What a BM25 index's scores depend on beyond each chunk's own words: how many chunks it
    holds (`chunks`), their mean length in words (`mean_length`) and, for each word as
    analysed, how many chunks hold it (`frequencies`)."""

    chunks: int
    mean_length: float
    frequencies: Mapping[str, int]

    @classmethod
    def of(cls, analysed: Sequence[Sequence[str]]) -> LexicalStatistics:
        """The statistics of chunks analysed as the index analyses them
        (`lexical.tokens`)."""
        frequencies: Counter[str] = Counter()
        for words in analysed:
            frequencies.update(set(words))
        mean = sum(map(len, analysed)) / len(analysed) if analysed else 0.0
        return cls(len(analysed), mean, dict(frequencies))

    def idf(self, term: str) -> float:
        """Lucene's idf of `term` (bm25s's `lucene`)."""
        frequency = self.frequencies.get(term, 0)
        return math.log(1 + (self.chunks - frequency + 0.5) / (frequency + 0.5))


class TonightsStatistics(NamedTuple):
    """The BM25 statistics of the store a run reads (kept with its state), and how a query's
    text is analysed into the words they count: by `stemmer` as the embedded store's lexical
    index analyses it, or, for an index that analyses texts itself, as `analysed` lists each
    standing text's words (a text it does not list is not continued)."""

    statistics: LexicalStatistics
    stemmer: StemmerName
    analysed: Mapping[str, tuple[str, ...]] | None = None


def score_factor(old: LexicalStatistics, new: LexicalStatistics, terms: Iterable[str]
                 ) -> float:
    """At most how many times its score under `old` a chunk whose words did not change scores
    under `new`, for a query of `terms` (as analysed); 0.0 when `old` holds none of them (no
    unchanged chunk matches the query)."""
    ratios = [new.idf(t) / old.idf(t) for t in set(terms) if old.frequencies.get(t, 0) > 0]
    if not ratios:
        return 0.0
    longer = new.mean_length / old.mean_length if old.mean_length > 0 else 1.0
    return max(ratios) * max(1.0, longer)
