"""The end-of-run summary, read from the job's Beam counters."""

from __future__ import annotations

from dataclasses import dataclass

from apache_beam.metrics.metric import MetricsFilter
from apache_beam.runners.runner import PipelineResult

from stages import counters

REPORTED = counters.SUMMARY


@dataclass(frozen=True)
class RunSummary:
    counts: dict[str, int]
    seconds: float

    @property
    def balanced(self) -> bool:
        """Every input query ended as a result or a dead letter."""
        c = self.counts
        return c[counters.QUERIES] == c[counters.RESULTS] + c[counters.DEAD_LETTERS]

    def lines(self) -> list[str]:
        c = self.counts
        rate = c[counters.QUERIES] / self.seconds if self.seconds > 0 else 0.0
        verdict = "ok" if self.balanced else "MISMATCH"
        return [
            *(f"{name:>22}: {c[name]}" for name in REPORTED),
            f"{'seconds':>22}: {self.seconds:.2f}",
            f"{'queries/s':>22}: {rate:.1f}",
            f"inputs = outputs + dead letters: {c[counters.QUERIES]} = "
            f"{c[counters.RESULTS]} + {c[counters.DEAD_LETTERS]} ({verdict})",
        ]


def counter_totals(result: PipelineResult) -> dict[str, int]:
    """Sums the committed (or, where a runner has none, attempted) rag_evidence counters."""
    query = result.metrics().query(MetricsFilter().with_namespace(counters.NAMESPACE))
    totals: dict[str, int] = {}
    for counter in query["counters"]:
        value = counter.committed if counter.committed is not None else counter.attempted
        totals[counter.key.metric.name] = totals.get(counter.key.metric.name, 0) + int(value or 0)
    return totals


def summarize(result: PipelineResult, seconds: float) -> RunSummary:
    """The run's summary from its counters."""
    return RunSummary(dict.fromkeys(REPORTED, 0) | counter_totals(result), seconds)
