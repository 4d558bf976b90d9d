"""A night on an HNSW index continues from last night's state (issue 47): kept scores are
exact whatever found them, entered chunks are scored exactly, and every (1 / audit-rate)-th
continued list is searched exactly too, its recall reported apart from the graph's."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from connectors import events
from pipeline.run.continuation_plan import MAX_CHANGED_SHARE
from tests.pipeline.run import nights
from tests.pipeline.run.nights import DOCS, PER_DOC


def _config(tmp_path: Path, ef: int, audit_rate: float) -> Path:
    """A graph searched at `ef`: at 512 (with m 16) it finds every chunk of these 400, at 1
    (with m 4) it misses some."""
    config = tmp_path / "config.yaml"
    config.write_text(
        f"search:\n  embedded:\n    path: {tmp_path / 'store'}\n    index: hnsw\n"
        f"    hnsw:\n      m: {16 if ef > 100 else 4}\n      ef-construction: 64\n"
        f"      ef-search: {ef}\n      audit-rate: {audit_rate}\n"
        "embedder:\n  dim: 8\nrag:\n  retrieve-k: 10\n  return-n: 3\n")
    return config


def _two_nights(tmp_path: Path, ef: int, audit_rate: float, seed: int = 1
                ) -> tuple[Path, dict, Path, dict]:
    """Night 1 in full, 1% of the store changed, then night 2 continued and in full."""
    config = _config(tmp_path, ef, audit_rate)
    empty = nights.write(tmp_path / "empty.jsonl", [])
    rng = np.random.default_rng(seed)
    records = nights.random_records(rng, DOCS * PER_DOC, start=0)
    nights.index(config, nights.write(tmp_path / "chunks1.jsonl", records))
    queries = nights.write(tmp_path / "q.jsonl", nights.standing_queries(rng, 60, "q"))
    first, _ = nights.run(config, queries, tmp_path / "n1", empty)
    each = int(MAX_CHANGED_SHARE * len(records)) // 3
    nights.index(config, nights.write(tmp_path / "chunks2.jsonl",
                                      nights.changed_records(rng, records, each)))
    continued, counts = nights.run(config, queries, tmp_path / "n2", first)
    full, full_counts = nights.run(config, queries, tmp_path / "full", empty)
    return continued, counts, full, full_counts


def test_an_hnsw_night_continues_and_equals_a_full_one_where_the_graph_misses_nothing(
        tmp_path: Path) -> None:
    # ef 512 over 400 chunks: the graph finds every chunk, so both nights are exact
    continued, counts, full, _ = _two_nights(tmp_path, ef=512, audit_rate=1.0)
    assert nights.by_id(continued) == nights.by_id(full)
    assert counts["queries_continued"] > 40 and counts["continued_unchanged"] > 0
    assert counts["full_not_continuable"] == 0
    audited = counts[events.HNSW_CONTINUED_AUDITED]
    # every continued list without filters is audited: filtered ones are searched exactly
    assert audited >= counts["queries_continued"] - 12
    assert counts[events.HNSW_CONTINUED_FOUND] == counts[events.HNSW_CONTINUED_EXPECTED] > 0
    manifest = json.loads(Path(f"{continued}.manifest.json").read_text())
    assert manifest["hnsw_recall"]["continued"] == 1.0
    assert manifest["hnsw_recall"]["continued_lists_audited"] == audited


def test_a_continued_hnsw_list_keeps_last_nights_misses_and_its_audit_says_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # ef 1 over a sparse graph (m 4) misses chunks: night 1 kept lists without them
    _, counts, _, full_counts = _two_nights(tmp_path, ef=1, audit_rate=1.0, seed=2)
    found, expected = (counts[events.HNSW_CONTINUED_FOUND],
                       counts[events.HNSW_CONTINUED_EXPECTED])
    assert counts["queries_continued"] > 0 and 0 < found < expected
    said = capsys.readouterr().out
    assert f"hnsw recall@k continued: {found / expected:.3f}" in said
    # the graph's own audit counts only the queries the graph answered
    assert counts.get(events.HNSW_AUDITED, 0) < full_counts[events.HNSW_AUDITED]


def test_an_audit_rate_of_zero_audits_no_continued_list(tmp_path: Path) -> None:
    _, counts, _, _ = _two_nights(tmp_path, ef=512, audit_rate=0.0)
    assert counts["queries_continued"] > 40
    assert counts.get(events.HNSW_CONTINUED_AUDITED, 0) == 0


def test_a_flat_night_audits_nothing_it_continues(tmp_path: Path) -> None:
    config = _config(tmp_path, ef=8, audit_rate=1.0)
    config.write_text(config.read_text().replace("index: hnsw", "index: flat"))
    rng = np.random.default_rng(3)
    records = nights.random_records(rng, DOCS * PER_DOC, start=0)
    nights.index(config, nights.write(tmp_path / "chunks1.jsonl", records))
    queries = nights.write(tmp_path / "q.jsonl", nights.standing_queries(rng, 20, "q"))
    empty = nights.write(tmp_path / "empty.jsonl", [])
    first, _ = nights.run(config, queries, tmp_path / "n1", empty)
    nights.index(config, nights.write(tmp_path / "chunks2.jsonl",
                                      nights.changed_records(rng, records, 3)))
    continued, counts = nights.run(config, queries, tmp_path / "n2", first)
    assert counts["queries_continued"] > 0
    assert counts.get(events.HNSW_CONTINUED_AUDITED, 0) == 0
    assert "hnsw_recall" not in json.loads(Path(f"{continued}.manifest.json").read_text())
