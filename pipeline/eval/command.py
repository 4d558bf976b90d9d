"""The `eval` and `corpus` commands, given parsed arguments."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from core.errors import ConfigError
from pipeline.config.loader import load_settings
from pipeline.eval.plot import check_plot_path, plot_curves
from pipeline.eval.qrels import read_qrels
from pipeline.eval.report import eval_table, funnel_table
from pipeline.eval.runner import EvalRow, evaluate
from pipeline.eval.stdlib_corpus import check_corpus_folder, write_corpus
from pipeline.io.json_file import write_json_file, write_text_file
from pipeline.io.local_paths import check_job_files


def eval_command(args: argparse.Namespace, beam_args: Sequence[str],
                 environ: Mapping[str, str]) -> int:
    if args.k < 1:
        raise ConfigError("--k", args.k, "must be at least 1 (the evidence blocks scored)")
    check_job_files(
        [("--queries", args.queries), ("--qrels", args.qrels), ("--config", args.config),
         *(("--compare", path) for path in args.compare or [])],
        [("--json", args.json), ("--losses", args.losses), ("--plot", args.plot)],
        input_folders={"--docs": args.docs})
    if args.plot:
        check_plot_path(args.plot)
    qrels = read_qrels(args.qrels)
    paths = [args.config, *(args.compare or [])]
    configs = [(Path(p).stem if p else "defaults", load_settings(p, environ, args.overrides))
               for p in paths]
    rows = evaluate(configs, queries=args.queries, qrels=qrels, k=args.k, docs=args.docs,
                    beam_args=beam_args)
    print(eval_table(rows, args.k))
    print()
    print(funnel_table(rows, qrels.level))
    if args.losses:
        write_losses(rows, args.losses)
        print(f"losses: {args.losses}")
    if args.plot:
        plot_curves(rows, args.plot, f"{Path(args.queries).name}: {qrels.level}-level "
                                     f"judgments ({Path(args.qrels).name})")
        print(f"plot: {args.plot}")
    if args.json:
        write_json_file(args.json, [r.to_dict() for r in rows])
        print(f"json: {args.json}")
    return 0


def write_losses(rows: Sequence[EvalRow], path: str) -> None:
    """One JSON line per relevant item a config lost: the config, the query, the item, the stage
    that dropped it and its best rank per retriever."""
    write_text_file(path, "".join(
        json.dumps({"config": row.label, **loss.to_dict()}) + "\n"
        for row in rows for loss in (row.funnel.losses if row.funnel else [])))


def corpus_command(args: argparse.Namespace) -> int:
    check_corpus_folder(args.out)
    written = write_corpus(Path(args.out))
    print(f"wrote {written} standard-library module documents into {args.out}")
    return 0
