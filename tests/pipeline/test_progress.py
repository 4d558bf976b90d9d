from __future__ import annotations

import logging

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from pipeline.progress import LogProgress


def test_progress_passes_elements_through_and_logs_a_running_count(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="rag_evidence.progress"), TestPipeline() as p:
        out = p | beam.Create([1, 2, 3]) | LogProgress(every_seconds=0.0)
        assert_that(out, equal_to([1, 2, 3]))
    assert "progress: 3 queries answered by this worker" in caplog.text
