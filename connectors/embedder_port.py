"""The EmbedderPort: turns query or chunk text into vectors, and says which embedder it is."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal, Protocol, runtime_checkable

import numpy as np

from core.embedder_info import EmbedderInfo
from core.params import Bound

Purpose = Literal["query", "document"]
EMBEDDER_DIM = Bound("embedder.dim", ge=2, le=65_536)


@runtime_checkable
class EmbedderPort(Protocol):
    """Embeds texts into float32 vectors of a fixed `dimension`.

    `embed` returns an array of shape (len(texts), dimension), applying the query or document
    prefix for `purpose`. It raises `InvalidInputError` for a text it cannot embed (for
    example one with no tokens); a batch with such a text may be retried text by text.
    """

    @property
    def dimension(self) -> int: ...

    @property
    def info(self) -> EmbedderInfo: ...

    def embed(self, texts: Sequence[str], purpose: Purpose = "query") -> np.ndarray: ...


EmbedderFactory = Callable[[], EmbedderPort]
