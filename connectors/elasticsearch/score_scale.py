"""Every kNN score is reported on one scale, (1 + cosine) / 2, whatever similarity the index's
vector field uses. Elasticsearch's own kNN `_score` per similarity (its dense_vector docs):

    cosine              (1 + cos(q, v)) / 2                     reported as it is
    dot_product         (1 + dot(q, v)) / 2                     reported as it is
    max_inner_product   1 / (1 - dot) if dot < 0, else dot + 1  reported as (1 + dot) / 2
    l2_norm             1 / (1 + |q - v|^2)                     reported as 1 - |q - v|^2 / 4

For unit-length vectors (which dot_product requires, and which our embedders produce) every
line equals (1 + cos) / 2; each conversion keeps the order of the hits.
"""

from __future__ import annotations

from collections.abc import Callable

SIMILARITIES = ("cosine", "dot_product", "max_inner_product", "l2_norm")
DEFAULT_SIMILARITY = "cosine"
"""What Elasticsearch 8 uses for an indexed dense_vector whose mapping names none."""


def _as_is(score: float) -> float:
    return score


def _from_max_inner_product(score: float) -> float:
    dot = score - 1.0 if score >= 1.0 else 1.0 - 1.0 / score
    return (1.0 + dot) / 2.0


def _from_l2_norm(score: float) -> float:
    squared_distance = 1.0 / score - 1.0
    return 1.0 - squared_distance / 4.0


_CONVERSIONS: dict[str, Callable[[float], float]] = {
    "cosine": _as_is,
    "dot_product": _as_is,
    "max_inner_product": _from_max_inner_product,
    "l2_norm": _from_l2_norm,
}


def cosine_scale(similarity: str) -> Callable[[float], float]:
    """The conversion from Elasticsearch's kNN score for `similarity` to (1 + cos) / 2.

    Raises:
        KeyError: `similarity` is not one of SIMILARITIES.
    """
    return _CONVERSIONS[similarity]
