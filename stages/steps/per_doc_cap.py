"""PerDocCap: at most N candidates per document id, the top-ranked ones."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from core.params import Bound
from stages.candidate_step import CandidateStep
from stages.models import Candidate
from stages.ranking import ranked
from stages.step_views import StepView, dropped_rows
from stages.support.counters import CAPPED

MAX_CHUNKS_PER_DOCUMENT = Bound("rag.max-chunks-per-document", ge=1)


CAPPED_VIEW = StepView("removed by the per-document cap",
                       ("rank", "doc_id", "evidence_key", "score"),
                       dropped_rows, "capped")
"""How `explain` shows the step."""


def cap_chunks_per_document(candidates: Sequence[Candidate], max_per_doc: int) -> list[Candidate]:
    """Keeps the top `max_per_doc` candidates of each `doc_id`, in ranking order.

    Candidates without a `doc_id` are not capped.

    Raises:
        OutOfBoundsError: `max_per_doc` is below 1 (a ValueError).
    """
    MAX_CHUNKS_PER_DOCUMENT.check(max_per_doc)
    taken: dict[str, int] = {}
    kept: list[Candidate] = []
    for candidate in ranked(candidates):
        doc_id = candidate.doc_id
        if doc_id is not None:
            count = taken.get(doc_id, 0)
            if count >= max_per_doc:
                continue
            taken[doc_id] = count + 1
        kept.append(candidate)
    return kept


def per_doc_cap(max_per_doc: int = 2) -> CandidateStep:
    """The step that keeps at most `max_per_doc` chunks of each document, per query.

    Usage::

        capped = candidates | CandidateStage(per_doc_cap(max_per_doc=2))

    Raises:
        OutOfBoundsError: `max_per_doc` is below 1 (a ValueError).
    """
    MAX_CHUNKS_PER_DOCUMENT.check(max_per_doc)
    return CandidateStep("PerDocCap", partial(cap_chunks_per_document, max_per_doc=max_per_doc),
                         CAPPED, view=CAPPED_VIEW)
