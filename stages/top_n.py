"""TopN: keep the `return-n` best candidates of each query (Project ranks them as blocks)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from core.params import Bound
from stages.models import Candidate
from stages.ranking import ranked
from stages.support.candidate_stage import CandidateStage

RETURN_N = Bound("rag.return-n", ge=1, le=10_000)


def top_n(candidates: Sequence[Candidate], return_n: int) -> list[Candidate]:
    """The `return_n` best candidates in ranking order.

    Raises:
        OutOfBoundsError: `return_n` is outside `RETURN_N` (a ValueError).
    """
    return ranked(candidates)[:RETURN_N.check(return_n)]


class TopN(CandidateStage):
    """Keeps the `return_n` best candidates, per query.

    Usage::

        best = candidates | TopN(return_n=5)
    """

    def __init__(self, return_n: int = 5) -> None:
        RETURN_N.check(return_n)
        super().__init__(partial(top_n, return_n=return_n))
