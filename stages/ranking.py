"""The one ranking order every stage shares: higher score first, ties by recall order."""

from __future__ import annotations

from collections.abc import Iterable

from stages.models import Candidate


def rank_key(candidate: Candidate) -> tuple[float, int]:
    return (-candidate.score, candidate.recall_order)


def ranked(candidates: Iterable[Candidate]) -> list[Candidate]:
    """The candidates in ranking order (a stable sort)."""
    return sorted(candidates, key=rank_key)
