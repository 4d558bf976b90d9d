"""What an `index` did, as the report and `--summary` say it."""

from __future__ import annotations

from dataclasses import dataclass

from connectors.embedder_port import EmbedderInfo
from stages.support import counters


@dataclass(frozen=True)
class IndexSummary:
    """What an `index` did: chunks added, updated, left unchanged, deleted and failed, texts
    embedded, stale chunks kept because a failed read could have held them, seconds; whether
    the store is new, the embedder, and a line worth reporting."""

    added: int
    updated: int
    unchanged: int
    deleted: int
    failed: int
    texts_embedded: int
    kept_after_failure: int
    seconds: float
    created: bool
    embedder: EmbedderInfo | None
    note: str | None = None

    @property
    def indexed(self) -> int:
        """Chunks written (added or updated)."""
        return self.added + self.updated

    @classmethod
    def of(cls, totals: dict[str, int], seconds: float, created: bool,
           embedder: EmbedderInfo | None, note: str | None) -> IndexSummary:
        added, updated, unchanged, deleted, failed, embedded, kept = (
            totals.get(name, 0) for name in counters.INDEX_SUMMARY)
        return cls(added, updated, unchanged, deleted, failed, embedded, kept, seconds, created,
                   embedder, note)

    def to_dict(self) -> dict[str, object]:
        return {"added": self.added, "updated": self.updated, "unchanged": self.unchanged,
                "deleted": self.deleted, "failed": self.failed,
                "texts_embedded": self.texts_embedded,
                "kept_after_failure": self.kept_after_failure,
                "seconds": round(self.seconds, 3),
                "created": self.created,
                "embedder": self.embedder.to_dict() if self.embedder else None}
