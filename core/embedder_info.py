"""What an embedder is: the identity a store records and a run compares (`EmbedderInfo`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

_OPTIONAL = ("weights", "backend", "checkpoint")


@dataclass(frozen=True)
class EmbedderInfo:
    """What a store records about the embedder that built it, and what a run compares.

    Two embedders are interchangeable when every field is equal (see `same_as`): the same
    model with another prefix puts queries and chunks in different places. `weights` is the
    fingerprint by content of the files the backend computes with (see
    `connectors.embedders.model_fingerprint`): a model's name is its folder's, and two folders
    of one name may hold different models. `backend` runs the model (`onnx`, `torch`; None for
    the hashing embedder and for what was recorded before backends were). `checkpoint` is the
    fingerprint of the model those weights are a rendition of, when it is not the weights
    themselves (the packaged int8 ONNX all-MiniLM-L6-v2 names the original's).
    """

    kind: str
    model: str | None
    dimension: int
    query_prefix: str = ""
    document_prefix: str = ""
    normalize: bool = True
    weights: str | None = None
    backend: str | None = None
    checkpoint: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Every field; `weights`, `backend` and `checkpoint` only when known (so what was
        recorded without them reads the same)."""
        fields = asdict(self)
        for optional in _OPTIONAL:
            if fields[optional] is None:
                del fields[optional]
        return fields

    def model_identity(self) -> dict[str, Any]:
        """What puts vectors in their places: every field but the weights' rendition and the
        backend that runs them."""
        return replace(self, weights=None, backend=None, checkpoint=None).to_dict()

    def same_as(self, other: EmbedderInfo | None) -> bool:
        """Whether `other` is this embedder: the same model identity, and the same model by
        content when both fingerprints are known (a store recorded before fingerprints were has
        none: its next commit records it). One model run by another backend is the same (its
        `checkpoint` names the other's weights), an int8 rendition included: their vectors
        agree to a cosine of 0.998 or more."""
        if other is None or self.model_identity() != other.model_identity():
            return False
        if None in (self.weights, other.weights):
            return True
        return bool({self.weights, self.checkpoint} & {other.weights, other.checkpoint} - {None})

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
        if self.backend:
            parts.append(f"backend {self.backend}")
        if self.weights:
            parts.append(f"weights {self.weights}")
        return f"{parts[0]} ({', '.join(parts[1:])})"
