"""A chunk's fingerprint: what its stored vector was computed from, so that `index` embeds a
chunk again only when that changed."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from core.embedder_info import EmbedderInfo

FINGERPRINT_CHARS = 32


def chunk_fingerprint(content: str, metadata: Mapping[str, Any],
                      embedder: EmbedderInfo | None, vector: Sequence[float] | None = None
                      ) -> str:
    """SHA-256 (its first 128 bits, hex) of the text as embedded (the embedder's document
    prefix, then `content`), the metadata, and the embedder's identity; for a chunk record
    that carries its own vector (no embedder), of the vector instead of the embedder. The
    model's weights and the backend that runs it are not part of it: a store holds one model's
    vectors (another is refused unless `--rebuild`), so that chunks fingerprinted before weights
    were recorded still match, and a chunk embedded by torch is not embedded again by onnx.

    The same chunk gives the same fingerprint on any machine: metadata is canonical JSON
    (sorted keys), the vector its float32 bytes.
    """
    sha = hashlib.sha256()
    prefix = embedder.document_prefix if embedder is not None else ""
    for part in (prefix + content,
                 json.dumps(metadata, sort_keys=True, ensure_ascii=False, default=str),
                 json.dumps(embedder.model_identity() if embedder else None,
                            sort_keys=True)):
        encoded = part.encode("utf-8", "surrogatepass")
        sha.update(len(encoded).to_bytes(8, "little"))
        sha.update(encoded)
    if vector is not None:
        sha.update(np.asarray(vector, dtype="<f4").tobytes())
    return sha.hexdigest()[:FINGERPRINT_CHARS]
