"""Paired significance of a difference between two configs on the same judged queries: a
two-sided paired randomization (sign-flip permutation) test on the mean per-query difference.

Under the null hypothesis that the two configs are exchangeable, each query's difference is as
likely to have the other sign; the p-value is the share of `SAMPLES` random sign flips whose
mean difference is at least as far from zero as the observed one, counting the observed one
(so it is never 0, and exactly 1 when every query ties). The flips come from a generator seeded
with `SEED`: the same inputs give the same p-value on every run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

SAMPLES = 10_000
SEED = 20_261_206
SIGNIFICANT = 0.05
"""The level below which `eval` marks a difference as significant."""
_BLOCK = 1_000
_EQUAL = 1e-12
"""Differences this close count as equal (sums of floats in another order)."""


@dataclass(frozen=True)
class PairedTest:
    """The test of one config against the first, over the judged queries: its p-value and how
    many queries scored higher, lower and the same."""

    p_value: float
    improved: int
    worsened: int
    tied: int

    @property
    def significant(self) -> bool:
        return self.p_value < SIGNIFICANT


def paired_randomization(first: Sequence[float], other: Sequence[float],
                         samples: int = SAMPLES, seed: int = SEED) -> PairedTest:
    """Tests `other` against `first`, per-query scores of the same queries in the same order.

    Raises:
        ValueError: the two have different lengths.
    """
    if len(first) != len(other):
        raise ValueError(f"paired scores need the same queries: {len(first)} against "
                         f"{len(other)}")
    differences = np.asarray(other, dtype=np.float64) - np.asarray(first, dtype=np.float64)
    improved = int(np.sum(differences > _EQUAL))
    worsened = int(np.sum(differences < -_EQUAL))
    tied = len(differences) - improved - worsened
    if improved + worsened == 0:
        return PairedTest(1.0, 0, 0, tied)
    observed = abs(float(differences.mean()))
    rng = np.random.default_rng(seed)
    as_far = 0
    for start in range(0, samples, _BLOCK):
        signs = rng.choice((-1.0, 1.0), size=(min(_BLOCK, samples - start), len(differences)))
        as_far += int(np.sum(np.abs(signs @ differences) / len(differences) >= observed - _EQUAL))
    return PairedTest((as_far + 1) / (samples + 1), improved, worsened, tied)
