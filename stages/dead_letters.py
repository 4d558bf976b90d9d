"""How a query that fails at some stage becomes a dead letter."""

from __future__ import annotations

from stages.models import DeadLetter, DeadLetterStage, Query

DEAD_LETTER = "dead_letter"
"""The tag of every stage's dead-letter output."""


def dead_letter(query: Query, stage: DeadLetterStage, error: Exception) -> DeadLetter:
    """A dead letter for `query`, with its id, line number and parsed input."""
    return DeadLetter(stage=stage, error=str(error), query_id=query.id,
                      line_number=query.line_number, input=query.model_dump(exclude_none=True))
