"""`eval`'s paired significance test (issue 33): p = 1 against itself, small for a large real
difference, large for noise, and the same on every run."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.eval.significance import paired_randomization


def test_a_config_against_itself_gives_p_one() -> None:
    scores = [0.1, 0.5, 0.9, 1.0, 0.0]
    test = paired_randomization(scores, list(scores))
    assert (test.p_value, test.improved, test.worsened, test.tied) == (1.0, 0, 0, 5)
    assert not test.significant


def test_a_large_real_difference_is_significant() -> None:
    rng = np.random.default_rng(1)
    first = rng.uniform(0.2, 0.6, size=40)
    other = first + rng.uniform(0.1, 0.3, size=40)  # better on every query
    test = paired_randomization(first.tolist(), other.tolist())
    assert test.p_value < 0.001 and test.significant
    assert (test.improved, test.worsened, test.tied) == (40, 0, 0)


def test_noise_is_not_significant() -> None:
    rng = np.random.default_rng(2)
    first = rng.uniform(0, 1, size=40)
    other = first + rng.normal(0, 0.05, size=40)  # no shift, only noise
    assert paired_randomization(first.tolist(), other.tolist()).p_value > 0.05


def test_one_query_that_moved_is_counted_and_far_from_significant() -> None:
    test = paired_randomization([0.5] * 10, [0.5] * 9 + [0.6])
    assert (test.improved, test.worsened, test.tied) == (1, 0, 9)
    assert test.p_value > 0.5  # a single flip is as likely as not


def test_the_p_value_is_the_same_on_every_run_and_symmetric() -> None:
    first, other = [0.2, 0.4, 0.5, 0.9, 0.3, 0.7], [0.3, 0.5, 0.4, 1.0, 0.5, 0.8]
    one = paired_randomization(first, other)
    assert one == paired_randomization(first, other)
    assert paired_randomization(other, first).p_value == pytest.approx(one.p_value)


def test_scores_of_other_queries_are_refused() -> None:
    with pytest.raises(ValueError, match="same queries"):
        paired_randomization([0.1, 0.2], [0.1])
