"""TopN: keep the `return-n` best candidates of each query (Project ranks them as blocks)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from core.params import Bound
from stages.candidate_step import CandidateStep
from stages.models import Candidate
from stages.ranking import ranked
from stages.step_views import StepView, ordered_rows

RETURN_N = Bound("rag.return-n", ge=1, le=10_000)


KEPT_VIEW = StepView("kept by TopN",
                     ("rank", "score", "evidence_key", "reasons"),
                     ordered_rows, "kept")
"""How `explain` shows the step."""


def top_n(candidates: Sequence[Candidate], return_n: int) -> list[Candidate]:
    """The `return_n` best candidates in ranking order.

    Raises:
        OutOfBoundsError: `return_n` is outside `RETURN_N` (a ValueError).
    """
    return ranked(candidates)[:RETURN_N.check(return_n)]


def top_n_step(return_n: int = 5) -> CandidateStep:
    """The step that keeps the `return_n` best candidates, per query.

    Usage::

        best = candidates | CandidateStage(top_n_step(return_n=5))

    Raises:
        OutOfBoundsError: `return_n` is outside `RETURN_N` (a ValueError).
    """
    RETURN_N.check(return_n)
    return CandidateStep("TopN", partial(top_n, return_n=return_n),
                         view=KEPT_VIEW)
