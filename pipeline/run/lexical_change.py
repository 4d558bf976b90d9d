"""How far tonight's BM25 statistics can raise a kept lexical list's bound (issue 47).

A BM25 score depends on the store's chunk count, mean length and each term's document
frequency, and any change moves them: every chunk's score moves. An unchanged chunk scores
tonight at most its old score times `lexical_bound.score_factor` (from both nights'
statistics and the query's terms), so a kept list's bound times that factor bounds every
unchanged chunk it left out. A run that keeps state for lexical or hybrid recall keeps the
statistics of the store version it read (`KEPT_FILE`), and the next run compares them with
its own version's.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from connectors.embedded.lexical import tokens
from connectors.embedded.lexical_bound import SCORE_MARGIN, LexicalStatistics, score_factor
from core.stemmer import StemmerName
from stages.candidate_state import NO_BOUND

KEPT_FILE = "lexical.json"
"""In a state folder: the BM25 statistics of the store version its run read."""


@dataclass(frozen=True)
class LexicalChange:
    """The store's BM25 statistics when PREV's state was kept (`old`) and tonight (`new`),
    and how tonight's index analyses a query: by `stemmer`, or as `analysed` lists each
    standing text's words (see `TonightsStatistics`)."""

    old: LexicalStatistics
    new: LexicalStatistics
    stemmer: StemmerName
    analysed: Mapping[str, tuple[str, ...]] | None = None

    def raised(self, text: str, bound: float) -> float:
        """`bound`, a BM25 list's for the query `text`, raised to what an unchanged chunk it
        left out may score tonight (with the float32 scores' margin); a list that held every
        chunk that matched (`NO_BOUND`) still does; infinite (the query is recalled) for a
        text whose words are not known."""
        if bound == NO_BOUND:
            return bound
        if self.analysed is None:
            words: Sequence[str] = tokens([text], self.stemmer)[0]
        elif (listed := self.analysed.get(text)) is not None:
            words = listed
        else:
            return math.inf
        return bound * score_factor(self.old, self.new, words) * (1 + SCORE_MARGIN)


def keep_statistics(statistics: LexicalStatistics, folder: Path) -> None:
    """Writes `statistics` into a state folder, for the next run."""
    (folder / KEPT_FILE).write_text(json.dumps(
        {"chunks": statistics.chunks, "mean_length": statistics.mean_length,
         "frequencies": dict(statistics.frequencies)}, sort_keys=True), encoding="utf-8")


def kept_statistics(folder: Path) -> LexicalStatistics | None:
    """The statistics `keep_statistics` kept in `folder`; None when it kept none."""
    path = folder / KEPT_FILE
    if not path.is_file():
        return None
    kept = json.loads(path.read_text(encoding="utf-8"))
    return LexicalStatistics(int(kept["chunks"]), float(kept["mean_length"]),
                             {str(t): int(n) for t, n in kept["frequencies"].items()})
