"""A run with dead letters cannot be read as a clean run: `--max-dead-letters` fails it (its
results written), the summary's last line counts the failures, and its verdict says only that
the counts balance."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.errors import ConfigError
from pipeline.cli.main import main
from pipeline.run.dead_letter_limit import DeadLetterLimit
from tests.pipeline.cli_runs import index_store


@pytest.mark.parametrize(("text", "dead", "queries", "exceeded"), [
    ("2", 2, 10, False), ("2", 3, 10, True), ("0", 1, 10, True),
    ("20%", 2, 10, False), ("20%", 3, 10, True), ("0%", 0, 0, False), ("12.5%", 1, 8, False)])
def test_a_limit_is_a_count_or_a_share(text: str, dead: int, queries: int,
                                       exceeded: bool) -> None:
    assert DeadLetterLimit.parse(text).exceeded(dead, queries) is exceeded


@pytest.mark.parametrize("text", ["-1", "ten", "101%", "%", "5 %x"])
def test_a_malformed_limit_names_the_option_and_value(text: str) -> None:
    with pytest.raises(ConfigError, match=rf"--max-dead-letters={text!r}.*count.*share"):
        DeadLetterLimit.parse(text)


def _run(tmp_path: Path, *extra: str) -> int:
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"id": "a", "text": "content 1"}\nnot json\n'
                       '{"id": "b", "text": "content 2"}\n{"id": "c", "txt": "typo"}\n')
    return main(["run", "--config", str(index_store(tmp_path)), "--queries",
                 str(queries), "--out", str(tmp_path / "out.jsonl"), *extra])


def test_too_many_dead_letters_exit_1_with_the_results_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(tmp_path, "--max-dead-letters", "1") == 1
    captured = capsys.readouterr()
    assert "2 dead letters of 4 queries exceed --max-dead-letters 1" in captured.err
    results = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert sorted(r["query_id"] for r in results) == ["a", "b"]
    assert Path(f"{tmp_path / 'out.jsonl'}.manifest.json").exists()


def test_within_the_limit_the_run_exits_0_and_its_last_line_counts_the_failures(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(tmp_path, "--max-dead-letters", "50%") == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert "inputs = outputs + dead letters: 4 = 2 + 2 (balanced)" in out
    assert out[-1].startswith("dead letters: ") and out[-1].endswith("(2 of 4 queries failed)")
    assert not any("evidence_unchanged" in line for line in out)  # no --previous, not printed
