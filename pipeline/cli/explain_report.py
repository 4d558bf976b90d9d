"""`rag-evidence explain` on a terminal: one table per retriever and per step of the chain (as
the step's view declares it), then the projection."""

from __future__ import annotations

from pipeline.run.explain import Explanation, Row


def explanation_text(explained: Explanation) -> str:
    """What each stage did to the query, as tables a person reads."""
    lines = [f"query: {explained.query.text or '(vectors)'}"
             + (f"  filters: {explained.query.filters}" if explained.query.filters else "")]
    for reason, hits in explained.retrievers.items():
        lines += _table(f"retriever {reason}: its ranked hits", hits, ("rank", "score",
                                                                       "evidence_key"))
    for step in explained.steps:  # the run's chain, each step as its view shows it
        if step.rows or step.view.shown_empty:
            lines += _table(step.view.title, step.rows, step.view.columns)
    if explained.result is not None:
        projected = [{"rank": n, "document_id": p.document_id, "source": p.source,
                      "content": " ".join(p.content.split())[:60]}
                     for n, p in enumerate(explained.result.projected, start=1)]
        lines += _table("projected for the Agent", projected,
                        ("rank", "document_id", "source", "content"))
    return "\n".join(lines)


def _table(title: str, rows: list[Row], columns: tuple[str, ...]) -> list[str]:
    lines = ["", f"{title} ({len(rows)})"]
    if not rows:
        return [*lines, "  (none)"]
    cells = [[_cell(row.get(column)) for column in columns] for row in rows]
    widths = [max(len(column), *(len(c[i]) for c in cells)) for i, column in enumerate(columns)]
    for row in [list(columns), *cells]:
        lines.append(("  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
                     .rstrip())
    return lines


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return "" if value is None else str(value)
