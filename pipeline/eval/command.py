"""The `eval` and `corpus` commands, given parsed arguments."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from pipeline.config.loader import load_settings
from pipeline.eval.plot import plot_curves
from pipeline.eval.qrels import read_qrels
from pipeline.eval.runner import eval_table, evaluate
from pipeline.eval.stdlib_corpus import write_corpus
from pipeline.io.local_paths import check_output_file


def eval_command(args: argparse.Namespace, beam_args: Sequence[str],
                 environ: Mapping[str, str]) -> int:
    if args.plot:
        check_output_file("--plot", args.plot)
    paths = [args.config, *(args.compare or [])]
    configs = [(Path(p).stem if p else "defaults", load_settings(p, environ, args.overrides))
               for p in paths]
    rows = evaluate(configs, queries=args.queries, qrels=args.qrels, k=args.k, docs=args.docs,
                    beam_args=beam_args)
    print(eval_table(rows, args.k))
    if args.plot:
        level = read_qrels(args.qrels).level
        plot_curves(rows, args.plot, f"{Path(args.queries).name}: {level}-level judgments "
                                     f"({Path(args.qrels).name})")
        print(f"plot: {args.plot}")
    if args.json:
        Path(args.json).write_text(json.dumps([r.to_dict() for r in rows], indent=1) + "\n",
                                   encoding="utf-8")
    return 0


def corpus_command(args: argparse.Namespace) -> int:
    written = write_corpus(Path(args.out))
    print(f"wrote {written} standard-library module documents into {args.out}")
    return 0
