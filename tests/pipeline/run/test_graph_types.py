"""Our jobs skip Beam's construction-time type check to start sooner
(`beam_options.TYPE_CHECK_AT_CONSTRUCTION`); here every kind of graph they build is built and
run with the check on, so that a wiring whose types do not fit still fails a test."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import TypeOptions

from pipeline.cli.main import main
from pipeline.config import beam_options
from pipeline.config.beam_options import pipeline_options
from tests.builders import unit_vectors
from tests.pipeline.cli_runs import DIM, lines_of


@pytest.fixture
def type_checked(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[beam.Pipeline]]:
    """Turns the check on, and collects the pipelines the jobs build."""
    monkeypatch.setattr(beam_options, "TYPE_CHECK_AT_CONSTRUCTION", True)
    built: list[beam.Pipeline] = []
    original = beam.Pipeline.__init__

    def recording(self: beam.Pipeline, *args: object, **kwargs: object) -> None:
        original(self, *args, **kwargs)  # type: ignore[arg-type]
        built.append(self)

    monkeypatch.setattr(beam.Pipeline, "__init__", recording)
    yield built
    assert built, "no job built a pipeline"
    assert all(p._options.view_as(TypeOptions).pipeline_type_check for p in built)


def test_the_jobs_skip_the_check_by_default_and_a_user_option_still_passes() -> None:
    options = pipeline_options(["--type_check_strictness=ALL_REQUIRED"])
    assert options.view_as(TypeOptions).pipeline_type_check is False
    assert options.view_as(TypeOptions).type_check_strictness == "ALL_REQUIRED"


@pytest.mark.slow
def test_index_and_run_graphs_type_check(type_checked: list[beam.Pipeline],
                                         store_config: Path, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("A sentence about apples. Another about pears.")
    assert main(["index", "--docs", str(docs), "--set", f"search.embedded.path={tmp_path}/s",
                 "--set", "embedder.dim=16"]) == 0
    vectors = unit_vectors(3, dim=DIM)
    queries = tmp_path / "q.jsonl"
    queries.write_text("".join(json.dumps({"id": f"q{i}", "vector": v.tolist()}) + "\n"
                               for i, v in enumerate(vectors)) + '{"id": "t", "text": "x"}\n')
    first, second = tmp_path / "first.jsonl", tmp_path / "second.parquet"
    assert main(["run", "--config", str(store_config), "--queries", str(queries),
                 "--out", str(first), "--set", "rag.recall.mode=hybrid"]) == 0
    assert main(["run", "--config", str(store_config), "--queries", str(queries),
                 "--out", str(second), "--previous", str(first),
                 "--snapshot", str(tmp_path / "snapshot.jsonl")]) == 0
    assert len(lines_of(first)) == 4
    assert len(type_checked) == 3
