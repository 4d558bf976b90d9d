"""A candidate step as data: what `run` applies as a Beam step (`CandidateStage`), `explain`
calls and shows, and eval's funnel names, without Beam."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from core.errors import RagEvidenceError
from stages.models import Candidate, EmbeddedQuery
from stages.step_views import StepView, dropped_view

CandidateFn = Callable[[Sequence[Candidate]], list[Candidate]]
"""A step that sees only the candidates."""
QueryCandidateFn = Callable[[Sequence[Candidate], EmbeddedQuery], list[Candidate]]
"""A step that sees the query too (`needs_query`): its text, vector or vectors, filters, and
the vector its text was embedded to."""


@dataclass(frozen=True)
class CandidateStep:
    """`name` (its Beam label, and the name the docs, `explain` and the funnel use), `fn` with
    its parameters bound, and the counter its drops count under (None: not counted).

    What it needs, which the chain gives it (`pipeline.run.chain`): `needs_query` (`fn` is a
    `QueryCandidateFn`), `needs_content` (every candidate's content is read before it: the
    embedded store reads contents late), `needs_vectors` (every candidate's stored vector, in
    `Candidate.vector`). `view`: how `explain` shows it (None: what it dropped)."""

    name: str
    fn: CandidateFn | QueryCandidateFn
    dropped_counter: str | None = None
    needs_query: bool = False
    needs_content: bool = False
    needs_vectors: bool = False
    view: StepView | None = None
    counters: tuple[str, ...] = ()
    """The counters it counts under besides `dropped_counter` (the summary prints them)."""
    about: dict[str, str] | None = None
    """What the run's manifest says of it beside its name (its model, for example)."""

    def apply(self, candidates: Sequence[Candidate], query: EmbeddedQuery | None
              ) -> list[Candidate]:
        """`fn` on one query's candidates (and its query, when it needs it).

        Raises:
            RagEvidenceError: the step needs the query and none was given.
        """
        if not self.needs_query:
            return self.fn(candidates)  # type: ignore[call-arg]
        if query is None:
            raise RagEvidenceError(f"{self.name} needs the query, and its candidates came "
                                   "without it")
        return self.fn(candidates, query)  # type: ignore[call-arg]

    @property
    def shown(self) -> StepView:
        """How `explain` shows this step."""
        return self.view if self.view is not None else dropped_view(self.name)
