"""A job leaves what the process held before it out of the collector's passes, and gives the
heap back as it was, whatever happens."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import apache_beam as beam
import pytest

from pipeline.config.beam_options import job_pipeline, pipeline_options
from pipeline.config.heap import frozen_heap, run_to_completion
from pipeline.config.loader import load_settings
from pipeline.run.job import run_job


def test_the_heap_is_frozen_inside_and_unfrozen_after() -> None:
    held = [{"before": i} for i in range(1000)]
    with frozen_heap():
        assert gc.get_freeze_count() >= len(held)
    assert gc.get_freeze_count() == 0


def test_the_heap_is_unfrozen_when_the_job_fails() -> None:
    with pytest.raises(RuntimeError, match="job failed"), frozen_heap():
        raise RuntimeError("job failed")
    assert gc.get_freeze_count() == 0


def test_a_run_leaves_the_heap_unfrozen(store_config: Path, tmp_path: Path) -> None:
    queries, out = tmp_path / "q.jsonl", tmp_path / "out.jsonl"
    queries.write_text(json.dumps({"id": "q1", "vector": [1.0] + [0.0] * 7}) + "\n")
    summary = run_job(load_settings(store_config), queries_path=str(queries),
                      out_path=str(out))
    assert summary.counts["results"] == 1 and gc.get_freeze_count() == 0


def _frozen_count(_: object) -> int:
    return gc.get_freeze_count()


def test_a_job_pipeline_runs_with_the_heap_frozen(tmp_path: Path) -> None:
    out = tmp_path / "counts"
    pipeline = job_pipeline(pipeline_options([]))
    (pipeline | beam.Create([1]) | beam.Map(_frozen_count)
     | beam.Map(lambda n: out.write_text(str(n))))
    run_to_completion(pipeline)
    assert int(out.read_text()) > 0 and gc.get_freeze_count() == 0
