"""`eval`'s printed tables: the scores with each config's test against the first, and the loss
funnels."""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.eval.funnel import every_stage_name
from pipeline.eval.runner import EvalRow
from pipeline.eval.significance import SIGNIFICANT


def eval_table(rows: Sequence[EvalRow], k: int) -> str:
    """One row per config; `p` is the paired test of its nDCG@k against the first config's,
    marked `*` below `SIGNIFICANT`, and `+/-/=` the queries it improved, worsened and tied."""
    width = _label_width(rows)
    header = (f"{'config':<{width}} {f'nDCG@{k}':>8} {f'Recall@{k}':>9} {f'MRR@{k}':>7} "
              f"{'p':>8} {'+/-/=':>9} {'docs/q':>7} {'top-doc share':>13} {'answered':>9}")
    lines = [header, "-" * len(header)]
    for row in rows:
        s, test = row.scores, row.test
        p = f"{test.p_value:.3f}{'*' if test.significant else ' '}" if test else "-"
        moved = f"{test.improved}/{test.worsened}/{test.tied}" if test else "-"
        lines.append(f"{row.label:<{width}} {s.ndcg:>8.3f} {s.recall:>9.3f} {s.mrr:>7.3f} "
                     f"{p:>8} {moved:>9} {s.distinct_documents:>7.2f} "
                     f"{s.top_document_share:>13.2f} {f'{s.answered}/{s.judged}':>9}")
    if len(rows) > 1:
        lines.append(f"p: paired randomization test of nDCG@{k} against {rows[0].label} "
                     f"(two-sided, 10,000 sign flips, fixed seed); * p < {SIGNIFICANT}; "
                     "+/-/=: queries better, worse, equal")
    return "\n".join(lines)


def funnel_table(rows: Sequence[EvalRow], level: str) -> str:
    """Per config, the judged relevant items and how many survive each stage (`-`: the stage
    does not run in that config; a stage that runs in none has no column)."""
    runs = {name for row in rows if row.funnel for name in row.funnel.survivors}
    names, width = [n for n in every_stage_name() if n in runs], _label_width(rows)
    header = f"{'config':<{width}} {'relevant':>8} " + " ".join(f"{n:>10}" for n in names)
    lines = [f"loss funnel: relevant {level}s that survive each stage", header,
             "-" * len(header)]
    for row in rows:
        if row.funnel is None:
            continue
        counts = row.funnel.survivors
        lines.append(f"{row.label:<{width}} {row.funnel.relevant:>8} "
                     + " ".join(f"{counts.get(n, '-'):>10}" for n in names))
    return "\n".join(lines)


def _label_width(rows: Sequence[EvalRow]) -> int:
    return max([24, *(len(row.label) for row in rows)])
