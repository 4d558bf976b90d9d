"""`rag-evidence eval`: the same queries through each config, scored against judgments."""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pipeline.config.backends import backend_of
from pipeline.config.settings import Settings
from pipeline.eval.metrics import Scores, score_run
from pipeline.eval.qrels import read_qrels
from pipeline.ingest.job import run_index
from pipeline.io.result_sink import read_results
from pipeline.run.job import run_job
from stages.support import counters

_log = logging.getLogger(__name__)
CURVE_DEPTH = 20


@dataclass(frozen=True)
class EvalRow:
    """One config's scores, with how long its run took and how many queries it dead-lettered."""

    label: str
    scores: Scores
    seconds: float
    dead_letters: int
    curve: dict[int, Scores] = field(default_factory=dict)
    """The scores at each cut-off from 1 to `CURVE_DEPTH` (for `eval --plot`)."""

    def to_dict(self) -> dict[str, Any]:
        return {"config": self.label, **asdict(self.scores), "seconds": round(self.seconds, 2),
                "dead_letters": self.dead_letters}


def evaluate(configs: Sequence[tuple[str, Settings]], *, queries: str, qrels: str, k: int = 10,
             docs: str | None = None, beam_args: Sequence[str] = ()) -> list[EvalRow]:
    """Runs the pipeline once per config on `queries` and scores each run at `k`.

    With `docs`, each config's store is first built from that folder (once per distinct store
    and embedder), so that every config is measured on the same corpus.
    """
    judgments = read_qrels(qrels)
    built: set[str] = set()
    rows = []
    for label, settings in configs:
        store = _store_identity(settings)
        if docs is not None and store not in built:
            _log.info("eval: indexing %s for %s", docs, label)
            run_index(settings, docs=docs, beam_args=beam_args)
            built.add(store)
        with tempfile.TemporaryDirectory(prefix="rag-evidence-eval-") as scratch:
            out = Path(scratch) / "evidence.jsonl"
            summary = run_job(settings, queries_path=queries, out_path=str(out),
                              dead_letter_path=str(Path(scratch) / "dead.jsonl"),
                              beam_args=beam_args)
            results = {r.query_id: r.evidence for r in read_results(str(out))}
        curve = {cut: score_run(results, judgments, cut) for cut in range(1, CURVE_DEPTH + 1)}
        scores = curve[k] if k in curve else score_run(results, judgments, k)
        rows.append(EvalRow(label, scores, summary.seconds,
                            summary.counts[counters.DEAD_LETTERS], curve))
    return rows


def eval_table(rows: Sequence[EvalRow], k: int) -> str:
    """A text table, one row per config."""
    header = (f"{'config':<24} {f'nDCG@{k}':>8} {f'Recall@{k}':>9} {f'MRR@{k}':>7} "
              f"{'docs/q':>7} {'top-doc share':>13} {'answered':>9}")
    lines = [header, "-" * len(header)]
    for row in rows:
        s = row.scores
        lines.append(f"{row.label:<24} {s.ndcg:>8.3f} {s.recall:>9.3f} {s.mrr:>7.3f} "
                     f"{s.distinct_documents:>7.2f} {s.top_document_share:>13.2f} "
                     f"{f'{s.answered}/{s.judged}':>9}")
    return "\n".join(lines)


def _store_identity(settings: Settings) -> str:
    where = backend_of(settings).identity(settings)
    return f"{where}|{settings.embedder.model_dump_json()}|{settings.chunking.model_dump_json()}"

