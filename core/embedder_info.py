"""What an embedder is: the identity a store records and a run compares (`EmbedderInfo`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any


@dataclass(frozen=True)
class EmbedderInfo:
    """What a store records about the embedder that built it, and what a run compares.

    Two embedders are interchangeable when every field is equal (see `same_as`): the same
    model with another prefix puts queries and chunks in different places. `weights` is the
    model's fingerprint by content (see `connectors.embedders.model_fingerprint`): a model's
    name is its folder's, and two folders of one name may hold different models.
    """

    kind: str
    model: str | None
    dimension: int
    query_prefix: str = ""
    document_prefix: str = ""
    normalize: bool = True
    weights: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Every field; `weights` only when known (so what was recorded without it reads the
        same)."""
        fields = asdict(self)
        if self.weights is None:
            del fields["weights"]
        return fields

    def same_as(self, other: EmbedderInfo | None) -> bool:
        """Whether `other` is this embedder: every field equal, the weights' fingerprints too
        when both are known (a store recorded before fingerprints were has none: its next
        commit records it)."""
        if other is None:
            return False
        weights = (self.weights if None not in (self.weights, other.weights)
                   else other.weights)
        return replace(self, weights=weights) == other

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EmbedderInfo:
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**known)

    def describe(self) -> str:
        """A one-line description for messages: kind, model, dimension and prefixes."""
        parts = [self.kind + (f" {self.model}" if self.model else ""), f"{self.dimension} dims"]
        if self.query_prefix or self.document_prefix:
            parts.append(f"prefixes {self.query_prefix!r}/{self.document_prefix!r}")
        if not self.normalize:
            parts.append("not normalized")
        if self.weights:
            parts.append(f"weights {self.weights}")
        return f"{parts[0]} ({', '.join(parts[1:])})"
