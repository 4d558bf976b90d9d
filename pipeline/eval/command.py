"""The `eval` and `corpus` commands, given parsed arguments."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from pipeline.config.loader import load_settings
from pipeline.eval.plot import plot_curves
from pipeline.eval.qrels import read_qrels
from pipeline.eval.report import eval_table, funnel_table
from pipeline.eval.runner import EvalRow, evaluate
from pipeline.eval.stdlib_corpus import write_corpus
from pipeline.io.local_paths import check_output_file


def eval_command(args: argparse.Namespace, beam_args: Sequence[str],
                 environ: Mapping[str, str]) -> int:
    for option, path in (("--plot", args.plot), ("--losses", args.losses)):
        if path:
            check_output_file(option, path)
    paths = [args.config, *(args.compare or [])]
    configs = [(Path(p).stem if p else "defaults", load_settings(p, environ, args.overrides))
               for p in paths]
    rows = evaluate(configs, queries=args.queries, qrels=args.qrels, k=args.k, docs=args.docs,
                    beam_args=beam_args)
    level = read_qrels(args.qrels).level
    print(eval_table(rows, args.k))
    print()
    print(funnel_table(rows, level))
    if args.losses:
        write_losses(rows, args.losses)
        print(f"losses: {args.losses}")
    if args.plot:
        plot_curves(rows, args.plot, f"{Path(args.queries).name}: {level}-level judgments "
                                     f"({Path(args.qrels).name})")
        print(f"plot: {args.plot}")
    if args.json:
        Path(args.json).write_text(json.dumps([r.to_dict() for r in rows], indent=1) + "\n",
                                   encoding="utf-8")
    return 0


def write_losses(rows: Sequence[EvalRow], path: str) -> None:
    """One JSON line per relevant item a config lost: the config, the query, the item, the stage
    that dropped it and its best rank per retriever."""
    with open(path, "w", encoding="utf-8") as out:
        for row in rows:
            for loss in row.funnel.losses if row.funnel else []:
                out.write(json.dumps({"config": row.label, **loss.to_dict()}) + "\n")


def corpus_command(args: argparse.Namespace) -> int:
    written = write_corpus(Path(args.out))
    print(f"wrote {written} standard-library module documents into {args.out}")
    return 0
