"""ScoreFloor: `rag.min-score` drops weak candidates before TopN, and is off by default."""

from __future__ import annotations

import pytest

from pipeline.config.loader import load_settings
from stages.steps.score_floor import above_floor
from tests.builders import chunk


def test_candidates_below_the_floor_are_dropped_and_the_rest_keep_their_order() -> None:
    kept = above_floor([chunk("a", 0, 0.9), chunk("b", 0, 0.4), chunk("c", 0, 0.6)], 0.6)
    assert [c.evidence_key for c in kept] == ["a#chunk-0", "c#chunk-0"]


def test_the_floor_is_off_by_default() -> None:
    assert load_settings().rag.min_score is None


def test_a_floor_that_is_not_a_finite_number_is_a_config_error() -> None:
    with pytest.raises(Exception, match="rag.min-score"):
        load_settings(overrides=["rag.min-score=.inf"])
