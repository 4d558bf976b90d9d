"""The end-of-run summary, read from the job's Beam counters, or from its files where the runner
reports no metrics."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from apache_beam.runners.runner import PipelineResult

from connectors import events
from stages.support import counters

REPORTED = counters.SUMMARY
"""What every run reports; its backend adds its own counters (`Backend.counters`)."""
COMPARED = (counters.EVIDENCE_UNCHANGED, counters.EVIDENCE_CHANGED, counters.EVIDENCE_NEW,
            counters.PREVIOUS_GONE, *counters.CONTINUATION)
"""What only a run with `--previous` counts: printed only then (`--summary` keeps them all)."""
_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunSummary:
    counts: dict[str, int]
    seconds: float
    from_metrics: bool = True
    reported: tuple[str, ...] = REPORTED
    """The counters the summary prints, in order."""
    answered_in_full: str | None = None
    """With `--previous`: why no query was continued from PREV's state (None: some could be,
    or the run compared in full by design)."""

    @property
    def balanced(self) -> bool:
        """Every input query ended as a result, a dead letter, or (with `--previous`) an
        unchanged result that was not written again."""
        c = self.counts
        return c[counters.QUERIES] == (c[counters.RESULTS] + c[counters.DEAD_LETTERS]
                                       + c.get(counters.EVIDENCE_UNCHANGED, 0))

    @property
    def hnsw_recall(self) -> float | None:
        """The HNSW search's recall@k on the queries it audited (None when none was)."""
        expected = self.counts.get(events.HNSW_EXPECTED, 0)
        return self.counts.get(events.HNSW_FOUND, 0) / expected if expected else None

    @property
    def hnsw_continued_recall(self) -> float | None:
        """A continued HNSW night's recall@retrieve-k on the continued lists it audited (see
        `pipeline.run.continued_audit`; None when none was)."""
        expected = self.counts.get(events.HNSW_CONTINUED_EXPECTED, 0)
        return self.counts.get(events.HNSW_CONTINUED_FOUND, 0) / expected if expected else None

    def hnsw_recalls(self) -> dict[str, float | int]:
        """Both audited recalls and what they were audited on, as the manifest records them
        (empty when nothing was audited)."""
        c = self.counts
        recalls: dict[str, float | int] = {}
        if self.hnsw_recall is not None:
            recalls |= {"graph": round(self.hnsw_recall, 6),
                        "graph_queries_audited": c.get(events.HNSW_AUDITED, 0)}
        if self.hnsw_continued_recall is not None:
            recalls |= {"continued": round(self.hnsw_continued_recall, 6),
                        "continued_lists_audited": c.get(events.HNSW_CONTINUED_AUDITED, 0)}
        return recalls

    def to_dict(self) -> dict[str, object]:
        """The summary as `run --summary FILE` writes it."""
        renamed = {old: self.counts[new] for new, old in events.RENAMED.items()
                   if new in self.counts}
        return {"counts": self.counts | renamed, "seconds": round(self.seconds, 3),
                "balanced": self.balanced, "from_metrics": self.from_metrics}

    def lines(self) -> list[str]:
        c = self.counts
        rate = c[counters.QUERIES] / self.seconds if self.seconds > 0 else 0.0
        # "balanced" says only that every input is accounted for, not that none failed
        verdict = "balanced" if self.balanced else "MISMATCH"
        return [
            *(f"{name:>22}: {c.get(name, 'n/a (the runner reports no metrics)')}"
              for name in self.reported),
            *self._hnsw_lines(),
            f"{'seconds':>22}: {self.seconds:.2f}",
            f"{'queries/s':>22}: {rate:.1f}",
            *([f"{'answered in full':>22}: {self.answered_in_full}"]
              if self.answered_in_full else []),
            self._balance(verdict),
        ]

    def _hnsw_lines(self) -> list[str]:
        c, recall = self.counts, self.hnsw_recall
        lines = [] if recall is None else [
            f"{'hnsw recall@k':>22}: {recall:.3f} (audited on "
            f"{c.get(events.HNSW_AUDITED, 0)} queries)"]
        continued = self.hnsw_continued_recall
        if continued is not None:
            lines.append(f"{'hnsw recall@k continued':>22}: {continued:.3f} (audited on "
                         f"{c.get(events.HNSW_CONTINUED_AUDITED, 0)} continued lists, "
                         "against exact search)")
        # a calibration that chose exact search is said even when no query was audited: else
        # nobody learns that the graph was not used
        if c.get(events.HNSW_SETTLED):
            ef = c.get(events.HNSW_EF, 0) / c[events.HNSW_SETTLED]
            exact = c.get(events.HNSW_EXACT, 0)
            lines.append(f"{'hnsw ef-search (auto)':>22}: {ef:.0f}" + (
                f"; exact search instead in {exact} of {c[events.HNSW_SETTLED]} calibrations"
                if exact else ""))
        return lines

    def _balance(self, verdict: str) -> str:
        c = self.counts
        unchanged = c.get(counters.EVIDENCE_UNCHANGED, 0)
        if not unchanged:
            return (f"inputs = outputs + dead letters: {c[counters.QUERIES]} = "
                    f"{c[counters.RESULTS]} + {c[counters.DEAD_LETTERS]} ({verdict})")
        return (f"inputs = outputs + unchanged + dead letters: {c[counters.QUERIES]} = "
                f"{c[counters.RESULTS]} + {unchanged} + {c[counters.DEAD_LETTERS]} ({verdict})")


def summarize(result: PipelineResult, seconds: float,
              from_outputs: Callable[[], dict[str, int]],
              backend_counters: tuple[str, ...] = (), compared: bool = False) -> RunSummary:
    """The run's summary from its counters (`REPORTED`, then `backend_counters`; those of
    `COMPARED` only for a run `compared` with `--previous`); a runner without metrics (or with
    none of ours) gets the counts `from_outputs` reads off the job's files, and the others are
    n/a."""
    reported = tuple(name for name in REPORTED if compared or name not in COMPARED
                     ) + backend_counters
    totals = counters.totals(result)
    counted = {} if counters.QUERIES in totals else from_outputs()
    if not counted.get(counters.QUERIES):
        return RunSummary(dict.fromkeys(reported, 0) | totals, seconds, reported=reported)
    _log.warning("the runner reported no metrics; the summary counts the job's files")
    return RunSummary(counted, seconds, from_metrics=False, reported=reported)
