"""The one ranking order every stage shares: higher score first, ties by recall order."""

from __future__ import annotations

from collections.abc import Iterable
from operator import attrgetter

from stages.models import Candidate

_RECALL_ORDER = attrgetter("recall_order")
_SCORE = attrgetter("score")


def ranked(candidates: Iterable[Candidate]) -> list[Candidate]:
    """The candidates in ranking order.

    Two stable sorts with keys read in C (a reversed sort keeps equal keys in their order):
    by recall order, then by score, highest first. Input that is already in recall order,
    as it comes from Recall, makes the first a single pass."""
    return sorted(sorted(candidates, key=_RECALL_ORDER), key=_SCORE, reverse=True)
