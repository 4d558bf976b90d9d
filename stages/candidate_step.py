"""A candidate stage as data: what `run` applies as a Beam step (`CandidateStage`), `explain`
calls and eval's funnel names, without Beam."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from stages.models import Candidate

CandidateFn = Callable[[Sequence[Candidate]], list[Candidate]]


@dataclass(frozen=True)
class CandidateStep:
    """`name` (its Beam label, and the name the docs, `explain` and the funnel use), `fn` with
    its parameters bound, and the counter its drops count under (None: not counted)."""

    name: str
    fn: CandidateFn
    dropped_counter: str | None = None
