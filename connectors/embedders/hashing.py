"""A dependency-free, deterministic embedder: signed feature hashing of words and bigrams."""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Sequence

import numpy as np

from connectors.embedder_port import EMBEDDER_DIM, EmbedderInfo, Purpose
from core.errors import InvalidInputError

KIND = "hashing"
DEFAULT_DIMENSION = 384
_TOKEN = re.compile(r"[a-z0-9]+")
_STOPWORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "by", "do", "does", "for", "from", "how", "i",
    "in", "is", "it", "its", "of", "on", "or", "that", "the", "this", "to", "what", "when",
    "which", "with", "you", "your",
})


class HashingEmbedder:
    """Feature-hashes lower-cased word unigrams and bigrams (no stop words) into buckets.

    The same text always gives the same vector, on any machine and Python version
    (blake2b, not Python's salted `hash`). Vectors are L2-normalised. Lexical, not semantic:
    the fallback when no sentence-embedding model is installed.

    >>> HashingEmbedder(64).embed(["open a file"]).shape
    (1, 64)
    """

    def __init__(self, dimension: int = DEFAULT_DIMENSION) -> None:
        self._dimension = EMBEDDER_DIM.check(dimension)

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def info(self) -> EmbedderInfo:
        return EmbedderInfo(KIND, None, self._dimension)

    def embed(self, texts: Sequence[str], purpose: Purpose = "query") -> np.ndarray:
        matrix = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            features = _features(text)
            if not features:
                raise InvalidInputError("text", text, "has no words to embed")
            for feature in features:
                bucket, sign = self._bucket(feature)
                matrix[row, bucket] += sign
            matrix[row] /= np.linalg.norm(matrix[row])
        return matrix

    def _bucket(self, feature: str) -> tuple[int, float]:
        digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        return value % self._dimension, 1.0 if (value >> 63) & 1 else -1.0


def _features(text: str) -> list[str]:
    words = [w for w in _TOKEN.findall(text.lower()) if w not in _STOPWORDS]
    return words + [f"{a} {b}" for a, b in itertools.pairwise(words)]
