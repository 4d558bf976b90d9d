"""examples/nightly.sh, as a newcomer's cron runs it: three nights and a quiet fourth, nothing
prepared, a document changed, one deleted and one added on the way."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # whole jobs in subprocesses

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "nightly.sh"
QUESTIONS = {"tomato": "how to grow a tomato", "bread": "bake bread with yeast",
             "bike": "fix a flat bicycle tyre"}


def _night(config: Path, docs: Path, queries: Path, runs: Path, run_id: str,
           **env: str) -> int:
    done = subprocess.run(
        ["bash", str(SCRIPT), str(config), str(docs), str(queries), str(runs), run_id],
        env={**os.environ, "RAG_EVIDENCE": f"{sys.executable} -m pipeline.cli", **env},
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    print(done.stdout[-3000:], done.stderr[-3000:])
    return done.returncode


def _lines(path: Path) -> dict[str, dict]:
    return {r["query_id"]: r for r in map(json.loads, path.read_text().splitlines())}


def _documents(night: Path) -> set[str]:
    return {block["doc_id"] for result in _lines(night / "all.jsonl").values()
            for block in result["evidence"]}


@pytest.fixture
def newcomer(tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "tomato.md").write_text("# Tomatoes\n\nGrow a tomato in full sun; water often.")
    (docs / "bread.md").write_text("# Bread\n\nBake bread with flour, water and yeast.")
    (docs / "garden.md").write_text("# Garden\n\nA garden needs water and sun.")
    queries = tmp_path / "standing.jsonl"
    queries.write_text("".join(json.dumps({"id": k, "text": q}) + "\n"
                               for k, q in QUESTIONS.items()))
    config = tmp_path / "nightly.yaml"
    config.write_text(f"search:\n  embedded:\n    path: {tmp_path / 'store'}\n"
                      "rag:\n  return-n: 3\n")
    return config, docs, queries, tmp_path / "runs"


def test_three_nights_and_a_quiet_one_work_as_written(
        newcomer: tuple[Path, Path, Path, Path]) -> None:
    config, docs, queries, runs = newcomer
    assert not runs.exists()  # the first night needs nothing prepared

    assert _night(config, docs, queries, runs, "2026-12-01") == 0
    first = runs / "2026-12-01"
    assert set(_lines(first / "changed.jsonl")) == set(QUESTIONS)  # every query is new
    assert json.loads((first / "index.json").read_text())["added"] > 0
    assert "garden.md" in _documents(first)

    (docs / "garden.md").unlink()
    (docs / "bread.md").write_text("# Bread\n\nBake sourdough bread with a starter.")
    (docs / "bike.md").write_text("# Bicycles\n\nFix a flat bicycle tyre with a patch.")
    assert _night(config, docs, queries, runs, "2026-12-02") == 0
    second = runs / "2026-12-02"
    index = json.loads((second / "index.json").read_text())
    assert index["deleted"] > 0 and index["added"] > 0 and index["updated"] > 0
    assert "garden.md" not in _documents(second)  # a deleted document is no longer served
    assert {"bread", "bike"} <= set(_lines(second / "changed.jsonl"))
    assert set(_lines(second / "all.jsonl")) == set(QUESTIONS)

    assert _night(config, docs, queries, runs, "2026-12-03") == 0
    third = runs / "2026-12-03"
    index = json.loads((third / "index.json").read_text())
    assert (index["added"], index["updated"], index["deleted"]) == (0, 0, 0)
    assert (third / "changed.jsonl").read_text() == ""  # nothing changed, nothing written
    assert _lines(third / "all.jsonl") == _lines(second / "all.jsonl")


def test_a_killed_night_is_not_the_next_nights_previous(
        newcomer: tuple[Path, Path, Path, Path]) -> None:
    """A night that did not finish leaves no manifest: the next compares with the one before."""
    config, docs, queries, runs = newcomer
    assert _night(config, docs, queries, runs, "2026-12-01") == 0
    killed = runs / "2026-12-02"
    killed.mkdir()
    (killed / "all.jsonl").write_text('{"query_id": "tomato", "evidence": []}\n')
    assert _night(config, docs, queries, runs, "2026-12-03") == 0
    assert (runs / "2026-12-03" / "changed.jsonl").read_text() == ""


def test_too_many_failed_queries_fail_the_night(
        newcomer: tuple[Path, Path, Path, Path]) -> None:
    config, docs, queries, runs = newcomer
    queries.write_text(queries.read_text() + "not json\n")
    assert _night(config, docs, queries, runs, "2026-12-01", MAX_DEAD_LETTERS="0") == 1
    assert set(_lines(runs / "2026-12-01" / "all.jsonl")) == set(QUESTIONS)


def test_a_night_that_cannot_start_exits_2(newcomer: tuple[Path, Path, Path, Path]) -> None:
    config, _, queries, runs = newcomer
    assert _night(config, runs / "no-such-docs", queries, runs, "2026-12-01") == 2


@pytest.mark.parametrize(("first", "second"), [("9", "10"), ("night one", "night two")])
def test_the_night_compared_with_is_the_last_finished_whatever_its_name(
        newcomer: tuple[Path, Path, Path, Path], first: str, second: str) -> None:
    """RUN_IDs 9 then 10 (10 sorts before 9 as text), and RUN_IDs with spaces (split into
    words by an unquoted loop): the second night compares with the first all the same."""
    config, docs, queries, runs = newcomer
    assert _night(config, docs, queries, runs, first) == 0
    assert _night(config, docs, queries, runs, second) == 0
    log = (runs / second / "nightly.log").read_text()
    assert f"comparing with {runs / first / 'all.jsonl'}" in log
    assert (runs / second / "changed.jsonl").read_text() == ""  # nothing changed


def test_a_night_run_again_keeps_what_each_attempt_indexed(
        newcomer: tuple[Path, Path, Path, Path]) -> None:
    """A killed night run again: the second attempt's index finds the changes committed by the
    first and reports none; the first attempt's counts are kept, not overwritten with zeros."""
    config, docs, queries, runs = newcomer
    assert _night(config, docs, queries, runs, "2026-12-01") == 0
    assert _night(config, docs, queries, runs, "2026-12-01") == 0
    night = runs / "2026-12-01"
    assert json.loads((night / "index.json").read_text())["added"] > 0
    assert json.loads((night / "index.2.json").read_text())["added"] == 0
