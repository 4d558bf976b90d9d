"""The EmbedderPort: turns query or chunk text into vectors."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class EmbedderPort(Protocol):
    """Embeds texts into L2-normalised float32 vectors of a fixed `dimension`.

    `embed` returns an array of shape (len(texts), dimension). It raises
    `InvalidInputError` for a text it cannot embed (for example one with no tokens).
    """

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


EmbedderFactory = Callable[[], EmbedderPort]
