"""`rag-evidence explain` on a terminal: one table per stage."""

from __future__ import annotations

from pipeline.run.explain import Explanation, Row


def explanation_text(explained: Explanation) -> str:
    """What each stage did to the query, as tables a person reads."""
    lines = [f"query: {explained.query.text or '(vectors)'}"
             + (f"  filters: {explained.query.filters}" if explained.query.filters else "")]
    for reason, hits in explained.retrievers.items():
        lines += _table(f"retriever {reason}: its ranked hits", hits, ("rank", "score",
                                                                       "evidence_key"))
    if explained.fused:
        lines += _table("fused (reciprocal rank fusion)", explained.fused,
                        ("rank", "score", "evidence_key", "reasons"))
    lines += _table("merged as duplicates (same evidence key)", explained.merged,
                    ("evidence_key", "score", "reasons", "into"))
    lines += _table("removed by the per-document cap", explained.capped,
                    ("rank", "doc_id", "evidence_key", "score"))
    if explained.below_min_score:
        lines += _table("removed below rag.min-score", explained.below_min_score,
                        ("rank", "evidence_key", "score"))
    lines += _table("kept by TopN", explained.kept, ("rank", "score", "evidence_key", "reasons"))
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
