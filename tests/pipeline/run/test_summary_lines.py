"""What the summary prints: an HNSW calibration that answered exactly is said even with no
query audited; the balance line's verdict says only that the counts balance."""

from __future__ import annotations

from connectors import events
from pipeline.run.summary import REPORTED, RunSummary
from stages.support import counters


def _summary(**extra: int) -> RunSummary:
    counts = dict.fromkeys(REPORTED, 0) | {counters.QUERIES: 4, counters.RESULTS: 3,
                                           counters.DEAD_LETTERS: 1} | extra
    return RunSummary(counts, 1.0)


def test_a_calibration_that_chose_exact_search_is_said_without_an_audit() -> None:
    lines = _summary(**{events.HNSW_SETTLED: 2, events.HNSW_EF: 2 * 512,
                        events.HNSW_EXACT: 2}).lines()
    assert any("hnsw ef-search (auto)" in line and "exact search instead in 2 of 2" in line
               for line in lines)
    assert not any("hnsw recall@k" in line for line in lines)


def test_a_run_with_failures_is_balanced_not_ok() -> None:
    assert _summary().lines()[-1] == "inputs = outputs + dead letters: 4 = 3 + 1 (balanced)"
