"""What each CLI command does, given parsed arguments; the CLI owns the terminal."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from pipeline.config.loader import load_settings
from pipeline.config.settings import Settings
from pipeline.ingest.job import IndexSummary, run_index
from pipeline.io.local_paths import check_distinct, check_output_file
from pipeline.io.run_io import RunIO
from pipeline.run.job import run


def _settings(args: argparse.Namespace, environ: Mapping[str, str]) -> Settings:
    return load_settings(args.config, environ, args.overrides)


def index_command(args: argparse.Namespace, beam_args: Sequence[str],
                  environ: Mapping[str, str]) -> int:
    settings = _settings(args, environ)
    summary = run_index(settings, chunks=args.chunks, docs=args.docs,
                        failures_path=args.failures, beam_args=beam_args,
                        follow_symlinks=args.follow_symlinks)
    print(index_report(settings, summary, args.failures))
    return 0 if summary.failed == 0 else 1


def index_report(settings: Settings, summary: IndexSummary, failures: str | None = None) -> str:
    """One line: how many chunks went where, with which embedder, how many failed."""
    if settings.search.backend == "elasticsearch":
        index = settings.search.elasticsearch.index
        where = f"Elasticsearch index {index}" + (" (created)" if summary.created else "")
    else:
        where = settings.search.embedded.path
    embedder = summary.embedder.describe() if summary.embedder else "vectors from the chunk file"
    return (f"indexed {summary.indexed} chunks into {where} ({embedder}); {summary.failed} "
            "failed" + (f" (see {failures})" if failures and summary.failed else "")
            + (f"\n{summary.note}" if summary.note else ""))


def run_command(args: argparse.Namespace, beam_args: Sequence[str],
                environ: Mapping[str, str]) -> int:
    settings = _settings(args, environ)
    io = RunIO.parse(args.queries, args.out, args.dead_letter, settings.search.elasticsearch,
                     args.previous)
    if args.summary:
        check_output_file("--summary", args.summary)
        check_distinct({"--queries": args.queries, "--out": args.out,
                        "--dead-letter": io.dead_letters, "--summary": args.summary})
    summary = run(settings, io, beam_args=beam_args)
    if args.summary:
        Path(args.summary).write_text(json.dumps(summary.to_dict(), indent=1) + "\n",
                                      encoding="utf-8")
    print("\n".join(summary.lines()))
    print(f"results: {args.out}\ndead letters: {io.dead_letters}\n"
          f"manifest: {io.manifest}")
    return 0 if summary.balanced else 1
