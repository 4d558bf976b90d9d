"""What `index` and `run` do, given parsed arguments; the CLI owns the terminal."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence

from core.errors import ConfigError
from pipeline.config.backends import backend_of
from pipeline.config.loader import load_settings
from pipeline.config.settings import Settings
from pipeline.ingest.index_summary import IndexSummary
from pipeline.ingest.job import run_index
from pipeline.io.json_file import write_json_file
from pipeline.io.run_io import RunIO
from pipeline.run.dead_letter_limit import OPTION, DeadLetterLimit
from pipeline.run.job import run
from stages.support.counters import DEAD_LETTERS, QUERIES


def _settings(args: argparse.Namespace, environ: Mapping[str, str]) -> Settings:
    wall_time = getattr(args, "max_wall_time", None)
    if wall_time is not None and not wall_time.strip():  # YAML would read it as unset
        raise ConfigError("job.max-wall-time", wall_time, "--max-wall-time must be a duration: "
                          "seconds, or a number with s, m or h (90m, 2h)")
    flags = [] if wall_time is None else [f"job.max-wall-time={wall_time}"]
    return load_settings(args.config, environ, [*args.overrides, *flags])


def index_command(args: argparse.Namespace, beam_args: Sequence[str],
                  environ: Mapping[str, str]) -> int:
    settings = _settings(args, environ)
    summary = run_index(settings, chunks=args.chunks, docs=args.docs,
                        failures_path=args.failures, beam_args=beam_args,
                        follow_symlinks=args.follow_symlinks, cleanup=args.cleanup,
                        rebuild=args.rebuild,
                        summary_path=args.summary, config_path=args.config)
    if args.summary:
        described = {"store": backend_of(settings).display_name(settings),
                     "cleanup": args.cleanup,
                     "rebuild": args.rebuild, **summary.to_dict()}
        write_json_file(args.summary, described)
    print(index_report(settings, summary, args.failures))
    return 0 if summary.failed == 0 else 1


def index_report(settings: Settings, summary: IndexSummary, failures: str | None = None) -> str:
    """What an index did, where, with which embedder: the counts of `--summary` in words."""
    where = backend_of(settings).display_name(settings) + (" (created)" if summary.created else "")
    embedder = summary.embedder.describe() if summary.embedder else "vectors from the chunk file"
    return (f"indexed into {where} ({embedder}): {summary.added} added, {summary.updated} "
            f"updated, {summary.unchanged} unchanged, {summary.deleted} deleted, "
            f"{summary.failed} failed"
            + (f" (see {failures})" if failures and summary.failed else "")
            + f"; {summary.texts_embedded} texts embedded; {summary.seconds:.1f} s"
            + (f"\n{summary.kept_after_failure} stale chunks kept: a failed read could have "
               "held them (they are deleted once the input reads whole)"
               if summary.kept_after_failure else "")
            + (f"\n{summary.note}" if summary.note else ""))


def run_command(args: argparse.Namespace, beam_args: Sequence[str],
                environ: Mapping[str, str]) -> int:
    settings = _settings(args, environ)
    limit = (None if args.max_dead_letters is None
             else DeadLetterLimit.parse(args.max_dead_letters))
    io = RunIO.parse(args.queries, args.out, args.dead_letter, settings.search.elasticsearch,
                     args.previous, args.snapshot, args.summary, args.config)
    summary = run(settings, io, beam_args=beam_args)
    if args.summary:
        write_json_file(args.summary, summary.to_dict())
    print("\n".join(summary.lines()))
    queries, dead = (summary.counts.get(name, 0) for name in (QUERIES, DEAD_LETTERS))
    failed = f" ({dead} of {queries} queries failed)" if dead else ""
    print(f"results: {args.out}\nmanifest: {io.manifest}\n"
          f"dead letters: {io.dead_letters}{failed}")
    if limit is not None and limit.exceeded(dead, queries):
        print(f"rag-evidence: {dead} dead letters of {queries} queries exceed "
              f"{OPTION} {limit}: the results are written, the run exits 1; see "
              f"{io.dead_letters}", file=sys.stderr)
        return 1
    return 0 if summary.balanced else 1
