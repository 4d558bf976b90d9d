"""A line that once killed the whole run is that line's dead letter."""

from __future__ import annotations

import json
from pathlib import Path

from tests.pipeline.cli_runs import run_cli


def test_a_lone_surrogate_in_an_id_is_one_dead_letter_and_the_rest_is_answered(
        store_config: Path, tmp_path: Path) -> None:
    lines = [json.dumps({"id": "ok", "vector": [1.0] + [0.0] * 7}),
             '{"id": "x\\ud800", "vector": [1.0, 0, 0, 0, 0, 0, 0, 0]}',
             '{"id": "x\\ud800", "text": "again"}']
    results, dead, code = run_cli(store_config, tmp_path, lines)
    assert [r["query_id"] for r in results] == ["ok"]
    assert [(d["line_number"], d["stage"]) for d in dead] == [(2, "parse"), (3, "parse")]
    assert all("unicode" in d["error"].lower() for d in dead)
    assert code == 0
