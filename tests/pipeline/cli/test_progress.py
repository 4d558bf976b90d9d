from __future__ import annotations

import logging
import re
from functools import partial
from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from connectors.embedders.hashing import HashingEmbedder
from pipeline.cli.log_setup import with_worker_log_level
from pipeline.cli.main import main
from stages.support import progress
from stages.support.progress import LogProgress, Progress
from stages.support.shared_embedder import SharedEmbedder
from tests.builders import chunk_records, unit_vectors


def test_progress_passes_elements_through_and_logs_a_running_count(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="rag_evidence.progress"), TestPipeline() as p:
        out = p | beam.Create([1, 2, 3]) | LogProgress(every_seconds=0.0)
        assert_that(out, equal_to([1, 2, 3]))
    assert "progress: 3 queries answered by this worker" in caplog.text


def test_on_a_terminal_progress_is_a_bar_with_the_count_rate_and_time_left(
        capsys: pytest.CaptureFixture[str]) -> None:
    progress = Progress("texts embedded", total=10, terminal=True)
    progress.add(4)
    progress.close()
    bar = capsys.readouterr().err
    assert "texts embedded:  40%" in bar and "4/10" in bar and "<" in bar  # elapsed<left


def _run_cli(store_config: Path, tmp_path: Path, *flags: str) -> None:
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"id": "q", "text": "content five"}\n')
    code = main([*flags, "run", "--config", str(store_config), "--queries", str(queries),
                 "--out", str(tmp_path / "out.jsonl")])
    assert code == 0


def test_a_cli_run_shows_progress_and_v_shows_this_packages_info(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress, "EVERY_SECONDS", 0.0)
    records = chunk_records(unit_vectors(8, dim=8))
    chunks = tmp_path / "chunks.jsonl"
    chunks.write_text("".join(r.model_dump_json() + "\n" for r in records))
    config = tmp_path / "config.yaml"
    config.write_text(f"search:\n  embedded:\n    path: {tmp_path / 'store'}\n"
                      "embedder:\n  dim: 8\n")
    assert main(["index", "--config", str(config), "--chunks", str(chunks)]) == 0
    capsys.readouterr()

    _run_cli(config, tmp_path)
    quiet = capsys.readouterr().err
    assert "progress: 1 queries answered" in quiet
    assert "INFO pipeline.run.job" not in quiet and "Deleting" not in quiet

    _run_cli(config, tmp_path, "-v")
    verbose = capsys.readouterr().err
    assert "INFO pipeline.run.job: run:" in verbose


def test_workers_log_errors_only_unless_v_or_the_user_says_otherwise() -> None:
    assert with_worker_log_level([], False) == ["--default_sdk_harness_log_level=ERROR"]
    assert with_worker_log_level(["--x=1"], True) == [
        "--x=1", "--default_sdk_harness_log_level=WARNING"]
    assert with_worker_log_level(["--default_sdk_harness_log_level=DEBUG"], False) == [
        "--default_sdk_harness_log_level=DEBUG"]


@pytest.mark.parametrize("position", ["before", "after"])
def test_verbose_is_accepted_before_or_after_the_command(tmp_path: Path, position: str) -> None:
    command = ["corpus", str(tmp_path / "corpus")]
    argv = ["-v", *command] if position == "before" else [*command, "-v"]
    assert main(argv) == 0
    assert logging.getLogger("pipeline").level == logging.INFO
    main(command)
    assert logging.getLogger("pipeline").level == logging.WARNING


def test_index_shows_the_texts_embedded_out_of_those_to_embed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress, "EVERY_SECONDS", 0.0)
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("a.md", "b.md", "c.md"):
        (docs / name).write_text(f"The document {name} says something.")
    assert main(["index", "--docs", str(docs), "--set",
                 f"search.embedded.path={tmp_path / 'store'}", "--set",
                 "embedder.batch-size=1"]) == 0
    assert "progress: 3 of 3 texts embedded by this worker" in capsys.readouterr().err


def test_loading_a_model_is_said_as_it_starts_and_ends(
        caplog: pytest.LogCaptureFixture) -> None:
    shared = SharedEmbedder(partial(HashingEmbedder, 8), "a tag of this test", "my-model")
    with caplog.at_level(logging.INFO, logger="rag_evidence.progress"):
        shared.acquire()
    assert "loading the model my-model (once per worker process)..." in caplog.text
    assert re.search(r"model my-model loaded in \d+\.\d s", caplog.text)
