"""A runner without metrics still gets a true summary: the counts come from the job's files."""

from __future__ import annotations

from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.runners.runner import PipelineResult, PipelineState

from pipeline.io.query_source import query_source
from pipeline.io.result_sink import ElasticsearchResults
from pipeline.io.run_io import RunIO
from pipeline.run.summary import summarize
from stages.support import counters
from stages.support.counters import totals as counter_totals


class _NoMetricsResult(PipelineResult):
    """What a runner that does not implement metrics returns (Beam's base class raises)."""

    def __init__(self) -> None:
        super().__init__(PipelineState.DONE)


class _ForeignMetricsResult(PipelineResult):
    """A runner whose metrics hold nothing of ours."""

    def __init__(self, result: PipelineResult) -> None:
        super().__init__(PipelineState.DONE)
        self._result = result

    def metrics(self) -> object:
        return self._result.metrics()


@pytest.fixture
def files(tmp_path: Path) -> tuple[str, str, str]:
    queries, out, dead = tmp_path / "q.jsonl", tmp_path / "out.jsonl", tmp_path / "dead.jsonl"
    queries.write_text('{"id": "a"}\n\n{"id": "b"}\n{"id": "c"}\n')
    out.write_text('{"id": "a"}\n{"id": "c"}\n')
    dead.write_text('{"query_id": "b"}\n')
    return str(queries), str(out), str(dead)


def test_a_runner_without_metrics_gets_counts_from_the_files(
        files: tuple[str, str, str], caplog: pytest.LogCaptureFixture) -> None:
    summary = summarize(_NoMetricsResult(), 1.0, lambda: RunIO.parse(*files).counts())
    assert summary.counts == {counters.QUERIES: 3, counters.RESULTS: 2, counters.DEAD_LETTERS: 1}
    assert summary.balanced and not summary.from_metrics
    lines = summary.lines()
    assert lines[0].endswith("queries: 3")
    assert any(line.endswith("candidates: n/a (the runner reports no metrics)")
               for line in lines)
    assert "the runner reported no metrics; the summary counts the job's files" in caplog.text


def test_metrics_without_our_counters_also_fall_back(files: tuple[str, str, str]) -> None:
    pipeline = beam.Pipeline()
    _ = pipeline | beam.Create([1])
    summary = summarize(_ForeignMetricsResult(pipeline.run()), 1.0,
                        lambda: RunIO.parse(*files).counts())
    assert summary.counts[counters.RESULTS] == 2 and not summary.from_metrics


def test_results_sent_to_elasticsearch_are_the_queries_not_dead_lettered(
        files: tuple[str, str, str]) -> None:
    queries, _, dead = files
    io = RunIO(query_source(queries), ElasticsearchResults("es://x"), dead)
    assert io.counts()[counters.RESULTS] == 2


def test_an_empty_input_is_zeros_without_a_warning(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    summary = summarize(_NoMetricsResult(), 1.0,
                        RunIO.parse(str(empty), str(empty), str(tmp_path / "none")).counts)
    assert summary.counts[counters.QUERIES] == 0 and summary.balanced
    assert "no metrics" not in caplog.text


def test_counter_totals_of_a_runner_without_metrics_are_empty() -> None:
    assert counter_totals(_NoMetricsResult()) == {}
