"""`rag.min-score` in a run: the floor applies before TopN, and what it drops is counted."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.pipeline.cli_runs import run_cli


def test_a_run_applies_the_floor_and_counts_what_it_dropped(
        store_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = json.dumps({"id": "q", "vector": [1.0] + [0.0] * 7})
    (tmp_path / "plain").mkdir()
    (tmp_path / "floored").mkdir()
    plain, _, _ = run_cli(store_config, tmp_path / "plain", [line])
    scores = [b["score"] for b in plain[0]["evidence"]]
    assert len(scores) >= 2 and scores[0] > scores[1]
    capsys.readouterr()
    floored, dead, code = run_cli(store_config, tmp_path / "floored", [line],
                                  "--set", f"rag.min-score={(scores[0] + scores[1]) / 2}")
    assert code == 0 and dead == []
    assert [b["score"] for b in floored[0]["evidence"]] == scores[:1]
    assert re.search(r"below_min_score: [1-9]", capsys.readouterr().out)
