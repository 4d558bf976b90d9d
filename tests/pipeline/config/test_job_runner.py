"""The runner a job runs on when it is given none: the FnApiRunner, never Beam's Prism attempt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from apache_beam.runners.portability.fn_api_runner.fn_runner import FnApiRunner
from apache_beam.runners.portability.prism_runner import PrismRunner

from pipeline.config.beam_options import job_runner, pipeline_options, runner_name
from pipeline.config.loader import load_settings
from pipeline.run.job import run_job
from tests.pipeline.cli_runs import index_store


def test_a_job_given_no_runner_runs_on_the_fn_api_runner_with_its_options() -> None:
    options = pipeline_options(["--direct_num_workers", "3"])
    runner = job_runner(options)
    assert isinstance(runner, FnApiRunner) and runner_name(options) == "FnApiRunner"
    # the workers are provided the job's options, as the DirectRunner provides them
    provided = runner._provision_info.provision_info.pipeline_options
    assert str(dict(provided)["beam:option:direct_num_workers:v1"]) == "3"


@pytest.mark.parametrize(("args", "name"), [
    (["--runner", "DirectRunner"], "DirectRunner"),
    (["--runner=PortableRunner", "--job_endpoint=embed"], "PortableRunner"),
    (["--streaming"], "DirectRunner"),
])
def test_a_job_given_a_runner_or_streaming_is_left_to_beam(args: list[str], name: str) -> None:
    options = pipeline_options(args)
    assert job_runner(options) is None and runner_name(options) == name


def test_index_and_run_given_no_runner_never_try_prism(monkeypatch: pytest.MonkeyPatch,
                                                       tmp_path: Path) -> None:
    tried: list[object] = []
    monkeypatch.setattr(PrismRunner, "run_pipeline",
                        lambda self, *args: tried.append(args) or pytest.fail("Prism tried"))
    settings = load_settings(index_store(tmp_path))
    queries, out = tmp_path / "q.jsonl", tmp_path / "out.jsonl"
    queries.write_text(json.dumps({"id": "q1", "vector": [1.0] + [0.0] * 7}) + "\n")
    summary = run_job(settings, queries_path=str(queries), out_path=str(out))
    assert tried == [] and summary.counts["results"] == 1
    assert json.loads(Path(f"{out}.manifest.json").read_text())["runner"] == "FnApiRunner"
