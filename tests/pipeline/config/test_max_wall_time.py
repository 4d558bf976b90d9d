"""`job.max-wall-time` (`run --max-wall-time`): a job still running after it is cancelled,
commits nothing and exits 3; a job within it runs as without it; the value is parsed, not
guessed."""

from __future__ import annotations

import time
from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import GoogleCloudOptions

from core.errors import ConfigError, WallTimeExceededError
from pipeline.cli.main import main
from pipeline.config.beam_options import job_pipeline, pipeline_options
from pipeline.config.heap import run_to_completion
from pipeline.config.loader import load_settings
from tests.pipeline.cli_runs import vector_run


def _sleeping(seconds: float) -> beam.Pipeline:
    pipeline = job_pipeline(pipeline_options([]))
    _ = pipeline | beam.Create([seconds]) | beam.Map(time.sleep)
    return pipeline


def test_a_local_job_past_its_wall_time_is_stopped_and_named() -> None:
    started = time.monotonic()
    with pytest.raises(WallTimeExceededError, match=r"max-wall-time=1 s"):
        run_to_completion(_sleeping(60), max_wall_time=1)
    assert time.monotonic() - started < 30  # not the 60 s the job would take


def test_a_job_within_its_wall_time_finishes_as_without_one() -> None:
    result = run_to_completion(_sleeping(0), max_wall_time=60)
    assert result.state == "DONE"


@pytest.mark.parametrize(("written", "seconds"), [("90", 90), ("90s", 90), ("1.5m", 90),
                                                  ("2h", 7200), ("0.5", 0.5)])
def test_a_wall_time_is_read_in_seconds_minutes_or_hours(written: str, seconds: float) -> None:
    assert load_settings(overrides=[f"job.max-wall-time={written}"]).job.max_wall_time == seconds


@pytest.mark.parametrize("written", ["0", "-1", "abc", "1d", "true", "inf", "nan", "''"])
def test_a_wall_time_that_is_no_positive_duration_is_refused(written: str) -> None:
    with pytest.raises(ConfigError, match="job.max-wall-time"):
        load_settings(overrides=[f"job.max-wall-time={written}"])


def test_run_within_its_max_wall_time_writes_its_results(
        store_config: Path, tmp_path: Path) -> None:
    argv, out = vector_run(store_config, tmp_path, "--max-wall-time", "10m")
    assert main(argv) == 0
    assert Path(f"{out}.manifest.json").exists()


def test_run_past_its_max_wall_time_exits_3_and_commits_nothing(
        store_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv, out = vector_run(store_config, tmp_path, "--max-wall-time", "0.05", queries=2000)
    assert main(argv) == 3  # Beam alone starts slower
    error = capsys.readouterr().err
    assert "max-wall-time=0.05 s" in error and "nothing was committed" in error
    assert not Path(f"{out}.manifest.json").exists()


@pytest.mark.parametrize(("args", "named"), [
    (["--runner", "FlinkRunner", "--flink_master", "localhost:8081"], True),
    (["--runner", "FlinkRunner", "--flink_master", "localhost:8081", "--job_name", "mine"],
     False),
    (["--runner", "FlinkRunner"], False),  # [auto]: no cluster to cancel on
    ([], False)])
def test_a_job_on_a_flink_cluster_gets_a_name_to_be_cancelled_by(args: list[str],
                                                                  named: bool) -> None:
    options = pipeline_options(args)
    job_pipeline(options)
    name = options.view_as(GoogleCloudOptions).job_name
    assert (name or "").startswith("rag-evidence-") == named
    if "--job_name" in args:
        assert name == "mine"
