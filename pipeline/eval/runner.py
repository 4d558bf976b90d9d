"""`rag-evidence eval`: the same queries through each config, scored against judgments, each
config tested against the first (see `significance`) and its losses traced (see `funnel`)."""

from __future__ import annotations

import dataclasses
import functools
import logging
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.config.backends import backend_of, embedder_factory_for, port_factory_for
from pipeline.config.settings import Settings
from pipeline.eval.funnel import Funnel, loss_funnel
from pipeline.eval.metrics import Scores, score_run
from pipeline.eval.qrels import Qrels, read_qrels
from pipeline.eval.significance import PairedTest, paired_randomization
from pipeline.ingest.job import run_index
from pipeline.io.query_source import query_source
from pipeline.io.result_sink import read_results
from pipeline.run.job import run_job
from pipeline.run.query_parse import parse_query_line
from pipeline.run.trace import Traced, trace
from stages.models import DeadLetter, Query
from stages.support import counters

_log = logging.getLogger(__name__)
CURVE_DEPTH = 20
TRACE_BATCH = 256
"""Judged queries traced per port call, for the loss funnel."""


@dataclass(frozen=True)
class EvalRow:
    """One config's scores, with how long its run took, how many queries it dead-lettered,
    its test against the first config (None for the first) and its loss funnel."""

    label: str
    scores: Scores
    seconds: float
    dead_letters: int
    curve: dict[int, Scores] = field(default_factory=dict)
    """The scores at each cut-off from 1 to `CURVE_DEPTH` (for `eval --plot`)."""
    test: PairedTest | None = None
    funnel: Funnel | None = None

    def to_dict(self) -> dict[str, Any]:
        scores = {k: v for k, v in dataclasses.asdict(self.scores).items()
                  if k != "ndcg_by_query"}
        tested = ({"p_value": round(self.test.p_value, 4), "improved": self.test.improved,
                   "worsened": self.test.worsened, "tied": self.test.tied}
                  if self.test else {})
        funnel = {"funnel": self.funnel.to_dict()} if self.funnel else {}
        return {"config": self.label, **scores, **tested, **funnel,
                "seconds": round(self.seconds, 2), "dead_letters": self.dead_letters}


def evaluate(configs: Sequence[tuple[str, Settings]], *, queries: str, qrels: str | Qrels,
             k: int = 10,
             docs: str | None = None, beam_args: Sequence[str] = ()) -> list[EvalRow]:
    """Runs the pipeline once per config on `queries`, scores each run at `k`, tests each
    config's nDCG@k against the first's, and traces the judged queries for the loss funnel.

    With `docs`, each config's store is first built from that folder (once per distinct store
    and embedder), so that every config is measured on the same corpus.
    """
    judgments = qrels if isinstance(qrels, Qrels) else read_qrels(qrels)
    built: set[str] = set()
    rows: list[EvalRow] = []
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
        test = (paired_randomization(rows[0].scores.ndcg_by_query, scores.ndcg_by_query)
                if rows else None)
        funnel = loss_funnel(_traced(settings, queries, judgments), judgments, settings.rag)
        rows.append(EvalRow(label, scores, summary.seconds,
                            summary.counts[counters.DEAD_LETTERS], curve, test, funnel))
    return rows


def _traced(settings: Settings, queries: str, qrels: Qrels) -> dict[str, Traced | DeadLetter]:
    """The judged queries of the file, each through the run's stages in this process."""
    judged: dict[str, Query] = {}
    for number, line in query_source(queries).records():
        parsed = parse_query_line(number, line)
        if isinstance(parsed, Query) and parsed.id in qrels.judgments:
            judged.setdefault(parsed.id, parsed)
    asked = list(judged.values())
    embedder = functools.cache(embedder_factory_for(settings))  # built once, when needed
    port = port_factory_for(settings)()
    try:
        traced: dict[str, Traced | DeadLetter] = {}
        for start in range(0, len(asked), TRACE_BATCH):
            batch = asked[start:start + TRACE_BATCH]
            traced |= zip((q.id for q in batch), trace(settings, batch, port, embedder),
                          strict=True)
        return traced
    finally:
        port.close()


def _store_identity(settings: Settings) -> str:
    where = backend_of(settings).identity(settings)
    return f"{where}|{settings.embedder.model_dump_json()}|{settings.chunking.model_dump_json()}"
