"""Directions of vectors, computed so that any finite non-zero vector keeps its direction.

A norm taken in float32 underflows to 0 for `[1e-23] * 384` and overflows to inf for
`[1e20] * 384`. Here each row is first divided by its largest component, in float64, and only
the unit result is stored as float32.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

NO_DIRECTION = "has no direction (every component is 0, or one is not finite)"


def unit_rows(rows: ArrayLike, working: type[np.floating] = np.float64
              ) -> tuple[np.ndarray, np.ndarray]:
    """Each row of `rows` scaled to length 1, as float32, and for each row whether it has a
    direction (a row without one comes back as zeros). `working` is the precision it is
    computed in: float32 is enough for a rough score (scaling by the largest component
    first keeps it from overflowing there too)."""
    matrix = np.atleast_2d(np.asarray(rows, dtype=working))
    scale = np.max(np.abs(matrix), axis=1, keepdims=True)
    usable = (np.isfinite(scale) & (scale > 0))[:, 0]
    scaled = np.where(usable[:, None], matrix / np.where(usable[:, None], scale, 1.0), 0.0)
    norms = np.linalg.norm(scaled, axis=1, keepdims=True)
    unit = scaled / np.where(usable[:, None], norms, 1.0)
    return unit.astype(np.float32), usable


def unit(vector: Sequence[float]) -> np.ndarray:
    """`vector` scaled to length 1, as float32.

    Raises:
        ValueError: it has no direction (`NO_DIRECTION`).
    """
    (row,), (usable,) = unit_rows([vector])
    if not usable:
        raise ValueError(NO_DIRECTION)
    return row
